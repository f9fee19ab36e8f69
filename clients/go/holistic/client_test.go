package holistic

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/holistic-eval/holistic/clients/go/gen/holistic/v1"
)

func prediction(id string) *pb.Prediction {
	return &pb.Prediction{Id: id, Scenario: "mmlu", Task: pb.Task_TASK_MULTIPLE_CHOICE, Output: "Paris", References: []string{"Paris"}}
}

func TestSubmitUsesTheContentIDAndTheModelField(t *testing.T) {
	f := &fakeGateway{token: "s3cret"}
	c, _ := dial(t, serve(t, f), Options{Token: "s3cret"})
	batch := []*pb.Prediction{prediction("p1"), prediction("p2")}
	reply, err := c.Submit(context.Background(), "m", batch)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := ContentBatchID("m", batch)
	got := f.submitted()
	if len(got) != 1 || got[0].BatchId != want || got[0].Model != "m" || reply.AcceptedCount != 2 || reply.BatchId != want {
		t.Fatalf("sent %v, answered %v; want batch id %s", got, reply, want)
	}
	// A given batch id is sent as is.
	if _, err := c.SubmitBatch(context.Background(), &pb.SubmitPredictionsRequest{BatchId: "mine", Predictions: batch}); err != nil {
		t.Fatal(err)
	}
	if id := f.submitted()[1].BatchId; id != "mine" {
		t.Fatalf("batch id %q, want mine", id)
	}
}

func TestAWrongTokenIsUnauthenticatedAndNotRetried(t *testing.T) {
	f := &fakeGateway{token: "s3cret"}
	c, s := dial(t, serve(t, f), Options{Token: "nope"})
	_, err := c.ListModels(context.Background())
	var e *Error
	if !errors.As(err, &e) || e.Code != codes.Unauthenticated || e.CodeName() != "UNAUTHENTICATED" || len(s.delays) != 0 {
		t.Fatalf("err %v, waits %v; want UNAUTHENTICATED at once", err, s.delays)
	}
}

func retryInfo(t *testing.T, delay time.Duration) error {
	t.Helper()
	st, err := status.New(codes.ResourceExhausted, "backlog over its cap").
		WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(delay)})
	if err != nil {
		t.Fatal(err)
	}
	return st.Err()
}

func TestResourceExhaustedWaitsExactlyTheServersRetryInfoWithTheSameBatchID(t *testing.T) {
	f := &fakeGateway{}
	f.onSubmit = func(n int, req *pb.SubmitPredictionsRequest) (*pb.SubmitPredictionsResponse, error) {
		if n <= 2 {
			return nil, retryInfo(t, 1500*time.Millisecond)
		}
		return &pb.SubmitPredictionsResponse{BatchId: req.BatchId, AcceptedCount: 1}, nil
	}
	var retried []int
	c, s := dial(t, serve(t, f), Options{OnRetry: func(attempt int, _ time.Duration, err error) {
		if e, ok := err.(*Error); !ok || e.Code != codes.ResourceExhausted {
			t.Errorf("OnRetry got %v", err)
		}
		retried = append(retried, attempt)
	}})
	if _, err := c.Submit(context.Background(), "m", []*pb.Prediction{prediction("p1")}); err != nil {
		t.Fatal(err)
	}
	want, _ := ContentBatchID("m", []*pb.Prediction{prediction("p1")})
	sent := f.submitted()
	if len(sent) != 3 || len(s.delays) != 2 || s.delays[0] != 1500*time.Millisecond || s.delays[1] != 1500*time.Millisecond {
		t.Fatalf("%d attempts, waits %v; want 3 attempts after two waits of 1.5s", len(sent), s.delays)
	}
	for _, r := range sent {
		if r.BatchId != want {
			t.Fatalf("retry sent batch id %q, want %q", r.BatchId, want)
		}
	}
	if len(retried) != 2 || retried[0] != 1 || retried[1] != 2 {
		t.Fatalf("OnRetry saw attempts %v", retried)
	}
}

