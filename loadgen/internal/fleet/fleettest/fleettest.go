// Package fleettest owns the tests' loadgen workers: a test binary that is
// a worker too (the helper-process pattern), so that tests of several
// loadgens start real worker processes without building the loadgen.
package fleettest

import (
	"context"
	"log/slog"
	"os"
	"testing"

	"proxybench/loadgen/internal/fleet"
)

// env is the switch that makes the test binary a worker.
const env = "PROXYBENCH_FLEET_WORKER=1"

// Main is a test package's TestMain: the worker when the Launcher started
// this process, else the tests.
func Main(m *testing.M) {
	if os.Getenv("PROXYBENCH_FLEET_WORKER") == "1" && len(os.Args) > 1 && os.Args[1] == fleet.Command {
		os.Exit(fleet.Main(context.Background(), os.Args[2:], os.Stdout, os.Stderr, slog.New(slog.DiscardHandler)))
	}
	os.Exit(m.Run())
}

// Launcher starts workers as copies of the test binary (whose TestMain is
// Main).
func Launcher(t testing.TB) fleet.Local {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return fleet.Local{Binary: exe, Env: []string{env}}
}
