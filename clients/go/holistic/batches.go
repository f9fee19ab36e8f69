package holistic

import (
	"context"
	"regexp"
	"strconv"

	pb "github.com/holistic-eval/holistic/clients/go/gen/holistic/v1"
)

var predictionPath = regexp.MustCompile(`^predictions\[(\d+)\]`)

// Rejected is a line the gateway (or the parser) refused, with the field path and the reason.
type Rejected struct {
	Line   int
	Field  string
	Reason string
}

// SubmitReport counts what a file's submission did.
type SubmitReport struct {
	Accepted   int // newly accepted predictions
	Duplicates int // predictions of batches accepted earlier (same content, same id)
	Batches    int
	Rejected   []Rejected
}

// Batch is one batch SubmitLines sends: the model its predictions are for, the lines and its id.
type Batch struct {
	Model   string
	Lines   []Line
	BatchID string
}

func predictionsOf(lines []Line) []*pb.Prediction {
	out := make([]*pb.Prediction, len(lines))
	for i, l := range lines {
		out[i] = l.Prediction
	}
	return out
}

// Batches groups lines per model (a prediction's own model, else model) into batches of at most
// batchSize, in the order SubmitLines sends them, each with its content-derived id. Unparsed lines are
// left out (SubmitLines reports them).
func Batches(lines []Line, model string, batchSize int) ([]Batch, error) {
	if batchSize <= 0 {
		batchSize = 500
	}
	var out []Batch
	var order []string
	pending := map[string][]Line{}
	emit := func(key string, chunk []Line) error {
		id, err := ContentBatchID(model, predictionsOf(chunk)) // the request's model field is model
		out = append(out, Batch{Model: key, Lines: chunk, BatchID: id})
		return err
	}
	for _, line := range lines {
		if line.Prediction == nil {
			continue
		}
		key := line.Prediction.GetModel()
		if key == "" {
			key = model
		}
		if _, seen := pending[key]; !seen {
			order = append(order, key)
		}
		pending[key] = append(pending[key], line)
		if len(pending[key]) >= batchSize {
			if err := emit(key, pending[key]); err != nil {
				return nil, err
			}
			delete(pending, key) // as the other clients do: a key filled again goes after the others
			for i, k := range order {
				if k == key {
					order = append(order[:i], order[i+1:]...)
					break
				}
			}
		}
	}
	for _, key := range order {
		if err := emit(key, pending[key]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// SubmitLines submits a file's lines in per-model batches of batchSize (500 when 0) and reports the
// rejected lines by number: lines that did not parse, and predictions the gateway refused (a batch
// with refused predictions is sent again without them, under the id of its new content).
// onBatch, when set, is told how many lines each finished batch covered.
func (c *Client) SubmitLines(ctx context.Context, lines []Line, model string, batchSize int, onBatch func(int)) (*SubmitReport, error) {
	report := &SubmitReport{}
	for _, line := range lines {
		if line.Prediction == nil {
			report.Rejected = append(report.Rejected, Rejected{Line: line.Number, Reason: line.Err})
		}
	}
	batches, err := Batches(lines, model, batchSize)
	if err != nil {
		return report, err
	}
	for _, b := range batches {
		if err := c.submitChunk(ctx, b.Lines, model, report); err != nil {
			return report, err
		}
		if onBatch != nil {
			onBatch(len(b.Lines))
		}
	}
	return report, nil
}

func (c *Client) submitChunk(ctx context.Context, chunk []Line, model string, report *SubmitReport) error {
	for len(chunk) > 0 {
		reply, err := c.Submit(ctx, model, predictionsOf(chunk))
		if err == nil {
			report.Batches++
			if reply.GetDuplicate() {
				report.Duplicates += int(reply.GetAcceptedCount())
			} else {
				report.Accepted += int(reply.GetAcceptedCount())
			}
			return nil
		}
		violations, invalid := IsInvalid(err)
		if !invalid || len(violations) == 0 {
			return err
		}
		bad := map[int][]FieldViolation{}
		for _, v := range violations {
			m := predictionPath.FindStringSubmatch(v.Field)
			i := -1
			if m != nil {
				i, _ = strconv.Atoi(m[1])
			}
			if i < 0 || i >= len(chunk) { // a batch-level problem: every line of the chunk is rejected
				for _, line := range chunk {
					report.Rejected = append(report.Rejected, Rejected{line.Number, v.Field, v.Description})
				}
				return nil
			}
			bad[i] = append(bad[i], v)
		}
		kept := chunk[:0:0]
		for i, line := range chunk {
			for _, v := range bad[i] {
				report.Rejected = append(report.Rejected, Rejected{line.Number, v.Field, v.Description})
			}
			if bad[i] == nil {
				kept = append(kept, line)
			}
		}
		chunk = kept
	}
	return nil
}
