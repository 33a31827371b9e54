package swarmstack

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"

	"proxybench/internal/dockerx"
	"proxybench/loadgen/internal/cmdflags"
)

// Command is the loadgen subcommand that runs Main.
const Command = "swarmstack"

// Main is `loadgen swarmstack`: the compose model on stdin, the stack file
// on stdout, one line a note on stderr; `-node-labels` prints the node
// labels of every role instead.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer, log *slog.Logger) int {
	return run(args, os.Stdin, stdout, stderr)
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("loadgen "+Command, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: docker compose config --format json | loadgen %s [flags] > stack.json\n"+
			"       loadgen %s -node-labels\n\n"+
			"Turns the lab's compose model into a stack file for `docker stack deploy -c` (Compose file\n"+
			"format 3.13), one line on stderr for every key moved or dropped (docs/swarm.md). With\n"+
			"-node-labels it prints the node labels of every role (or of -roles), one NAME=true a line.\n\n", Command, Command)
		fs.PrintDefaults()
	}
	opt := DefaultOptions
	fs.StringVar(&opt.Project, "project", opt.Project, "the compose project and stack `name`")
	fs.StringVar(&opt.EndpointMode, "endpoint-mode", opt.EndpointMode, "each service's endpoint `mode` where the model sets none: dnsrr or vip (IPVS)")
	fs.StringVar(&opt.PublishMode, "publish-mode", opt.PublishMode, "each published port's `mode`: host (the node running the task) or ingress (the routing mesh, IPVS)")
	labels := fs.Bool("node-labels", false, "print the node labels of every role (what a node taking them all carries), or of -roles, and exit")
	engine := fs.String("engine", "", "with -node-labels: also print the label giving the node's engine `address` (e.g. unix:///run/docker.sock), by which the loadgen reaches the containers on that node")
	roles := fs.String("roles", "", "with -node-labels: the comma-separated `roles` of one node (of "+strings.Join(NodeRoles, ", ")+"); empty: all")
	quiet := fs.Bool("q", false, "print no notes")
	if rc, ok := cmdflags.Parse(fs, args, stderr); !ok {
		return rc
	}
	if *labels {
		want, err := parseRoles(*roles)
		if err != nil {
			fmt.Fprintf(stderr, "loadgen %s: -roles %q: %v\n", Command, *roles, err)
			return 2
		}
		for _, r := range want {
			fmt.Fprintf(stdout, "%s=true\n", NodeLabel(r))
		}
		if *engine != "" {
			fmt.Fprintf(stdout, "%s=%s\n", dockerx.LabelEngine, *engine)
		}
		return 0
	}
	model, err := io.ReadAll(stdin)
	if err != nil {
		fmt.Fprintf(stderr, "loadgen %s: read stdin: %v\n", Command, err)
		return 1
	}
	out, notes, err := Convert(model, opt)
	if err != nil {
		fmt.Fprintf(stderr, "loadgen %s: %v\n", Command, err)
		return 2
	}
	if !*quiet {
		for _, n := range notes {
			fmt.Fprintln(stderr, n)
		}
	}
	if _, err := stdout.Write(out); err != nil {
		fmt.Fprintf(stderr, "loadgen %s: %v\n", Command, err)
		return 1
	}
	return 0
}

// parseRoles reads -roles: known roles, comma-separated, each once; ""
// is every role.
func parseRoles(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return NodeRoles, nil
	}
	seen := map[string]bool{}
	var out []string
	for _, r := range strings.Split(s, ",") {
		r = strings.TrimSpace(r)
		if !slices.Contains(NodeRoles, r) {
			return nil, fmt.Errorf("unknown role %q: give roles of %s", r, strings.Join(NodeRoles, ", "))
		}
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out, nil
}
