// Package placementcmd owns `loadgen placement`: it resolves the run's CPU
// placement for this host (internal/placement) from -placement or a plan
// file's placement section, exactly as `loadgen run` does, and prints it as
// the compose file's variables, one NAME=value a line, which
// scripts/stack.sh sets before compose up. The Go code is the one source
// of the plan; the scripts only pass it on.
package placementcmd

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"proxybench/internal/placement"
	"proxybench/loadgen/internal/cmdflags"
	"proxybench/loadgen/internal/plan"
)

// Main is `loadgen placement`.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer, log *slog.Logger) int {
	return run(args, stdout, stderr, placement.Online)
}

func run(args []string, stdout, stderr io.Writer, online func() (placement.CPUSet, error)) int {
	fs := flag.NewFlagSet("loadgen placement", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: loadgen placement [-placement auto|none] [-plan FILE]\n\n"+
			"Prints the CPU placement of this host as the compose file's variables (NAME=value lines);\n"+
			"a one-line summary goes to stderr. -placement wins over the plan file's placement section.\n\n")
		fs.PrintDefaults()
	}
	mode := fs.String("placement", "", "`mode`: auto (the default) or none; a plan file's placement section otherwise")
	file := fs.String("plan", "", "YAML plan `file` whose placement section to use (the one `loadgen run -plan` reads)")
	if rc, ok := cmdflags.Parse(fs, args, stderr); !ok {
		return rc
	}
	var spec placement.Spec
	if *file != "" {
		p, err := plan.ReadFile(*file)
		if err != nil {
			fmt.Fprintf(stderr, "loadgen placement: %v\n", err)
			return 2
		}
		spec = p.Placement
	}
	if *mode != "" {
		spec = placement.Spec{Mode: *mode}
	}
	cpus, err := online()
	if err != nil {
		fmt.Fprintf(stderr, "loadgen placement: %v\n", err)
		return 1
	}
	pl, err := placement.Resolve(spec, cpus)
	if err != nil {
		fmt.Fprintf(stderr, "loadgen placement: %v\n", err)
		return 2
	}
	for _, v := range pl.Env() {
		fmt.Fprintf(stdout, "%s=%s\n", v.Name, v.Value)
	}
	fmt.Fprintf(stderr, "%s (%s)\n", pl.Summary(), pl.Reason)
	return 0
}
