// Command holistic-go is a small command line over the Go client:
//
//	holistic-go submit FILE [--model M] [--batch-size N] [--dry-run]
//	holistic-go profile MODEL [--window 24h] [--json]
//	holistic-go watch MODEL [--window 1h] [--json]
//	holistic-go models
//	holistic-go delete-model MODEL [--tenant T] --yes   (an admin token)
//	holistic-go delete-tenant TENANT --yes              (an admin token)
//
// --target host:port (HOLISTIC_TARGET, default 127.0.0.1:50051), --token (HOLISTIC_TOKEN), --timeout.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/holistic-eval/holistic/clients/go/gen/holistic/v1"
	"github.com/holistic-eval/holistic/clients/go/holistic"
)

const usage = `usage: holistic-go [flags] COMMAND
  submit FILE     submit a JSON Lines file (.gz too) of holistic.v1.Prediction in per-model batches
                  (--model, --batch-size; --dry-run prints each batch's id and sends nothing)
  profile MODEL   the model's profile over --window (all, 15m, 1h, 24h, 7d); --json for canonical JSON
  watch MODEL     the profile now, then a fresh one per applied batch (Ctrl-C stops)
  models          the models the service has accepted predictions for
  delete-model MODEL    delete everything kept of MODEL of --tenant (an admin token; --yes, it cannot be undone)
  delete-tenant TENANT  delete everything kept of TENANT, every model of it (an admin token; --yes)
flags (before or after the command):`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func env(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

// parse accepts flags before and after the positional arguments, as the Python and Node CLIs do.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("holistic-go", flag.ContinueOnError)
	fs.SetOutput(stderr)
	target := fs.String("target", env("HOLISTIC_TARGET", holistic.DefaultTarget), "gateway host:port")
	token := fs.String("token", os.Getenv("HOLISTIC_TOKEN"), "bearer token")
	model := fs.String("model", "", "model of predictions that name none (submit)")
	batchSize := fs.Int("batch-size", 500, "predictions per batch (submit)")
	dryRun := fs.Bool("dry-run", false, "print the batches and their ids, send nothing (submit)")
	window := fs.String("window", "all", "profile window: all, 15m, 1h, 24h, 7d")
	asJSON := fs.Bool("json", false, "print profiles as canonical protobuf JSON")
	timeout := fs.Duration("timeout", 0, "give up after this long, retries included (e.g. 30s; 0: no limit)")
	waitForReady := fs.Bool("wait-for-ready", false, "wait (and retry) for a gateway that is not up yet, instead of failing at once naming it")
	tenant := fs.String("tenant", "", "the model's tenant (delete-model; default: the tenant named default)")
	yes := fs.Bool("yes", false, "delete (delete-model, delete-tenant): they cannot be undone")
	fs.Usage = func() { fmt.Fprintln(stderr, usage); fs.PrintDefaults() }
	positional, err := parse(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	if len(positional) == 0 || (positional[0] != "models" && len(positional) != 2) {
		fs.Usage()
		return 2
	}
	command, arg := positional[0], ""
	if len(positional) > 1 {
		arg = positional[1]
	}
	w, err := holistic.Preset(*window)
	if err == nil && *batchSize <= 0 {
		err = fmt.Errorf("--batch-size must be at least 1, got %d", *batchSize)
	}
	if err == nil && strings.HasPrefix(command, "delete-") && !*yes {
		err = fmt.Errorf("not deleting without --yes (%s %s cannot be undone)", command, arg)
	}
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}

	if command == "submit" && *dryRun {
		return dryRunSubmit(arg, *model, *batchSize, stdout, stderr)
	}
	client, err := holistic.Dial(*target, holistic.Options{Token: *token, FailUnreachable: !*waitForReady,
		OnRetry: func(attempt int, delay time.Duration, err error) {
			fmt.Fprintf(stderr, "%s: %v\n  retry %d of %d in %.1fs\n", *target, err, attempt,
				holistic.DefaultMaxAttempts-1, delay.Seconds())
		}})
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 2
	}
	defer client.Close()

	show := func(p *pb.Profile) error { return printProfile(stdout, p, *window, *asJSON) }
	switch command {
	case "submit":
		return submit(ctx, client, arg, *model, *batchSize, stdout, stderr)
	case "profile":
		p, err := client.GetProfile(ctx, arg, w)
		if err == nil {
			err = show(p)
		}
		return report(err, stderr)
	case "watch":
		return report(client.WatchProfile(ctx, arg, w, show), stderr)
	case "models":
		models, err := client.ListModels(ctx)
		for _, m := range models {
			fmt.Fprintf(stdout, "%s\t%d\n", m.GetModel(), m.GetAcceptedPredictions())
		}
		return report(err, stderr)
	case "delete-model":
		reply, err := client.DeleteModel(ctx, arg, *tenant)
		if err == nil {
			printRemoved(stdout, "model "+arg, reply.GetRemoved())
		}
		return report(err, stderr)
	case "delete-tenant":
		reply, err := client.DeleteTenantData(ctx, arg)
		if err == nil {
			n := len(reply.GetModels())
			printRemoved(stdout, fmt.Sprintf("tenant %s (%s)", arg, plural(n, "model", "models")), reply.GetRemoved())
		}
		return report(err, stderr)
	}
	fs.Usage()
	return 2
}