func TestResourceExhaustedWithoutRetryInfoIsNotRetried(t *testing.T) {
	f := &fakeGateway{onSubmit: func(int, *pb.SubmitPredictionsRequest) (*pb.SubmitPredictionsResponse, error) {
		return nil, status.Error(codes.ResourceExhausted, "message larger than max")
	}}
	c, s := dial(t, serve(t, f), Options{})
	_, err := c.Submit(context.Background(), "m", []*pb.Prediction{prediction("p1")})
	if err == nil || len(f.submitted()) != 1 || len(s.delays) != 0 {
		t.Fatalf("err %v after %d attempts", err, len(f.submitted()))
	}
	if e, ok := err.(*Error); !ok || e.Code != codes.ResourceExhausted || e.Message != "message larger than max" {
		t.Fatalf("err %#v", err)
	}
}

func TestUnavailableBacksOffExponentiallyWithJitterUpToMaxAttempts(t *testing.T) {
	f := &fakeGateway{onSubmit: func(int, *pb.SubmitPredictionsRequest) (*pb.SubmitPredictionsResponse, error) {
		return nil, status.Error(codes.Unavailable, "redis unreachable")
	}}
	c, s := dial(t, serve(t, f), Options{MaxAttempts: 10})
	_, err := c.Submit(context.Background(), "m", []*pb.Prediction{prediction("p1")})
	if e, ok := err.(*Error); !ok || e.Code != codes.Unavailable || e.Error() != "UNAVAILABLE: redis unreachable" {
		t.Fatalf("err %v", err)
	}
	if len(f.submitted()) != 10 || len(s.delays) != 9 {
		t.Fatalf("%d attempts, %d waits; want 10 and 9", len(f.submitted()), len(s.delays))
	}
	// Attempt n waits min(10 s, 100 ms * 2^(n-1)) times a jitter in [0.5, 1).
	for i, d := range s.delays {
		base := 100 * time.Millisecond << uint(i)
		if base > 10*time.Second {
			base = 10 * time.Second
		}
		if d < base/2 || d >= base {
			t.Fatalf("wait %d is %v, want in [%v, %v)", i+1, d, base/2, base)
		}
	}
}

func TestAnUnreachableGatewayIsRetriedAsUnavailable(t *testing.T) {
	c, s := dial(t, "127.0.0.1:1", Options{MaxAttempts: 3})
	_, err := c.ListModels(context.Background())
	if e, ok := err.(*Error); !ok || e.Code != codes.Unavailable || len(s.delays) != 2 {
		t.Fatalf("err %v after waits %v", err, s.delays)
	}
}

func badRequest(t *testing.T, violations ...string) error {
	t.Helper()
	br := &errdetails.BadRequest{}
	for i := 0; i < len(violations); i += 2 {
		br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{Field: violations[i], Description: violations[i+1]})
	}
	st, err := status.New(codes.InvalidArgument, "1 invalid field(s)").WithDetails(br)
	if err != nil {
		t.Fatal(err)
	}
	return st.Err()
}

func TestInvalidArgumentDecodesTheBadRequestFieldViolations(t *testing.T) {
	f := &fakeGateway{onSubmit: func(int, *pb.SubmitPredictionsRequest) (*pb.SubmitPredictionsResponse, error) {
		return nil, badRequest(t, "predictions[0].confidence", "must be a probability in [0, 1], got 2.0")
	}}
	c, s := dial(t, serve(t, f), Options{})
	_, err := c.Submit(context.Background(), "m", []*pb.Prediction{prediction("p1")})
	violations, ok := IsInvalid(err)
	want := []FieldViolation{{"predictions[0].confidence", "must be a probability in [0, 1], got 2.0"}}
	if !ok || len(violations) != 1 || violations[0] != want[0] || len(s.delays) != 0 {
		t.Fatalf("violations %v (%v)", violations, err)
	}
	wantText := "INVALID_ARGUMENT: 1 invalid field(s)\n  predictions[0].confidence: must be a probability in [0, 1], got 2.0"
	if err.Error() != wantText {
		t.Fatalf("message %q, want %q", err.Error(), wantText)
	}
	if _, isBR := err.(*Error).Details[0].(*errdetails.BadRequest); !isBR {
		t.Fatalf("details %v", err.(*Error).Details)
	}
}

