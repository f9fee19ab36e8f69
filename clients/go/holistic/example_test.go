package holistic_test

import (
	"context"
	"fmt"
	"os"

	pb "github.com/holistic-eval/holistic/clients/go/gen/holistic/v1"
	"github.com/holistic-eval/holistic/clients/go/holistic"
)

// docs/clients.md's example, compiled by go vet and go test (not run: it needs a gateway).
func Example() {
	ctx := context.Background()
	c, err := holistic.Dial("127.0.0.1:50051", holistic.Options{Token: os.Getenv("HOLISTIC_TOKEN")})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	reply, err := c.Submit(ctx, "my-model", []*pb.Prediction{{Id: "q1", Scenario: "qa",
		Task: pb.Task_TASK_OPEN_QA, Output: "Paris", References: []string{"Paris"}}})
	if violations, ok := holistic.IsInvalid(err); ok {
		fmt.Println(violations) // [{predictions[0].confidence must be a probability in [0, 1], got 2.0}]
	} else if err == nil {
		fmt.Println(reply.GetSequence(), reply.GetDuplicate())
	}
	day, _ := holistic.Preset("24h")
	if profile, err := c.GetProfile(ctx, "my-model", day); err == nil {
		fmt.Println(profile.GetDimensions())
	}
	_ = c.WatchProfile(ctx, "my-model", holistic.AllTime, func(p *pb.Profile) error {
		return holistic.ErrStopWatch // or nil for the next one
	})
}
