package holistic

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/holistic-eval/holistic/clients/go/gen/holistic/v1"
)

// fakeGateway is an in-process EvaluationService whose answers each test scripts; it records requests.
type fakeGateway struct {
	pb.UnimplementedEvaluationServiceServer
	token string

	mu       sync.Mutex
	submits  []*pb.SubmitPredictionsRequest
	gets     []*pb.GetProfileRequest
	onSubmit func(n int, req *pb.SubmitPredictionsRequest) (*pb.SubmitPredictionsResponse, error)
	onGet    func(req *pb.GetProfileRequest) (*pb.GetProfileResponse, error)
	onWatch  func(req *pb.WatchProfileRequest, stream pb.EvaluationService_WatchProfileServer) error
	models   []*pb.ModelSummary
	pageSize int                     // ListModels's page size; 0: one page
	lists    []*pb.ListModelsRequest // what ListModels was asked, in order
	deletes  []proto.Message         // the DeleteModel and DeleteTenantData requests, in order
	onDelete func(n int) error       // the error of the n-th deletion call (from 1); nil: none
	compares []*pb.CompareProfilesRequest
}

func (f *fakeGateway) authorize(ctx context.Context) error {
	if f.token == "" {
		return nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	if got := md.Get("authorization"); len(got) != 1 || got[0] != "Bearer "+f.token {
		return status.Error(codes.Unauthenticated, "missing or unknown bearer token")
	}
	return nil
}

func (f *fakeGateway) SubmitPredictions(ctx context.Context, req *pb.SubmitPredictionsRequest) (*pb.SubmitPredictionsResponse, error) {
	if err := f.authorize(ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.submits = append(f.submits, req)
	n := len(f.submits)
	f.mu.Unlock()
	if f.onSubmit != nil {
		return f.onSubmit(n, req)
	}
	return &pb.SubmitPredictionsResponse{BatchId: req.BatchId, Model: req.Model, AcceptedCount: uint32(len(req.Predictions))}, nil
}

func (f *fakeGateway) GetProfile(ctx context.Context, req *pb.GetProfileRequest) (*pb.GetProfileResponse, error) {
	if err := f.authorize(ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.gets = append(f.gets, req)
	f.mu.Unlock()
	return f.onGet(req)
}

func (f *fakeGateway) WatchProfile(req *pb.WatchProfileRequest, stream pb.EvaluationService_WatchProfileServer) error {
	if err := f.authorize(stream.Context()); err != nil {
		return err
	}
	return f.onWatch(req, stream)
}

// ListModels answers pages of f.pageSize models (all of them when 0); a token is the next index.
func (f *fakeGateway) ListModels(ctx context.Context, req *pb.ListModelsRequest) (*pb.ListModelsResponse, error) {
	if err := f.authorize(ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.lists = append(f.lists, req)
	f.mu.Unlock()
	start := 0
	if req.GetPageToken() != "" {
		start, _ = strconv.Atoi(req.GetPageToken())
	}
	end := len(f.models)
	if f.pageSize > 0 && start+f.pageSize < end {
		end = start + f.pageSize
	}
	reply := &pb.ListModelsResponse{Models: f.models[start:end], TotalSize: int32(len(f.models))}
	if end < len(f.models) {
		reply.NextPageToken = strconv.Itoa(end)
	}
	return reply, nil
}

func (f *fakeGateway) deletion(ctx context.Context, req proto.Message) error {
	if err := f.authorize(ctx); err != nil {
		return err
	}
	f.mu.Lock()
	f.deletes = append(f.deletes, req)
	n := len(f.deletes)
	f.mu.Unlock()
	if f.onDelete != nil {
		return f.onDelete(n)
	}
	return nil
}

func (f *fakeGateway) DeleteModel(ctx context.Context, req *pb.DeleteModelRequest) (*pb.DeleteModelResponse, error) {
	if err := f.deletion(ctx, req); err != nil {
		return nil, err
	}
	return &pb.DeleteModelResponse{Removed: []*pb.RemovedKeys{{KeyFamily: "hl:{m:<model>}:meta", Count: 1}}}, nil
}

func (f *fakeGateway) DeleteTenantData(ctx context.Context, req *pb.DeleteTenantDataRequest) (*pb.DeleteTenantDataResponse, error) {
	if err := f.deletion(ctx, req); err != nil {
		return nil, err
	}
	return &pb.DeleteTenantDataResponse{Models: []string{"x", "y"}}, nil
}

func (f *fakeGateway) CompareProfiles(ctx context.Context, req *pb.CompareProfilesRequest) (*pb.CompareProfilesResponse, error) {
	if err := f.authorize(ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.compares = append(f.compares, req)
	return &pb.CompareProfilesResponse{Decision: pb.Decision_DECISION_NOT_ENOUGH_DATA, NotEnoughData: []string{"toxicity"}}, nil
}

func (f *fakeGateway) submitted() []*pb.SubmitPredictionsRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*pb.SubmitPredictionsRequest(nil), f.submits...)
}

// serve starts the fake on a free local port and returns its address; both stop with the test.
func serve(t *testing.T, f *fakeGateway) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	pb.RegisterEvaluationServiceServer(srv, f)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// sleeps records the client's waits instead of sleeping.
type sleeps struct {
	mu     sync.Mutex
	delays []time.Duration
}

func (s *sleeps) sleep(_ context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delays = append(s.delays, d)
	return nil
}

// dial connects a client to the fake with its waits recorded.
func dial(t *testing.T, addr string, opts Options) (*Client, *sleeps) {
	t.Helper()
	s := &sleeps{}
	if opts.Sleep == nil {
		opts.Sleep = s.sleep
	}
	c, err := Dial(addr, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, s
}
