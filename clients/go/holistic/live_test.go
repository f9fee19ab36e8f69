//go:build live

// Against a live gateway with its workers: tests/clients/test_go_client.py starts them and runs
// `go test -tags live -run Live ./holistic/` with HOLISTIC_TARGET and HOLISTIC_TOKEN set. It asserts
// only on the families the deployment runs, so it holds against any gateway.
package holistic

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/holistic-eval/holistic/clients/go/gen/holistic/v1"
)

func livePrediction(id, output string, latency time.Duration) *pb.Prediction {
	return &pb.Prediction{
		Id: id, Scenario: "mmlu", Task: pb.Task_TASK_MULTIPLE_CHOICE, Input: "Capital of France?",
		Output: output, References: []string{"Paris"}, Timing: &pb.Timing{Latency: durationpb.New(latency)},
	}
}

func randomSuffix(t *testing.T) string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func until(t *testing.T, what string, check func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !check() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestLiveSubmitProfileModelsWatchErrors(t *testing.T) {
	target, token := os.Getenv("HOLISTIC_TARGET"), os.Getenv("HOLISTIC_TOKEN")
	if target == "" {
		t.Fatal("HOLISTIC_TARGET is not set (run through pytest tests/clients/test_go_client.py)")
	}
	ctx := context.Background()
	c, err := Dial(target, Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	model := "go-live-" + randomSuffix(t)

	batch := []*pb.Prediction{
		livePrediction("p1", "Paris", 500*time.Millisecond), livePrediction("p2", "Paris", 500*time.Millisecond),
		livePrediction("p3", "Rome", 3*time.Second),
	}
	first, err := c.Submit(ctx, model, batch)
	if err != nil {
		t.Fatal(err)
	}
	if first.AcceptedCount != 3 || first.Sequence != 1 || first.Duplicate {
		t.Fatalf("first submission: %v", first)
	}
	again, err := c.Submit(ctx, model, batch)
	if err != nil || !again.Duplicate || again.BatchId != first.BatchId {
		t.Fatalf("the same batch again: %v, %v", again, err)
	}

	var profile *pb.Profile
	until(t, "the workers to apply the batch", func() bool {
		p, err := c.GetProfile(ctx, model, mustPreset(t, "24h"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range p.GetFamilies() {
			if f.GetCount() != 3 {
				return false
			}
		}
		profile = p
		return len(p.GetFamilies()) > 0
	})
	if profile.GetCounts().GetAcceptedPredictions() != 3 {
		t.Fatalf("counts %v", profile.GetCounts())
	}
	families := map[string]bool{}
	for _, f := range profile.GetFamilies() {
		families[f.GetFamily()] = true
	}
	for _, d := range profile.GetDimensions() {
		switch {
		case d.Score != nil && (d.GetScore() < 0 || d.GetScore() > 1):
			t.Fatalf("%v: score %v outside [0, 1]", d.GetKind(), d.GetScore())
		case d.Score == nil && d.GetAbsentReason() == "":
			t.Fatalf("%v: absent without a reason", d.GetKind())
		// "Paris" twice, "Rome" once; 0.5 s, 0.5 s within the 2 s latency objective, 3 s not.
		case d.GetKind() == pb.DimensionKind_DIMENSION_KIND_ACCURACY && families["accuracy"] && d.GetScore() != 2.0/3,
			d.GetKind() == pb.DimensionKind_DIMENSION_KIND_EFFICIENCY && families["efficiency"] && d.GetScore() != 2.0/3:
			t.Fatalf("%v: %v, want 2/3", d.GetKind(), d)
		}
	}

	models, err := c.ListModels(ctx)
	listed := false
	for _, m := range models {
		listed = listed || (m.GetModel() == model && m.GetAcceptedPredictions() == 3)
	}
	if err != nil || !listed {
		t.Fatalf("%s not listed with 3 predictions: %v, %v", model, models, err)
	}

	// Watch: the profile now, then a fresh one once another batch is applied.
	var seen []uint64
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	err = c.WatchProfile(wctx, model, AllTime, func(p *pb.Profile) error {
		n := p.GetCounts().GetWindowPredictions()
		seen = append(seen, n)
		if len(seen) == 1 {
			if _, err := c.Submit(ctx, model, []*pb.Prediction{livePrediction("p4", "Paris", time.Second)}); err != nil {
				return err
			}
		}
		if n == 4 {
			return ErrStopWatch
		}
		return nil
	})
	if err != nil || len(seen) < 2 || seen[0] != 3 || seen[len(seen)-1] != 4 {
		t.Fatalf("watch saw %v, %v", seen, err)
	}

	bad := livePrediction("bad", "Paris", time.Second)
	two := 2.0
	bad.Confidence = &two
	_, err = c.Submit(ctx, model, []*pb.Prediction{bad})
	violations, invalid := IsInvalid(err)
	found := false
	for _, v := range violations {
		found = found || v.Field == "predictions[0].confidence"
	}
	if !invalid || !found || !strings.Contains(err.Error(), "predictions[0].confidence: must be a probability in [0, 1]") {
		t.Fatalf("invalid confidence: %v", err)
	}
	_, err = c.GetProfile(ctx, "ghost-"+randomSuffix(t), AllTime)
	if e, ok := err.(*Error); !ok || e.CodeName() != "NOT_FOUND" {
		t.Fatalf("unknown model: %v", err)
	}
	if token != "" {
		stranger, err := Dial(target, Options{Token: "not-the-token"})
		if err != nil {
			t.Fatal(err)
		}
		defer stranger.Close()
		_, err = stranger.ListModels(ctx)
		if e, ok := err.(*Error); !ok || e.CodeName() != "UNAUTHENTICATED" {
			t.Fatalf("a wrong token: %v", err)
		}
	}
}

func mustPreset(t *testing.T, name string) Window {
	w, err := Preset(name)
	if err != nil {
		t.Fatal(err)
	}
	return w
}