func TestGetProfileSendsTheWindow(t *testing.T) {
	f := &fakeGateway{onGet: func(req *pb.GetProfileRequest) (*pb.GetProfileResponse, error) {
		if req.Model == "ghost" {
			return nil, status.Error(codes.NotFound, "no predictions for model ghost")
		}
		return &pb.GetProfileResponse{Profile: &pb.Profile{Model: req.Model}}, nil
	}}
	c, _ := dial(t, serve(t, f), Options{})
	day, err := Preset("24h")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	for _, w := range []Window{{}, day, Range(start, start.Add(time.Hour))} {
		p, err := c.GetProfile(context.Background(), "m", w)
		if err != nil || p.GetModel() != "m" {
			t.Fatalf("profile %v, %v", p, err)
		}
	}
	gets := f.gets
	if gets[0].GetPreset() != pb.WindowPreset_WINDOW_PRESET_ALL_TIME || gets[1].GetPreset() != pb.WindowPreset_WINDOW_PRESET_LAST_DAY {
		t.Fatalf("presets %v, %v", gets[0], gets[1])
	}
	r := gets[2].GetRange()
	if !r.GetStartTime().AsTime().Equal(start) || !r.GetEndTime().AsTime().Equal(start.Add(time.Hour)) {
		t.Fatalf("range %v", r)
	}
	if _, err := Preset("2h"); err == nil || !strings.Contains(err.Error(), `unknown window "2h"`) {
		t.Fatalf("Preset(2h): %v", err)
	}
	_, err = c.GetProfile(context.Background(), "ghost", AllTime)
	if e, ok := err.(*Error); !ok || e.CodeName() != "NOT_FOUND" {
		t.Fatalf("ghost: %v", err)
	}
}

func TestWatchProfileStreamsUntilTheCallbackStops(t *testing.T) {
	f := &fakeGateway{onWatch: func(req *pb.WatchProfileRequest, stream pb.EvaluationService_WatchProfileServer) error {
		for n := uint64(1); n <= 3; n++ {
			p := &pb.Profile{Model: req.Model, Counts: &pb.Counts{WindowPredictions: n}}
			if err := stream.Send(&pb.WatchProfileResponse{Profile: p}); err != nil {
				return err
			}
		}
		<-stream.Context().Done() // as the gateway does: the stream stays open
		return nil
	}}
	c, _ := dial(t, serve(t, f), Options{})
	var seen []uint64
	err := c.WatchProfile(context.Background(), "m", AllTime, func(p *pb.Profile) error {
		seen = append(seen, p.GetCounts().GetWindowPredictions())
		if len(seen) == 3 {
			return ErrStopWatch
		}
		return nil
	})
	if err != nil || len(seen) != 3 || seen[0] != 1 || seen[2] != 3 {
		t.Fatalf("seen %v, err %v", seen, err)
	}
	// A cancelled context ends the watch without an error too; another callback error comes back as is.
	ctx, cancel := context.WithCancel(context.Background())
	err = c.WatchProfile(ctx, "m", AllTime, func(*pb.Profile) error { cancel(); return nil })
	if err != nil {
		t.Fatalf("cancelled watch: %v", err)
	}
	boom := errors.New("boom")
	if err := c.WatchProfile(context.Background(), "m", AllTime, func(*pb.Profile) error { return boom }); err != boom {
		t.Fatalf("callback error: %v", err)
	}
}

func TestWatchProfileErrorsAreDecoded(t *testing.T) {
	f := &fakeGateway{onWatch: func(*pb.WatchProfileRequest, pb.EvaluationService_WatchProfileServer) error {
		return badRequest(t, "model", "must not be empty")
	}}
	c, _ := dial(t, serve(t, f), Options{})
	err := c.WatchProfile(context.Background(), "", AllTime, func(*pb.Profile) error { return nil })
	if v, ok := IsInvalid(err); !ok || len(v) != 1 || v[0].Field != "model" {
		t.Fatalf("err %v", err)
	}
}

func TestListModels(t *testing.T) {
	f := &fakeGateway{models: []*pb.ModelSummary{{Model: "a", AcceptedPredictions: 3}, {Model: "b", AcceptedPredictions: 1}}}
	c, _ := dial(t, serve(t, f), Options{})
	models, err := c.ListModels(context.Background())
	if err != nil || len(models) != 2 || !proto.Equal(models[0], f.models[0]) || models[1].GetModel() != "b" {
		t.Fatalf("models %v, %v", models, err)
	}
}

