// Package preflight owns `loadgen preflight`: every proxy x origin route
// checked (package routecheck) before any load is sent, printed as a table
// with the proxies' real versions, the broken routes named.
package preflight

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"proxybench/internal/dockerx"
	"proxybench/internal/stack"
	"proxybench/loadgen/internal/routecheck"
)

// Versioner finds a proxy's container and asks its binary for its version;
// *dockerx.Client is one.
type Versioner interface {
	Service(ctx context.Context, project, service string) (dockerx.Container, error)
	Version(ctx context.Context, ctr dockerx.Container) (string, error)
}

// Options are what `loadgen preflight` checks.
type Options struct {
	Proxies, Origins []string
	Project          string
	Timeout, Wait    time.Duration
	Target           routecheck.Target // default routecheck.StackTarget
	Docker           Versioner         // nil: versions are not printed
}

// Main is `loadgen preflight`: exit 0 when every route works, 1 naming each
// broken route, 2 on bad flags.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer, log *slog.Logger) int {
	fs := flag.NewFlagSet("loadgen preflight", flag.ContinueOnError)
	fs.SetOutput(stderr)
	proxies := fs.String("proxies", strings.Join(stack.DefaultProxies(), ","), "comma list of `proxies` to check")
	origins := fs.String("origins", strings.Join(stack.DefaultOrigins(), ","), "comma list of `origins` to check")
	project := fs.String("project", "proxybench", "compose `project` whose containers report their versions")
	timeout := fs.Duration("timeout", 2*time.Second, "per request `timeout`")
	wait := fs.Duration("wait", 0, "retry broken routes up to this `long` (the stack may still be starting)")
	noDocker := fs.Bool("no-docker", false, "do not ask Docker for the proxies' versions")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: loadgen preflight [flags]\n\nSends GET /<origin>/ through every proxy and checks status 200, the body and X-Origin.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	o := Options{Proxies: split(*proxies), Origins: split(*origins), Project: *project, Timeout: *timeout, Wait: *wait}
	for _, p := range o.Proxies {
		if _, err := stack.LookupProxy(p); err != nil {
			fmt.Fprintf(stderr, "loadgen preflight: -proxies: %v\n", err)
			return 2
		}
	}
	for _, n := range o.Origins {
		if _, err := stack.LookupOrigin(n); err != nil {
			fmt.Fprintf(stderr, "loadgen preflight: -origins: %v\n", err)
			return 2
		}
	}
	if !*noDocker {
		dc, err := dockerx.New(ctx)
		if err != nil {
			log.Warn("versions not shown", "err", err)
		} else {
			defer dc.Close()
			o.Docker = dc
		}
	}
	return Run(ctx, o, stdout, stderr)
}

// Run checks every route and prints the table; see Main for exit codes.
func Run(ctx context.Context, o Options, stdout, stderr io.Writer) int {
	if o.Target == nil {
		o.Target = routecheck.StackTarget
	}
	client := routecheck.NewClient()
	results := make([][]routecheck.Result, len(o.Proxies))
	versions := make([]string, len(o.Proxies))
	var wg sync.WaitGroup
	for i, p := range o.Proxies {
		base, err := o.Target(p)
		if err != nil {
			fmt.Fprintf(stderr, "loadgen preflight: %v\n", err)
			return 2
		}
		wg.Go(func() { results[i] = routecheck.CheckProxy(ctx, client, p, base, o.Origins, o.Timeout, o.Wait) })
	}
	wg.Wait()
	// One at a time: the Docker client negotiates its API version on first
	// use, and concurrent first uses race inside it.
	var notes []string
	for i, p := range o.Proxies {
		var err error
		if versions[i], err = version(ctx, o.Docker, o.Project, p); err != nil {
			notes = append(notes, fmt.Sprintf("  %s: %v", p, err))
		}
	}

	fmt.Fprintf(stdout, "preflight: GET /<origin>/ through each proxy; want 200, body %q, X-Origin: <origin>\n\n", routecheck.Body)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "proxy\t%s\tversion\n", strings.Join(o.Origins, "\t"))
	var broken []routecheck.Result
	for i, p := range o.Proxies {
		cells := make([]string, len(results[i]))
		for j, r := range results[i] {
			cells[j] = r.Short
			if !r.OK {
				broken = append(broken, r)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", p, strings.Join(cells, "\t"), versions[i])
	}
	tw.Flush()
	if len(notes) > 0 {
		fmt.Fprintf(stdout, "\nversions unknown:\n%s\n", strings.Join(notes, "\n"))
	}
	if len(broken) == 0 {
		fmt.Fprintf(stdout, "\nall %d routes ok\n", len(o.Proxies)*len(o.Origins))
		return 0
	}
	fmt.Fprintf(stdout, "\n%d broken route(s):\n", len(broken))
	names := make([]string, len(broken))
	for i, r := range broken {
		fmt.Fprintf(stdout, "  %s\n", r.Reason)
		names[i] = r.Proxy + "/" + r.Origin
	}
	fmt.Fprintf(stderr, "loadgen preflight: broken routes: %s\n", strings.Join(names, ", "))
	return 1
}

// version is the table cell and, when it is unknown, why.
func version(ctx context.Context, d Versioner, project, proxy string) (string, error) {
	if d == nil {
		return "-", nil
	}
	ctr, err := d.Service(ctx, project, proxy)
	if err != nil {
		return "? (no container)", err
	}
	if !ctr.Running || ctr.State == "paused" {
		return "? (" + ctr.State + ")", fmt.Errorf("container %s is %s", ctr.Name, ctr.State)
	}
	v, err := d.Version(ctx, ctr)
	if err != nil {
		return "? (version command failed)", err
	}
	return v, nil
}

func split(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}
