package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestUsageAndBadFlagsExitTwo(t *testing.T) {
	for _, args := range [][]string{{}, {"profile"}, {"frobnicate", "x"}, {"profile", "m", "--window", "2h"}, {"--nope"},
		{"submit", "f.jsonl", "--batch-size", "0"}, {"delete-model", "m"}, {"delete-tenant", "team-a"},
		{"compare"}, {"compare", "a", "b", "c"}, {"compare", "a", "--multiplicity", "bonferroni"}} {
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code != 2 || out.Len() != 0 || errOut.Len() == 0 {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q", args, code, out.String(), errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	run([]string{"profile", "m", "--window", "2h"}, &out, &errOut)
	if !strings.Contains(errOut.String(), `unknown window "2h"`) {
		t.Fatalf("stderr %q", errOut.String())
	}
	errOut.Reset()
	run([]string{"delete-model", "m", "--tenant", "team-a"}, &out, &errOut)
	if errOut.String() != "error: not deleting without --yes (delete-model m cannot be undone)\n" {
		t.Fatalf("stderr %q", errOut.String())
	}
	errOut.Reset()
	if code := run([]string{"-h"}, &out, &errOut); code != 0 || !strings.Contains(errOut.String(), "submit FILE") {
		t.Fatalf("-h: exit %d, %q", code, errOut.String())
	}
}

func TestDryRunPrintsEachBatchWithItsIDAndNamesBadLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.jsonl")
	text := `{"id": "a", "output": "x"}` + "\n" + `{"id": "b", "output": "y"}` + "\n" + `{oops` + "\n" + `{"id": "c", "output": "z"}` + "\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	// Flags after the positional arguments, as the other CLIs accept them; nothing listens on the target.
	code := run([]string{"submit", path, "--model", "m", "--batch-size", "2", "--dry-run", "--target", "127.0.0.1:1"}, &out, &errOut)
	rows := strings.Split(strings.TrimSpace(out.String()), "\n")
	if code != 1 || len(rows) != 2 || !strings.HasSuffix(rows[0], "\t2\tm") || !strings.HasSuffix(rows[1], "\t1\tm") ||
		!strings.HasPrefix(rows[0], "c-") || len(strings.Split(rows[0], "\t")[0]) != 34 {
		t.Fatalf("exit %d, stdout %q", code, out.String())
	}
	if !strings.Contains(errOut.String(), "line 3: not a holistic.v1.Prediction") {
		t.Fatalf("stderr %q", errOut.String())
	}
}

func TestAnUnreachableGatewayFailsAtOnceNamingIt(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"models", "--target", "127.0.0.1:1"}, &out, &errOut)
	want := "error: UNAVAILABLE: cannot reach the gateway at 127.0.0.1:1: Connection refused (is it running? --wait-for-ready waits for it)\n"
	if code != 2 || errOut.String() != want {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
}

func TestWaitingForAnUnreachableGatewayNamesItWithEachRetryAndTimeoutBoundsIt(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"models", "--target", "127.0.0.1:1", "--wait-for-ready", "--timeout", "500ms"}, &out, &errOut)
	text := errOut.String()
	if code != 2 || !strings.HasPrefix(text, "127.0.0.1:1: UNAVAILABLE: ") || !strings.Contains(text, "\n  retry 1 of 11 in ") ||
		!strings.Contains(text, "\nerror: UNAVAILABLE: ") {
		t.Fatalf("exit %d, stderr %q", code, text)
	}
}
