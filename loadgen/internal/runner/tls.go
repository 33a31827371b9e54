package runner

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/url"
	"time"

	"proxybench/internal/manifest"
	"proxybench/internal/scenario"
	"proxybench/internal/tlscert"
	"proxybench/loadgen/internal/attack"
	"proxybench/loadgen/internal/plan"
	"proxybench/loadgen/internal/routecheck"
	"proxybench/loadgen/internal/wire"
)

// tlsSpec sets the protocol side of a cell's attack: the protocol, its
// streams, the TLS versions and trust, and the load split into
// connections of Streams streams (scenario.Scenario.Streams).
func (r *Runner) tlsSpec(s *attack.Spec, sh scenario.Shape) error {
	s.Proto = attack.Proto(sh.Proto)
	if !sh.Def.Secure() {
		return nil
	}
	roots, err := r.roots()
	if err != nil {
		return err
	}
	v, _ := wire.ParseTLSVersion(sh.TLSVersion) // the plan validated it
	s.TLS = attack.TLSSettings{RootCAs: roots, MinVersion: v, MaxVersion: v, DisableResumption: sh.NoResume}
	if sh.Streams > 1 {
		s.Streams = sh.Streams
		s.Load = s.Load.Streams(sh.Streams)
	}
	return nil
}

// roots is the lab CA the TLS cells trust (internal/tlscert), read once.
func (r *Runner) roots() (*x509.CertPool, error) {
	if r.rootCAs == nil && r.rootsErr == nil {
		dir := r.TLSDir
		if dir == "" {
			dir = tlscert.DefaultDir
		}
		r.rootCAs, r.rootsErr = tlscert.CAPool(dir)
		if r.rootsErr != nil {
			r.rootsErr = fmt.Errorf("the lab CA the TLS cells trust: %w (loadgen certs, or scripts/stack.sh up, makes it)", r.rootsErr)
		}
	}
	return r.rootCAs, r.rootsErr
}

// tlsCheckKey names what a TLS preflight checked: the protocol and the
// versions offered.
func tlsCheckKey(sh scenario.Shape) string { return sh.Proto + "/" + sh.TLSVersion }

// tlsSkip is why a TLS cell of the proxy is not run, nil when its TLS port
// negotiates what the cell asks (routecheck.CheckTLS, once per protocol and
// version). The custom proxy that serves nothing on its TLS port (refused,
// or no QUIC answer) is not applicable, not broken.
func (r *Runner) tlsSkip(ctx context.Context, st *proxyState, c plan.Cell) *manifest.Skip {
	if c.Def == nil || !c.Def.Secure() {
		return nil
	}
	key := tlsCheckKey(c.Shape)
	res, ok := st.tls[key]
	if !ok {
		res = r.checkTLS(ctx, c)
		st.tls[key] = res
		if !res.OK {
			r.Log.Warn("preflight: TLS port does not negotiate what the cells ask, they are skipped", "reason", res.Reason)
		}
	}
	if res.OK {
		return nil
	}
	if why := routecheck.TLSNotServed(res, attack.Proto(c.Shape.Proto)); why != "" {
		return &manifest.Skip{Kind: manifest.SkipNotApplicable, Reason: why}
	}
	return &manifest.Skip{Kind: manifest.SkipPreflight, Reason: "preflight: " + res.Reason}
}

func (r *Runner) checkTLS(ctx context.Context, c plan.Cell) routecheck.Result {
	fail := func(err error) routecheck.Result {
		return routecheck.Result{Proxy: c.Proxy, Short: "error", Reason: err.Error()}
	}
	base, err := r.TLSTarget(c.Proxy)
	if err != nil {
		return fail(err)
	}
	u, err := url.Parse(base)
	if err != nil {
		return fail(err)
	}
	roots, err := r.roots()
	if err != nil {
		return fail(err)
	}
	want, err := routecheck.NewTLSWant(attack.Proto(c.Shape.Proto), c.Shape.TLSVersion, roots)
	if err != nil {
		return fail(err)
	}
	timeout := min(time.Duration(r.Plan.Timeout), 5*time.Second)
	return routecheck.CheckTLS(ctx, c.Proxy, u.Host, want, timeout)
}
