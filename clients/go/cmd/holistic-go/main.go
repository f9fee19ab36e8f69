// Command holistic-go is a small command line over the Go client:
//
//	holistic-go submit FILE [--model M] [--batch-size N] [--dry-run]
//	holistic-go profile MODEL [--window 24h] [--json]
//	holistic-go watch MODEL [--window 1h] [--json]
//	holistic-go models
//	holistic-go delete-model MODEL [--tenant T] --yes   (an admin token)
//	holistic-go delete-tenant TENANT --yes              (an admin token)
//	holistic-go compare A [B] [--window 1h] [--fail-on accuracy,toxicity] [--margin M] [--multiplicity holm|bh]
//	                  [--allow-empty] [--json]   (exit 1 worse, 3 not enough data to decide, as `holistic compare`)
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
	"sort"
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
  compare A [B]   A's --window (default 1h) against the window before it, or A against B over --window:
                  each cell tested, p adjusted (--multiplicity holm|bh); with --fail-on, exit 1 when one
                  got significantly worse beyond --margin (a one-sided test of "worse by at most --margin",
                  adjusted over the --fail-on cells: "margin M: p"), 3 when there is not enough data to decide
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
	window := fs.String("window", "", "profile window: all, 15m, 1h, 24h, 7d (default all; compare: 1h)")
	asJSON := fs.Bool("json", false, "print profiles as canonical protobuf JSON")
	timeout := fs.Duration("timeout", 0, "give up after this long, retries included (e.g. 30s; 0: no limit)")
	waitForReady := fs.Bool("wait-for-ready", false, "wait (and retry) for a gateway that is not up yet, instead of failing at once naming it")
	tenant := fs.String("tenant", "", "the model's tenant (delete-model; default: the tenant named default)")
	yes := fs.Bool("yes", false, "delete (delete-model, delete-tenant): they cannot be undone")
	failOn := fs.String("fail-on", "", "compare: exit 1 when one of these (axes, any, FAMILY/METRIC) got significantly worse")
	margin := fs.Float64("margin", 0, "compare: fail only when a cell is significantly worse by more than this "+
		"(one-sided test of 'worse by at most MARGIN', adjusted over the --fail-on cells)")
	multiplicity := fs.String("multiplicity", "holm", "compare: holm or bh (Benjamini-Hochberg)")
	allowEmpty := fs.Bool("allow-empty", false, "compare: pass instead of exit 3 when there is not enough data to decide")
	fs.Usage = func() { fmt.Fprintln(stderr, usage); fs.PrintDefaults() }
	positional, err := parse(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	compareArgs := len(positional) >= 2 && len(positional) <= 3 && positional[0] == "compare"
	if len(positional) == 0 || (positional[0] != "models" && len(positional) != 2 && !compareArgs) {
		fs.Usage()
		return 2
	}
	command, arg := positional[0], ""
	if len(positional) > 1 {
		arg = positional[1]
	}
	if *window == "" {
		*window = "all"
		if command == "compare" {
			*window = "1h"
		}
	}
	w, err := holistic.Preset(*window)
	method, known := multiplicities[*multiplicity]
	if err == nil && !known {
		err = fmt.Errorf("unknown --multiplicity %q; use holm or bh", *multiplicity)
	}
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
	case "compare":
		other := ""
		if len(positional) == 3 {
			other = positional[2]
		}
		cmp := holistic.Compare{Model: arg, OtherModel: other, Window: w, Margin: *margin,
			FailOn: names(*failOn), Multiplicity: method}
		return compare(ctx, client, cmp, *asJSON, *allowEmpty, stdout, stderr)
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

// The exit statuses of compare, the same in the Python, Node and Go command lines (2: errors).
const (
	worseStatus = 1 // a cell named by --fail-on got significantly worse beyond --margin
	emptyStatus = 3 // not enough data to decide: a cell named has no value on a side, or no test
)

var multiplicities = map[string]pb.Multiplicity{
	"holm": pb.Multiplicity_MULTIPLICITY_HOLM, "bh": pb.Multiplicity_MULTIPLICITY_BENJAMINI_HOCHBERG,
}

func names(list string) []string {
	var out []string
	for _, n := range strings.Split(list, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

func number(x *float64, digits int) string {
	if x == nil {
		return "—"
	}
	return strconv.FormatFloat(*x, 'g', digits, 64)
}

func compare(ctx context.Context, client *holistic.Client, cmp holistic.Compare, asJSON, allowEmpty bool, stdout, stderr io.Writer) int {
	reply, err := client.CompareProfiles(ctx, cmp)
	if err != nil {
		return report(err, stderr)
	}
	label := cmp.Model
	if cmp.OtherModel != "" {
		label += " vs " + cmp.OtherModel
	}
	if asJSON {
		b, err := protojson.Marshal(reply)
		if err != nil {
			return report(err, stderr)
		}
		fmt.Fprintln(stdout, string(b))
	} else {
		fmt.Fprintf(stdout, "%s: %d predictions before, %d after (%s, level %g)\n", label,
			reply.GetBefore().GetCounts().GetWindowPredictions(), reply.GetAfter().GetCounts().GetWindowPredictions(),
			reply.GetMultiplicity(), reply.GetLevel())
		for _, c := range reply.GetCells() {
			line := fmt.Sprintf("  %-40s %s → %s  %s", c.GetName(), number(c.Before, 4), number(c.After, 4),
				strings.ToLower(strings.TrimPrefix(c.GetVerdict().String(), "VERDICT_")))
			if c.PAdjusted != nil {
				line += fmt.Sprintf(" (95%% %s to %s), p %s, adjusted %s, %s", number(c.Lower, 3), number(c.Upper, 3),
					number(c.P, 2), number(c.PAdjusted, 2), c.GetTest())
			}
			if c.PMargin != nil { // the margin test (one-sided "worse by at most --margin")
				line += fmt.Sprintf("; margin %g: p %s", reply.GetMargin(), number(c.PMargin, 2))
				if c.PMarginAdjusted != nil { // adjusted over the --fail-on cells
					line += fmt.Sprintf(", adjusted %s", number(c.PMarginAdjusted, 2))
				}
			}
			fmt.Fprintln(stdout, line)
		}
	}
	if len(cmp.FailOn) == 0 {
		return 0
	}
	for _, name := range reply.GetWorse() {
		fmt.Fprintf(stderr, "%s: %s got significantly worse\n", label, name)
	}
	switch reply.GetDecision() {
	case pb.Decision_DECISION_WORSE:
		return worseStatus
	case pb.Decision_DECISION_NOT_ENOUGH_DATA:
		if allowEmpty {
			fmt.Fprintf(stderr, "%s: %s\n", label, reply.GetSummary())
			return 0
		}
		fmt.Fprintf(stderr, "%s: %s (exit %d; --allow-empty passes)\n", label, reply.GetSummary(), emptyStatus)
		return emptyStatus
	}
	return 0
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
	// the part of the window past the tenant's retention: which tiers' buckets are gone
	if notice := p.GetWindow().GetRetentionNotice(); notice != "" {
		fmt.Fprintf(out, "  retention: %s\n", notice)
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
			fmt.Fprintf(out, "  %-12s %.3f %s\n", axis, d.GetScore(), rateText(rate))
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
	// a scenario some family scored a sample of (its own rate, HOLISTIC_<FAMILY>_SCENARIO_SAMPLE_RATES, or the family's)
	for _, s := range p.GetScenarios() {
		rates := s.GetSampleRates()
		if len(rates) == 0 {
			continue
		}
		families := make([]string, 0, len(rates))
		for f := range rates {
			families = append(families, f)
		}
		sort.Strings(families)
		parts := make([]string, len(families))
		for i, f := range families {
			parts[i] = f + " " + rateText(rates[f])
		}
		fmt.Fprintf(out, "  scenario %s: %s\n", s.GetScenario(), strings.Join(parts, ", "))
	}
	return nil
}

// rateText is "sampled 5 %": beside a value estimated from a share of the predictions.
func rateText(rate float64) string {
	return "sampled " + strconv.FormatFloat(rate*100, 'g', 3, 64) + " %"
}
