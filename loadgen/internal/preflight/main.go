// Package preflight owns `loadgen preflight`: every proxy x origin route
// checked (package routecheck) before any load is sent, printed as a table
// with the proxies' real versions, the broken routes named; with -proto,
// every proxy's TLS port too (routecheck.CheckTLS: the ALPN and version
// asked negotiated), the protocols a proxy cannot speak n/a with the
// support matrix's reason (internal/scenario).
package preflight

import (
	"context"
	"crypto/x509"
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
	"proxybench/loadgen/internal/cmdflags"
	"proxybench/loadgen/internal/plan"
	"proxybench/loadgen/internal/routecheck"
	"proxybench/loadgen/internal/wire"
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

	// Protos, when any, are checked on every proxy's TLS port too: the
	// handshake must select each one's ALPN at TLSVersion, as the cells of
	// its scenarios ask (routecheck.CheckTLS).
	Protos     []wire.Proto
	TLSVersion string            // the one version offered: "1.2", "1.3"; "" = both
	TLSTarget  routecheck.Target // default routecheck.StackTLSTarget
	RootCAs    *x509.CertPool    // the CAs trusted; nil: the lab CA (internal/tlscert)
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
	protos := fs.String("proto", "", "comma list of `protocols` to check on every proxy's TLS port too: tls (HTTP/1.1 over TLS), h2, h3 (over QUIC); each must negotiate its ALPN ID (\"\" = the cleartext routes alone)")
	tlsVersion := fs.String("tls-version", plan.Default().TLSVersion, "with -proto: the one TLS `version` offered, 1.2 or 1.3, as loadgen run's; \"\" offers both")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: loadgen preflight [flags]\n\nSends GET /<origin>/ through every proxy and checks status 200, the body and X-Origin;\n"+
			"with -proto, shakes hands with every proxy's TLS port and checks the ALPN and TLS version negotiated.\n\n")
		fs.PrintDefaults()
	}
	if rc, ok := cmdflags.Parse(fs, args, stderr); !ok {
		return rc
	}
	o := Options{Proxies: cmdflags.List(*proxies), Origins: cmdflags.List(*origins), Project: *project, Timeout: *timeout, Wait: *wait, TLSVersion: *tlsVersion}
	var err error
	if o.Protos, err = parseProtos(*protos); err != nil {
		fmt.Fprintf(stderr, "loadgen preflight: -proto: %v\n", err)
		return 2
	}
	if _, err := wire.ParseTLSVersion(o.TLSVersion); err != nil {
		fmt.Fprintf(stderr, "loadgen preflight: -tls-version: %v\n", err)
		return 2
	}
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
	if o.TLSTarget == nil {
		o.TLSTarget = routecheck.StackTLSTarget
	}
	var roots *x509.CertPool
	if len(o.Protos) > 0 {
		var err error
		if roots, err = tlsRoots(o); err != nil {
			fmt.Fprintf(stderr, "loadgen preflight: %v\n", err)
			return 1
		}
	}
	client := routecheck.NewClient()
	results := make([][]routecheck.Result, len(o.Proxies))
	tlsChecks := make([][]tlsCheck, len(o.Proxies))
	versions := make([]string, len(o.Proxies))
	var wg sync.WaitGroup
	for i, p := range o.Proxies {
		base, err := o.Target(p)
		if err != nil {
			fmt.Fprintf(stderr, "loadgen preflight: %v\n", err)
			return 2
		}
		wg.Go(func() { results[i] = routecheck.CheckProxy(ctx, client, p, base, o.Origins, o.Timeout, o.Wait) })
		if len(o.Protos) == 0 {
			continue
		}
		tlsBase, err := o.TLSTarget(p)
		if err != nil {
			fmt.Fprintf(stderr, "loadgen preflight: %v\n", err)
			return 2
		}
		wg.Go(func() { tlsChecks[i] = checkTLS(ctx, o, p, tlsBase, roots) })
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
	var tlsBroken []tlsCheck
	if len(o.Protos) > 0 {
		tlsBroken = printTLS(stdout, o, tlsChecks)
	}
	if len(notes) > 0 {
		fmt.Fprintf(stdout, "\nversions unknown:\n%s\n", strings.Join(notes, "\n"))
	}
	if len(broken) == 0 {
		fmt.Fprintf(stdout, "\nall %d routes ok\n", len(o.Proxies)*len(o.Origins))
	} else {
		fmt.Fprintf(stdout, "\n%d broken route(s):\n", len(broken))
		names := make([]string, len(broken))
		for i, r := range broken {
			fmt.Fprintf(stdout, "  %s\n", r.Reason)
			names[i] = r.Proxy + "/" + r.Origin
		}
		fmt.Fprintf(stderr, "loadgen preflight: broken routes: %s\n", strings.Join(names, ", "))
	}
	if len(o.Protos) > 0 {
		if len(tlsBroken) == 0 {
			fmt.Fprintf(stdout, "all %d TLS checks ok (%d n/a)\n", len(o.Proxies)*len(o.Protos), countNA(tlsChecks))
		} else {
			fmt.Fprintf(stdout, "\n%d broken TLS port(s):\n", len(tlsBroken))
			names := make([]string, len(tlsBroken))
			for i, c := range tlsBroken {
				fmt.Fprintf(stdout, "  %s\n", c.res.Reason)
				names[i] = c.res.Proxy + "/" + string(c.proto)
			}
			fmt.Fprintf(stderr, "loadgen preflight: broken TLS ports: %s\n", strings.Join(names, ", "))
		}
	}
	if len(broken) > 0 || len(tlsBroken) > 0 {
		return 1
	}
	return 0
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