func report(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "error:", err)
	return 2
}

// printRemoved prints what a deletion removed, one key family a line, as the Python and Node CLIs do.
func printRemoved(out io.Writer, what string, removed []*pb.RemovedKeys) {
	if len(removed) == 0 {
		fmt.Fprintf(out, "deleted %s: nothing left to remove\n", what)
		return
	}
	fmt.Fprintf(out, "deleted %s:\n", what)
	for _, r := range removed {
		fmt.Fprintf(out, "  %s\t%d\n", r.GetKeyFamily(), r.GetCount())
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

func submit(ctx context.Context, client *holistic.Client, path, model string, batchSize int, stdout, stderr io.Writer) int {
	lines, err := holistic.ReadPredictions(path)
	if err != nil {
		return report(err, stderr)
	}
	r, err := client.SubmitLines(ctx, lines, model, batchSize, nil)
	if err != nil {
		return report(err, stderr)
	}
	fmt.Fprintf(stdout, "accepted %s in %s (%d already accepted earlier); rejected %s\n",
		plural(r.Accepted, "prediction", "predictions"), plural(r.Batches, "batch", "batches"), r.Duplicates, plural(len(r.Rejected), "line", "lines"))
	for _, x := range r.Rejected {
		fmt.Fprintf(stderr, "  line %d: %s %s\n", x.Line, x.Field, x.Reason)
	}
	if len(r.Rejected) > 0 {
		return 1
	}
	return 0
}

func dryRunSubmit(path, model string, batchSize int, stdout, stderr io.Writer) int {
	lines, err := holistic.ReadPredictions(path)
	if err != nil {
		return report(err, stderr)
	}
	batches, err := holistic.Batches(lines, model, batchSize)
	if err != nil {
		return report(err, stderr)
	}
	for _, b := range batches {
		fmt.Fprintf(stdout, "%s\t%d\t%s\n", b.BatchID, len(b.Lines), b.Model) // id, predictions, model
	}
	bad := 0
	for _, l := range lines {
		if l.Prediction == nil {
			fmt.Fprintf(stderr, "  line %d: %s\n", l.Number, l.Err)
			bad++
		}
	}
	if bad > 0 {
		return 1
	}
	return 0
}

func printProfile(out io.Writer, p *pb.Profile, window string, asJSON bool) error {
	if asJSON {
		b, err := protojson.Marshal(p)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(out, string(b))
		return err
	}
	fmt.Fprintf(out, "%s: %s (%s)\n", p.GetModel(), plural(int(p.GetCounts().GetWindowPredictions()), "prediction", "predictions"), window)
	var pending []string // accepted, not yet applied: an absent axis may only be on its way
	for _, f := range p.GetPending() {
		if f.GetPendingPredictions() > 0 {
			pending = append(pending, fmt.Sprintf("%s %d", f.GetFamily(), f.GetPendingPredictions()))
		}
	}
	if len(pending) > 0 {
		fmt.Fprintf(out, "  pending: %s\n", strings.Join(pending, ", "))
	}
	// a family that scores a share of the predictions (HOLISTIC_<FAMILY>_SAMPLE_RATE) says so beside its value
	sampled := map[string]float64{}
	for _, f := range p.GetFamilies() {
		if f.SampleRate != nil {
			sampled[f.GetFamily()] = f.GetSampleRate()
		}
	}
	for _, d := range p.GetDimensions() {
		axis := strings.ToLower(strings.TrimPrefix(d.GetKind().String(), "DIMENSION_KIND_"))
		if d.Score == nil {
			fmt.Fprintf(out, "  %-12s — %s\n", axis, d.GetAbsentReason())
		} else if rate, ok := sampled[d.GetFamily()]; ok {
			fmt.Fprintf(out, "  %-12s %.3f sampled %s %%\n", axis, d.GetScore(), strconv.FormatFloat(rate*100, 'g', 3, 64))
		} else {
			fmt.Fprintf(out, "  %-12s %.3f\n", axis, d.GetScore())
		}
	}
	// per segment key (HOLISTIC_SEGMENT_KEYS) and family: its main metric per value, `other` last
	for _, b := range p.GetSegments() {
		better := ""
		if b.GetLowerIsBetter() {
			better = " (lower is better)"
		}
		fmt.Fprintf(out, "  segment %s: %s %s%s\n", b.GetKey(), b.GetFamily(), b.GetMetric(), better)
		for _, v := range b.GetValues() {
			name, m := v.GetValue(), v.GetMetric()
			if v.GetOther() {
				name = "(other)"
			}
			iv := ""
			if m.GetInterval() != nil {
				iv = fmt.Sprintf(" 95%% %.3f–%.3f", m.GetInterval().GetLower(), m.GetInterval().GetUpper())
			}
			fmt.Fprintf(out, "    %-16s %.3f%s n=%d\n", name, m.GetValue(), iv, m.GetCount())
		}
	}
	return nil
}
