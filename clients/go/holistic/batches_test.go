package holistic

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	pb "github.com/holistic-eval/holistic/clients/go/gen/holistic/v1"
)

const fileText = `{"id": "a1", "scenario": "mmlu", "output": "Paris", "references": ["Paris"]}

{"id": "a2", "scenario": "mmlu", "confidence": "high"}
{"id": "a3", "scenario": "mmlu", "output": "Rome", "confidence": 2.0}
not json
{"id": "b1", "model": "other", "scenario": "mmlu", "output": "Paris"}
{"id": "a4", "scenario": "mmlu", "output": "Paris", "confidence": 0.9}
`

func TestReadPredictionsNumbersLinesAndKeepsWhatDoesNotParse(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "p.jsonl")
	if err := os.WriteFile(plain, []byte(fileText), 0o644); err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write([]byte(fileText))
	w.Close()
	zipped := filepath.Join(dir, "p.jsonl.gz")
	if err := os.WriteFile(zipped, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{plain, zipped} {
		lines, err := ReadPredictions(path)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range lines {
			if l.Prediction != nil {
				got = append(got, fmt.Sprintf("%d:%s", l.Number, l.Prediction.Id))
			} else {
				got = append(got, fmt.Sprintf("%d:error", l.Number))
			}
		}
		want := []string{"1:a1", "3:error", "4:a3", "5:error", "6:b1", "7:a4"}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: %v, want %v", path, got, want)
		}
		if !strings.HasPrefix(lines[1].Err, "not a holistic.v1.Prediction: ") || lines[2].Prediction.GetConfidence() != 2.0 {
			t.Fatalf("%q, %v", lines[1].Err, lines[2].Prediction)
		}
	}
	if _, err := ReadPredictions(filepath.Join(dir, "missing.jsonl")); !os.IsNotExist(err) {
		t.Fatalf("missing file: %v", err)
	}
}

func ids(lines []Line) []string {
	var out []string
	for _, l := range lines {
		out = append(out, l.Prediction.Id)
	}
	return out
}

func TestBatchesGroupPerModelInTheOrderTheOtherClientsSend(t *testing.T) {
	var lines []Line
	for i, model := range []string{"", "x", "", "", "x", "", "y"} {
		lines = append(lines, Line{Number: i + 1, Prediction: &pb.Prediction{Id: fmt.Sprint(i + 1), Model: model}})
	}
	batches, err := Batches(lines, "m", 2)
	if err != nil {
		t.Fatal(err)
	}
	// m fills first (1, 3), then x (2, 5); m's next line (4, 6) fills again; y is left over.
	want := [][]string{{"1", "3"}, {"2", "5"}, {"4", "6"}, {"7"}}
	var got [][]string
	for i, b := range batches {
		got = append(got, ids(b.Lines))
		if id, _ := ContentBatchID("m", predictionsOf(b.Lines)); b.BatchID != id || b.Model != []string{"m", "x", "m", "y"}[i] {
			t.Fatalf("batch %v: id %s model %s", got, b.BatchID, b.Model)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("batches %v, want %v", got, want)
	}
}

func TestSubmitLinesDropsRefusedPredictionsAndResendsTheRest(t *testing.T) {
	f := &fakeGateway{}
	accepted := map[string]bool{} // as the gateway dedupes: the same id again is a duplicate
	f.onSubmit = func(_ int, req *pb.SubmitPredictionsRequest) (*pb.SubmitPredictionsResponse, error) {
		// The gateway's rule for confidence, with the field path of every offender.
		var bad []string
		for i, p := range req.Predictions {
			if p.Confidence != nil && (*p.Confidence < 0 || *p.Confidence > 1) {
				bad = append(bad, fmt.Sprintf("predictions[%d].confidence", i), fmt.Sprintf("must be a probability in [0, 1], got %.1f", *p.Confidence))
			}
		}
		if len(bad) > 0 {
			return nil, badRequest(t, bad...)
		}
		duplicate := accepted[req.BatchId]
		accepted[req.BatchId] = true
		return &pb.SubmitPredictionsResponse{BatchId: req.BatchId, AcceptedCount: uint32(len(req.Predictions)), Duplicate: duplicate}, nil
	}
	c, _ := dial(t, serve(t, f), Options{})
	lines, err := ParsePredictions(strings.NewReader(fileText))
	if err != nil {
		t.Fatal(err)
	}
	var covered []int
	report, err := c.SubmitLines(context.Background(), lines, "m", 500, func(n int) { covered = append(covered, n) })
	if err != nil {
		t.Fatal(err)
	}
	if report.Accepted != 3 || report.Batches != 2 || report.Duplicates != 0 {
		t.Fatalf("report %+v", report)
	}
	var rejected []string
	for _, r := range report.Rejected {
		rejected = append(rejected, fmt.Sprintf("%d %s", r.Line, r.Field))
	}
	if want := []string{"3 ", "5 ", "4 predictions[1].confidence"}; !reflect.DeepEqual(rejected, want) {
		t.Fatalf("rejected %v, want %v", rejected, want)
	}
	sent := f.submitted()
	// m's batch (a1, a3, a4) is refused for a3, then sent again without it under its new content's id;
	// "other" is a batch of its own.
	if len(sent) != 3 || len(sent[0].Predictions) != 3 || len(sent[1].Predictions) != 2 || sent[1].Predictions[1].Id != "a4" {
		t.Fatalf("sent %v", sent)
	}
	if id, _ := ContentBatchID("m", sent[1].Predictions); sent[1].BatchId != id || sent[1].BatchId == sent[0].BatchId {
		t.Fatalf("resent under %s", sent[1].BatchId)
	}
	if !reflect.DeepEqual(covered, []int{3, 1}) {
		t.Fatalf("onBatch saw %v", covered)
	}
	// The same file again: the same ids, so every accepted prediction is a duplicate, counted as such.
	again, err := c.SubmitLines(context.Background(), lines, "m", 500, nil)
	if err != nil || again.Accepted != 0 || again.Duplicates != 3 || again.Batches != 2 || len(again.Rejected) != 3 {
		t.Fatalf("again: %+v, %v", again, err)
	}
}

func TestABatchLevelViolationRejectsEveryLineOfTheBatch(t *testing.T) {
	f := &fakeGateway{onSubmit: func(int, *pb.SubmitPredictionsRequest) (*pb.SubmitPredictionsResponse, error) {
		return nil, badRequest(t, "model", "must not be empty")
	}}
	c, _ := dial(t, serve(t, f), Options{})
	lines := []Line{{Number: 1, Prediction: prediction("p1")}, {Number: 2, Prediction: prediction("p2")}}
	report, err := c.SubmitLines(context.Background(), lines, "", 500, nil)
	if err != nil || report.Batches != 0 || len(report.Rejected) != 2 || report.Rejected[1] != (Rejected{2, "model", "must not be empty"}) {
		t.Fatalf("report %+v, %v", report, err)
	}
	if len(f.submitted()) != 1 {
		t.Fatalf("%d submissions, want 1", len(f.submitted()))
	}
}
