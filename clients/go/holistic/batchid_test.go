package holistic

import (
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/holistic-eval/holistic/clients/go/gen/holistic/v1"
)

func mustPrediction(t *testing.T, canonicalJSON string) *pb.Prediction {
	t.Helper()
	p := &pb.Prediction{}
	if err := protojson.Unmarshal([]byte(canonicalJSON), p); err != nil {
		t.Fatal(err)
	}
	return p
}

// The ids below were computed by the Python client (holistic_client.client.content_batch_id) for the
// same messages: maps in other than key order, keys that prefix others, non-ASCII text, proto3
// optionals set to zero.
func TestContentBatchIDMatchesThePythonClient(t *testing.T) {
	p1 := mustPrediction(t, `{"id":"q1","scenario":"support_qa","task":"TASK_OPEN_QA","input":"Wie geht's? 🙂","output":"gut",
		"references":["gut","sehr gut"],"confidence":0.75,"correct":true,"groups":{"region":"eu","dialect":"sae","gender":"female"},
		"metadata":{"b":"2","a":"1"},"timing":{"latency":"0.840s","promptTokens":12},"producedAt":"2026-11-30T00:00:00.500Z",
		"perturbation":{"name":"typos","family":"PERTURBATION_FAMILY_ROBUSTNESS","originalId":"q0"}}`)
	p2 := mustPrediction(t, `{"id":"q2","scenario":"news","task":"TASK_SUMMARIZATION","output":"Rates rose.",
		"source":"The bank raised rates.","confidence":0}`)
	keys := mustPrediction(t, `{"id":"k","groups":{"é":"1","z":"2","10":"3","9":"4","～":"5","🙂":"6"}}`)
	prefixes := mustPrediction(t, `{"id":"k","groups":{"b":"1","ab":"2","a":"3","":"4","c":"5"},"metadata":{"age":"","age_group":"x"}}`)
	for _, c := range []struct {
		model string
		batch []*pb.Prediction
		want  string
	}{
		{"m1", []*pb.Prediction{p1, p2}, "c-31cc181924a98cd233b0b4e3ed032bc7"},
		{"", []*pb.Prediction{p2}, "c-9b1cf3978170cee18bb565a1915cf1fa"},
		{"m", []*pb.Prediction{keys}, "c-c5da5c0ebc2984a72374cf010a3cafd8"},
		{"m", []*pb.Prediction{prefixes}, "c-96e42fb7e8a0ff5ab3e1ab04ab98c017"}, // upb: "ab" before "a", "" last
	} {
		for round := 0; round < 5; round++ { // Go randomizes map iteration: the id must not depend on it
			got, err := ContentBatchID(c.model, c.batch)
			if err != nil || got != c.want {
				t.Fatalf("ContentBatchID(%q, %d predictions) = %q, %v; want %q", c.model, len(c.batch), got, err, c.want)
			}
		}
	}
}
