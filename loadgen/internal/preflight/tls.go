package preflight

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"net/url"
	"strings"
	"text/tabwriter"

	"proxybench/internal/manifest"
	"proxybench/internal/scenario"
	"proxybench/internal/tlscert"
	"proxybench/loadgen/internal/cmdflags"
	"proxybench/loadgen/internal/routecheck"
	"proxybench/loadgen/internal/wire"
)

// tlsCheck is one proxy's TLS port asked for one protocol.
type tlsCheck struct {
	proto wire.Proto
	na    string // why the proxy serves no proto (not checked, or nothing answered the custom proxy's port); "" = checked
	res   routecheck.Result
}

func (c tlsCheck) short() string {
	if c.na != "" {
		return "n/a"
	}
	return c.res.Short
}

func (c tlsCheck) broken() bool { return c.na == "" && !c.res.OK }

// parseProtos reads -proto: a comma list of the protocols over TLS.
func parseProtos(s string) ([]wire.Proto, error) {
	var out []wire.Proto
	for _, n := range cmdflags.List(s) {
		p, err := wire.ParseProto(n)
		if err != nil {
			return nil, err
		}
		if !p.Secure() {
			return nil, fmt.Errorf("protocol %s: the cleartext routes are always checked; give tls, h2 or h3 (the TLS port's)", p)
		}
		out = append(out, p)
	}
	return out, nil
}

// protoNA is why proxy cannot speak p natively, from the support matrix:
// the reason when every scenario speaking p is not applicable to it, ""
// when one runs.
func protoNA(proxy string, p wire.Proto) string {
	why := ""
	for _, s := range scenario.List() {
		if s.Proto != string(p) {
			continue
		}
		sk := s.Skip(proxy)
		if sk == nil || sk.Kind != manifest.SkipNotApplicable {
			return ""
		}
		why = sk.Reason
	}
	return why
}

// tlsRoots is the CAs the TLS checks trust: o's, or the lab CA.
func tlsRoots(o Options) (*x509.CertPool, error) {
	if o.RootCAs != nil {
		return o.RootCAs, nil
	}
	pool, err := tlscert.CAPool(tlscert.DefaultDir)
	if err != nil {
		return nil, fmt.Errorf("the lab CA the TLS checks trust: %w (loadgen certs, or scripts/stack.sh up, makes it; run from the repository root)", err)
	}
	return pool, nil
}

// checkTLS shakes hands with proxy's TLS port (base, https://host:port)
// once for each of o.Protos it speaks (routecheck.CheckTLS, retried up to
// o.Wait); the others are n/a with the support matrix's reason.
func checkTLS(ctx context.Context, o Options, proxy, base string, roots *x509.CertPool) []tlsCheck {
	out := make([]tlsCheck, len(o.Protos))
	var todo []int
	for i, p := range o.Protos {
		out[i].proto = p
		if out[i].na = protoNA(proxy, p); out[i].na == "" {
			todo = append(todo, i)
		}
	}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		for _, i := range todo {
			out[i].res = routecheck.Result{Proxy: proxy, Short: "bad address", Reason: fmt.Sprintf("%s TLS port %q: not an https:// address", proxy, base)}
		}
		return out
	}
	res := routecheck.Retry(ctx, len(todo), o.Wait, func(j int) routecheck.Result {
		want, err := routecheck.NewTLSWant(o.Protos[todo[j]], o.TLSVersion, roots)
		if err != nil {
			return routecheck.Result{Proxy: proxy, Short: "error", Reason: err.Error()}
		}
		return routecheck.CheckTLS(ctx, proxy, u.Host, want, o.Timeout)
	})
	for j, i := range todo {
		out[i].res = res[j]
		out[i].na = routecheck.TLSNotServed(res[j], out[i].proto)
	}
	return out
}

// printTLS writes the TLS table and the n/a reasons, and returns the
// broken checks.
func printTLS(w io.Writer, o Options, checks [][]tlsCheck) []tlsCheck {
	version := "TLS " + o.TLSVersion
	if o.TLSVersion == "" {
		version = "TLS 1.2 or 1.3"
	}
	fmt.Fprintf(w, "\nTLS: a handshake with each proxy's TLS port per protocol, offering its ALPN ID alone (tls: http/1.1) at %s;\n"+
		"want that ID selected and the lab certificate verified\n\n", version)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	names := make([]string, len(o.Protos))
	for i, p := range o.Protos {
		names[i] = string(p)
	}
	fmt.Fprintf(tw, "proxy\t%s\n", strings.Join(names, "\t"))
	var broken []tlsCheck
	var na []string
	for i, p := range o.Proxies {
		cells := make([]string, len(checks[i]))
		for j, c := range checks[i] {
			cells[j] = c.short()
			if c.broken() {
				broken = append(broken, c)
			}
			if c.na != "" {
				na = append(na, fmt.Sprintf("  %s %s: %s", p, c.proto, c.na))
			}
		}
		fmt.Fprintf(tw, "%s\t%s\n", p, strings.Join(cells, "\t"))
	}
	tw.Flush()
	if len(na) > 0 {
		fmt.Fprintf(w, "\nnot applicable:\n%s\n", strings.Join(na, "\n"))
	}
	return broken
}

func countNA(checks [][]tlsCheck) int {
	n := 0
	for _, cs := range checks {
		for _, c := range cs {
			if c.na != "" {
				n++
			}
		}
	}
	return n
}
