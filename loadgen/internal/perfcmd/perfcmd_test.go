package perfcmd

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"proxybench/internal/tlscert"
	"proxybench/loadgen/internal/attackcmd"
	"proxybench/loadgen/internal/ceiling"
)

// TestMain lets this test binary stand in for the loadgen binary that
// `loadgen perf` runs (loadgen attack, the trivial server, the TLS
// origin), so the real-run test needs no build.
func TestMain(m *testing.M) {
	if os.Getenv("PERFCMD_TEST_AS_LOADGEN") == "1" && len(os.Args) > 1 {
		cmds := map[string]func(context.Context, []string, io.Writer, io.Writer, *slog.Logger) int{
			"attack": attackcmd.Main, ceiling.ServerCommand: ceiling.ServerMain, TLSOriginCommand: TLSOriginMain,
		}
		if f := cmds[os.Args[1]]; f != nil {
			os.Exit(f(context.Background(), os.Args[2:], os.Stdout, os.Stderr, slog.New(slog.NewTextHandler(os.Stderr, nil))))
		}
	}
	os.Exit(m.Run())
}

// TestToolOutputs reads each tool's request count from its real output
// (testdata/<tool>.txt, captured from the tool's own run), and refuses an
// output without one.
func TestToolOutputs(t *testing.T) {
	for name, want := range map[string]int64{
		"loadgen": 33929, "wrk": 39625, "hey": 11683, "vegeta": 41293, "h2load": 40520,
	} {
		b, err := os.ReadFile(filepath.Join("testdata", name+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		got, err := tools[name].requests(string(b))
		if err != nil || got != want {
			t.Errorf("%s: %d, %v; want %d", name, got, err, want)
		}
		if _, err := tools[name].requests("connection refused\n"); err == nil {
			t.Errorf("%s: a count read from an output without one", name)
		}
	}
}

// TestFlags: bad input is refused with the flag named.
func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-tools", "wrk,ab"}, `unknown tool "ab"`},
		{[]string{"-tools", "h2load", "-tls-tools", ""}, `tool "h2load" belongs in -tls-tools`},
		{[]string{"-duration", "1500ms"}, "whole seconds"},
		{[]string{"-conns", "0"}, "-conns 0"},
		{[]string{"-tools", "", "-tls-tools", ""}, "no tools"},
	} {
		var e bytes.Buffer
		if _, rc, ok := parse(tc.args, &e); ok || rc != 2 || !strings.Contains(e.String(), tc.want) {
			t.Errorf("%v: ok %v, rc %d, %q; want rc 2 and %q", tc.args, ok, rc, e.String(), tc.want)
		}
	}
}

// TestPerfRunsTheLoadgen runs `loadgen perf` for real with the loadgen's
// plain and TLS engines (1 s each, the origins it starts itself on other
// ports than the defaults' would be busy with), and checks the tables: a
// row per tool with requests/s and requests per CPU-second that agree
// with the rounds' lines.
func TestPerfRunsTheLoadgen(t *testing.T) {
	if testing.Short() {
		t.Skip("runs load for 2 s")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PERFCMD_TEST_AS_LOADGEN", "1")
	dir := t.TempDir()
	if _, err := tlscert.Ensure(dir, tlscert.ECDSA, time.Now()); err != nil {
		t.Fatal(err)
	}
	c, rc, ok := parse([]string{"-tools", "loadgen", "-tls-tools", "loadgen-h2", "-duration", "1s", "-conns", "4", "-cert-dir", dir,
		"-tool-cpu", "0", "-origin-cpu", "0"}, os.Stderr)
	if !ok {
		t.Fatalf("parse: rc %d", rc)
	}
	c.Self = self
	var out, errs bytes.Buffer
	if err := run(context.Background(), c, &out, &errs); err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	t.Logf("%s%s", errs.String(), out.String())
	for _, tool := range []string{"loadgen", "loadgen-h2"} {
		m := regexp.MustCompile(`(?m)^\| ` + tool + ` \| (\d+) \| (\d+) \|`).FindStringSubmatch(out.String())
		if m == nil {
			t.Errorf("no table row for %s", tool)
			continue
		}
		rps, _ := strconv.Atoi(m[1])
		eff, _ := strconv.Atoi(m[2])
		if rps < 100 || eff < rps {
			t.Errorf("%s: %d req/s, %d per CPU-second: want a real load, and a tool using less than one CPU-second per second", tool, rps, eff)
		}
	}
}
