package holistic

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/holistic-eval/holistic/clients/go/gen/holistic/v1"
)

// Line is one non-blank line of a predictions file: its 1-based number and the prediction, or why it
// is not one.
type Line struct {
	Number     int
	Prediction *pb.Prediction
	Err        string
}

// ReadPredictions reads JSON Lines of holistic.v1.Prediction in protobuf's canonical JSON mapping (the
// files the Python and Node clients read and write); a path ending in .gz is read gunzipped. A line
// that does not parse is kept with its error, so a report can name it by number.
func ReadPredictions(path string) ([]Line, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		defer gz.Close()
		r = gz
	}
	return ParsePredictions(r)
}

// ParsePredictions is ReadPredictions over any reader.
func ParsePredictions(r io.Reader) ([]Line, error) {
	var lines []Line
	br := bufio.NewReader(r)
	for number := 1; ; number++ {
		raw, err := br.ReadBytes('\n')
		if len(raw) > 0 && strings.TrimSpace(string(raw)) != "" {
			lines = append(lines, parseLine(number, raw))
		}
		if err == io.EOF {
			return lines, nil
		}
		if err != nil {
			return lines, err
		}
	}
}

func parseLine(number int, raw []byte) Line {
	if !utf8.Valid(raw) {
		return Line{Number: number, Err: "not valid UTF-8"}
	}
	p := &pb.Prediction{}
	if err := protojson.Unmarshal(raw, p); err != nil {
		return Line{Number: number, Err: "not a holistic.v1.Prediction: " + err.Error()}
	}
	return Line{Number: number, Prediction: p}
}
