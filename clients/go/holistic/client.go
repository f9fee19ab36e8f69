// Package holistic is the Go client of the holistic gateway: batches with content-derived ids, retries
// that honour the server's RetryInfo, profile reads and watches, and errors with their google.rpc
// details decoded. Messages are the stubs generated from the repository's protos/ (package holisticv1).
package holistic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/holistic-eval/holistic/clients/go/gen/holistic/v1"
)

// DefaultTarget is where `holistic up` serves.
const DefaultTarget = "127.0.0.1:50051"

// DefaultMaxAttempts is how many times a unary call is tried when Options.MaxAttempts is 0.
const DefaultMaxAttempts = 12

// ErrStopWatch, returned by a WatchProfile callback, ends the watch without an error.
var ErrStopWatch = errors.New("stop watching")

// Options tune a Client; the zero value is plaintext, no token, 30 s per attempt, 12 attempts.
type Options struct {
	Token       string                           // sent as "authorization: Bearer <token>"
	Timeout     time.Duration                    // per attempt of a unary call (30 s)
	MaxAttempts int                              // attempts per unary call, the first included (12)
	Credentials credentials.TransportCredentials // TLS; nil is plaintext
	OnRetry     func(attempt int, delay time.Duration, err error)
	Sleep       func(ctx context.Context, d time.Duration) error // waits between attempts (for tests)
	// FailUnreachable: until a call has reached the gateway, a connection that cannot be made returns an
	// *UnreachableError at once instead of being retried (what a command line wants by default).
	FailUnreachable bool
}

// Client is a connection to the gateway. Close it when done.
type Client struct {
	Stub    pb.EvaluationServiceClient // the raw stub, for calls the client does not wrap
	conn    *grpc.ClientConn
	opts    Options
	target  string
	reached atomic.Bool // a call has had an answer from the gateway
}

// ConnectTimeout bounds the first contact of a client with FailUnreachable: a gateway that accepted the
// connection answers well within it.
const ConnectTimeout = 5 * time.Second

// checkReachable runs one health check, bounded by ConnectTimeout, before the first call of a client with
// FailUnreachable: a host that accepts the connection and never answers fails in seconds, not after 12
// attempts of 30 s. Any answer (even UNIMPLEMENTED) is a server; a refused connection is named at once.
func (c *Client) checkReachable(ctx context.Context) error {
	if !c.opts.FailUnreachable || c.reached.Load() || c.conn == nil {
		return nil
	}
	hctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	_, err := healthpb.NewHealthClient(c.conn).Check(hctx, &healthpb.HealthCheckRequest{})
	if status.Code(err) == codes.DeadlineExceeded && ctx.Err() == nil {
		return &UnreachableError{Target: c.target, Cause: fmt.Sprintf("no answer within %g s", ConnectTimeout.Seconds())}
	}
	if u := c.unreachable(err); err != nil && u != nil {
		return u
	}
	c.reached.Store(true)
	return nil
}

// unreachable is an *UnreachableError when the options say to fail at once and the gateway was never reached.
func (c *Client) unreachable(err error) error {
	if !c.opts.FailUnreachable || c.reached.Load() {
		return nil
	}
	return unreachable(c.target, err)
}

// Dial connects to target (host:port) lazily: an unreachable gateway shows as retried UNAVAILABLE calls.
func Dial(target string, opts Options) (*Client, error) {
	transport := grpc.WithInsecure()
	if opts.Credentials != nil {
		transport = grpc.WithTransportCredentials(opts.Credentials)
	}
	conn, err := grpc.Dial(target, transport,
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20), grpc.MaxCallSendMsgSize(64<<20)))
	if err != nil {
		return nil, err
	}
	c := New(conn, opts)
	c.conn, c.target = conn, target
	return c, nil
}

// New wraps an existing connection (Close does not close it).
func New(conn grpc.ClientConnInterface, opts Options) *Client {
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	if opts.Sleep == nil {
		opts.Sleep = sleep
	}
	return &Client{Stub: pb.NewEvaluationServiceClient(conn), opts: opts}
}

