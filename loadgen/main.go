// Command loadgen is proxybench's instrument: it sends the load, measures it
// exactly, publishes it to Prometheus and runs the benchmark matrix.
//
//	loadgen run       [flags]   run a plan (the matrix) and write results/<run>/
//	loadgen attack    [flags]   one load against one URL, summary on stdout
//	loadgen preflight [flags]   check every proxy x origin route, print versions
//	loadgen placement [flags]   print this host's CPU placement as compose variables
//	loadgen study     [flags]   run one of the validity lab's studies into results/<run>/
//	loadgen certs     [flags]   make (or reuse) the lab's CA and the proxies' TLS certificate
//	loadgen ceiling   [flags]   measure the instrument's ceiling under a placement (JSON)
//	loadgen trivial-server [flags] the trivial server of the instrument's ceiling (loadgen run starts it)
//	loadgen worker    [flags]   one of several loadgens run as one instrument (loadgen run -loadgens N starts them)
//	loadgen swarmstack [flags]  turn the compose model into a Docker Swarm stack file (scripts/swarm.sh)
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"proxybench/loadgen/internal/attackcmd"
	"proxybench/loadgen/internal/ceiling"
	"proxybench/loadgen/internal/certscmd"
	"proxybench/loadgen/internal/fleet"
	"proxybench/loadgen/internal/perfcmd"
	"proxybench/loadgen/internal/placementcmd"
	"proxybench/loadgen/internal/preflight"
	"proxybench/loadgen/internal/runner"
	"proxybench/loadgen/internal/study"
	"proxybench/loadgen/internal/study/cc"
	ceilingstudy "proxybench/loadgen/internal/study/ceiling"
	"proxybench/loadgen/internal/study/netstack"
	"proxybench/loadgen/internal/study/scaleout"
	"proxybench/loadgen/internal/swarmstack"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// command is the shape every subcommand has: it owns its flags and returns
// the process exit code.
type command func(ctx context.Context, args []string, stdout, stderr io.Writer, log *slog.Logger) int

var commands = map[string]command{
	"run":       runner.Main,
	"attack":    attackcmd.Main,
	"preflight": preflight.Main,
	"placement": placementcmd.Main,
	"study":     study.Command(netstack.Study, cc.Study, scaleout.Study, ceilingstudy.Study),
	"certs":     certscmd.Main,
	"perf":      perfcmd.Main,
	"ceiling":   ceiling.Main,
	// Started by loadgen run and loadgen study, pinned where the proxy
	// runs, to measure the loadgen's own ceiling against it.
	ceiling.ServerCommand: ceiling.ServerMain,
	// Started by loadgen run -loadgens N: each sends its segment of every
	// cell's load.
	fleet.Command: fleet.Main,
	// Started by loadgen perf, pinned away from the load tools.
	perfcmd.TLSOriginCommand: perfcmd.TLSOriginMain,
	// Run by scripts/swarm.sh between docker compose config and docker
	// stack deploy.
	swarmstack.Command: swarmstack.Main,
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || commands[args[0]] == nil {
		fmt.Fprintln(stderr, "usage: loadgen run|attack|preflight|placement|study|certs|ceiling|perf|worker|swarmstack [flags]   (loadgen CMD -h for flags)")
		return 2
	}
	// The first Ctrl-C cancels ctx so the current cell ends cleanly and every
	// finished cell is kept; a second one kills the process the usual way.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { <-ctx.Done(); stop() }()
	// The instrument's own memory must stay flat over a soak, so that its
	// RSS is a leak detector and never a confound. Its live heap (the
	// HdrHistograms) is allocated up front and it allocates little per
	// request: mostly the 1 s Prometheus scrape. So the heap reaches its GC
	// goal only every minute or two, each cycle touching pages the last one
	// had not, and RSS crept up over a whole soak (measured 1.75 MB/min with
	// the default GOGC, 0.8 MB/min at GOGC=25) while heap_sys stayed put.
	// Collecting and returning freed pages every 10 s keeps RSS at the live
	// heap plus 10 s of garbage; the histograms hold no pointers, so a cycle
	// costs about a millisecond. GOGC in the environment still wins.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(25)
		go returnFreedMemory(ctx, 10*time.Second)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	return commands[args[0]](ctx, args[1:], stdout, stderr, log)
}

// returnFreedMemory collects and hands freed pages back to the OS every
// period until ctx ends.
func returnFreedMemory(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			debug.FreeOSMemory()
		}
	}
}