func TestListModelsReadsEveryPage(t *testing.T) {
	f := &fakeGateway{pageSize: 2}
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		f.models = append(f.models, &pb.ModelSummary{Model: name})
	}
	c, _ := dial(t, serve(t, f), Options{})
	models, err := c.ListModels(context.Background())
	var names []string
	for _, m := range models {
		names = append(names, m.GetModel())
	}
	if err != nil || strings.Join(names, ",") != "a,b,c,d,e" {
		t.Fatalf("models %v, %v", names, err)
	}
	var tokens []string
	for _, req := range f.lists {
		tokens = append(tokens, req.GetPageToken())
	}
	if strings.Join(tokens, "|") != "|2|4" {
		t.Fatalf("page tokens sent %q", tokens)
	}
	page, err := c.ListModelsPage(context.Background(), 2, "4")
	if err != nil || len(page.GetModels()) != 1 || page.GetNextPageToken() != "" || page.GetTotalSize() != 5 {
		t.Fatalf("last page %v, %v", page, err)
	}
}

func TestDeleteModelSendsModelAndTenantAndRetriesUnavailable(t *testing.T) {
	f := &fakeGateway{token: "admin", onDelete: func(n int) error {
		if n == 1 {
			return status.Error(codes.Unavailable, "model 'm' is being deleted")
		}
		return nil
	}}
	s := &sleeps{}
	c, _ := dial(t, serve(t, f), Options{Token: "admin", Sleep: s.sleep})
	reply, err := c.DeleteModel(context.Background(), "m", "team-a")
	if err != nil || len(reply.GetRemoved()) != 1 || reply.GetRemoved()[0].GetKeyFamily() != "hl:{m:<model>}:meta" ||
		reply.GetRemoved()[0].GetCount() != 1 || len(s.delays) != 1 {
		t.Fatalf("reply %v, err %v, waits %v", reply, err, s.delays)
	}
	tenant, err := c.DeleteTenantData(context.Background(), "team-a")
	if err != nil || strings.Join(tenant.GetModels(), ",") != "x,y" {
		t.Fatalf("tenant %v, err %v", tenant, err)
	}
	want := []proto.Message{
		&pb.DeleteModelRequest{Model: "m", Tenant: "team-a"}, &pb.DeleteModelRequest{Model: "m", Tenant: "team-a"},
		&pb.DeleteTenantDataRequest{Tenant: "team-a"},
	}
	if len(f.deletes) != len(want) {
		t.Fatalf("requests %v", f.deletes)
	}
	for i := range want {
		if !proto.Equal(f.deletes[i], want[i]) {
			t.Fatalf("request %d: %v, want %v", i, f.deletes[i], want[i])
		}
	}
}

func TestCompareProfilesSendsTheQuestion(t *testing.T) {
	f := &fakeGateway{}
	c, _ := dial(t, serve(t, f), Options{})
	hour, _ := Preset("1h")
	reply, err := c.CompareProfiles(context.Background(), Compare{Model: "a", OtherModel: "b", Window: hour, Margin: 0.02,
		FailOn: []string{"toxicity"}, Multiplicity: pb.Multiplicity_MULTIPLICITY_BENJAMINI_HOCHBERG})
	if err != nil || reply.GetDecision() != pb.Decision_DECISION_NOT_ENOUGH_DATA || reply.GetNotEnoughData()[0] != "toxicity" {
		t.Fatalf("reply %v, err %v", reply, err)
	}
	want := &pb.CompareProfilesRequest{Model: "a", OtherModel: "b", Margin: 0.02, FailOn: []string{"toxicity"},
		Multiplicity: pb.Multiplicity_MULTIPLICITY_BENJAMINI_HOCHBERG,
		Window:       &pb.CompareProfilesRequest_Preset{Preset: pb.WindowPreset_WINDOW_PRESET_LAST_HOUR}}
	if len(f.compares) != 1 || !proto.Equal(f.compares[0], want) {
		t.Fatalf("requests %v, want %v", f.compares, want)
	}
}