// Close closes the connection Dial made.
func (c *Client) Close() error {
	if c.conn == nil {
		return nil
	}
	return c.conn.Close()
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// WithToken adds the bearer token to a context, for calls made through Stub.
func (c *Client) WithToken(ctx context.Context) context.Context {
	if c.opts.Token == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+c.opts.Token)
}

// retryDelay is RetryInfo's delay for RESOURCE_EXHAUSTED (none: not retryable, e.g. a message over the
// size limit), exponential backoff with jitter for UNAVAILABLE and DEADLINE_EXCEEDED.
func retryDelay(err error, attempt int) (time.Duration, bool) {
	switch status.Code(err) {
	case codes.ResourceExhausted:
		return RetryDelay(err)
	case codes.Unavailable, codes.DeadlineExceeded:
		backoff := 100 * time.Millisecond << uint(attempt-1)
		if attempt > 8 || backoff > 10*time.Second {
			backoff = 10 * time.Second
		}
		return time.Duration(float64(backoff) * (0.5 + rand.Float64()/2)), true
	}
	return 0, false
}

// call runs one unary attempt at a time with its own deadline until it succeeds, fails for good, runs
// out of attempts or ctx ends.
func (c *Client) call(ctx context.Context, attempt func(ctx context.Context) error) error {
	if err := c.checkReachable(ctx); err != nil {
		return err
	}
	for n := 1; ; n++ {
		actx, cancel := context.WithTimeout(c.WithToken(ctx), c.opts.Timeout)
		err := attempt(actx)
		cancel()
		if err == nil {
			c.reached.Store(true)
			return nil
		}
		if u := c.unreachable(err); u != nil {
			return u
		}
		delay, retry := retryDelay(err, n)
		if !retry || n >= c.opts.MaxAttempts || ctx.Err() != nil {
			return FromError(err)
		}
		if c.opts.OnRetry != nil {
			c.opts.OnRetry(n, delay, FromError(err))
		}
		if serr := c.opts.Sleep(ctx, delay); serr != nil {
			return FromError(err)
		}
	}
}

// Submit sends one batch under its content-derived id; retried safely, since the same id and content is
// idempotent (a repeat answers duplicate=true).
func (c *Client) Submit(ctx context.Context, model string, predictions []*pb.Prediction) (*pb.SubmitPredictionsResponse, error) {
	return c.SubmitBatch(ctx, &pb.SubmitPredictionsRequest{Model: model, Predictions: predictions})
}

// SubmitBatch sends a request as is; an empty BatchId is filled from the content first.
func (c *Client) SubmitBatch(ctx context.Context, req *pb.SubmitPredictionsRequest) (*pb.SubmitPredictionsResponse, error) {
	if req.BatchId == "" {
		id, err := ContentBatchID(req.Model, req.Predictions)
		if err != nil {
			return nil, err
		}
		req.BatchId = id
	}
	var reply *pb.SubmitPredictionsResponse
	err := c.call(ctx, func(ctx context.Context) (err error) {
		reply, err = c.Stub.SubmitPredictions(ctx, req)
		return err
	})
	return reply, err
}

// GetProfile folds the model's statistics over the window into its profile.
func (c *Client) GetProfile(ctx context.Context, model string, window Window) (*pb.Profile, error) {
	var reply *pb.GetProfileResponse
	err := c.call(ctx, func(ctx context.Context) (err error) {
		reply, err = c.Stub.GetProfile(ctx, window.getRequest(model))
		return err
	})
	return reply.GetProfile(), err
}

// WatchProfile calls fn with the profile now, then with a fresh one each time a batch of the model is
// applied, until fn returns an error (ErrStopWatch: stop without one), ctx ends or the server closes.
func (c *Client) WatchProfile(ctx context.Context, model string, window Window, fn func(*pb.Profile) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := c.checkReachable(ctx); err != nil {
		return err
	}
	stream, err := c.Stub.WatchProfile(c.WithToken(ctx), window.watchRequest(model))
	if err != nil {
		if u := c.unreachable(err); u != nil {
			return u
		}
		return FromError(err)
	}
	for {
		reply, err := stream.Recv()
		if err == io.EOF || (err != nil && (ctx.Err() != nil || status.Code(err) == codes.Canceled)) {
			return nil
		}
		if err != nil {
			if u := c.unreachable(err); u != nil {
				return u
			}
			return FromError(err)
		}
		c.reached.Store(true)
		if err := fn(reply.GetProfile()); err != nil {
			if errors.Is(err, ErrStopWatch) {
				return nil
			}
			return err
		}
	}
}

// ListModels lists the models the service has accepted predictions for, in name order: every page
// of ListModelsPage, each at the server's maximum size. On an error it returns the pages read before it.
func (c *Client) ListModels(ctx context.Context) ([]*pb.ModelSummary, error) {
	var models []*pb.ModelSummary
	token := ""
	for {
		page, err := c.ListModelsPage(ctx, 0, token)
		if err != nil {
			return models, err
		}
		models = append(models, page.GetModels()...)
		if token = page.GetNextPageToken(); token == "" {
			return models, nil
		}
	}
}

// Compare says what CompareProfiles compares: Model over Window against OtherModel over the same window,
// or (OtherModel "") Model's Window against the window of equal length just before it.
type Compare struct {
	Model, OtherModel string
	Window            Window
	Margin            float64  // a worsening must be larger than this to fail the decision
	Level             float64  // 0: 0.05
	FailOn            []string // the cells the decision is about; empty: every axis
	Multiplicity      pb.Multiplicity
}

// CompareProfiles compares two profiles cell by cell: each cell tested by what is stored for it, the
// p-values adjusted over every cell tested, and the decision (pass, worse, not enough data).
func (c *Client) CompareProfiles(ctx context.Context, cmp Compare) (*pb.CompareProfilesResponse, error) {
	req := cmp.Window.compareRequest(&pb.CompareProfilesRequest{
		Model: cmp.Model, OtherModel: cmp.OtherModel, Margin: cmp.Margin, Level: cmp.Level,
		FailOn: cmp.FailOn, Multiplicity: cmp.Multiplicity,
	})
	var reply *pb.CompareProfilesResponse
	err := c.call(ctx, func(ctx context.Context) (err error) {
		reply, err = c.Stub.CompareProfiles(ctx, req)
		return err
	})
	return reply, err
}

// DeleteModel deletes everything the service keeps of the tenant's model (tenant "": the default tenant).
// It needs an admin token (HOLISTIC_ADMIN_TOKENS); the reply lists what was removed per key family, none
// the second time. Idempotent, so retried like a read.
func (c *Client) DeleteModel(ctx context.Context, model, tenant string) (*pb.DeleteModelResponse, error) {
	var reply *pb.DeleteModelResponse
	err := c.call(ctx, func(ctx context.Context) (err error) {
		reply, err = c.Stub.DeleteModel(ctx, &pb.DeleteModelRequest{Model: model, Tenant: tenant})
		return err
	})
	return reply, err
}

// DeleteTenantData deletes everything the service keeps of a tenant ("default" included), with an admin
// token: the reply names the tenant's models deleted and lists what was removed per key family.
func (c *Client) DeleteTenantData(ctx context.Context, tenant string) (*pb.DeleteTenantDataResponse, error) {
	var reply *pb.DeleteTenantDataResponse
	err := c.call(ctx, func(ctx context.Context) (err error) {
		reply, err = c.Stub.DeleteTenantData(ctx, &pb.DeleteTenantDataRequest{Tenant: tenant})
		return err
	})
	return reply, err
}

// ListModelsPage reads one page of at most pageSize models (0: the server's maximum, 10,000 by
// default) after the page whose NextPageToken is pageToken ("": the first page).
func (c *Client) ListModelsPage(ctx context.Context, pageSize int32, pageToken string) (*pb.ListModelsResponse, error) {
	var reply *pb.ListModelsResponse
	err := c.call(ctx, func(ctx context.Context) (err error) {
		reply, err = c.Stub.ListModels(ctx, &pb.ListModelsRequest{PageSize: pageSize, PageToken: pageToken})
		return err
	})
	return reply, err
}
