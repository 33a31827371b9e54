package runner

import (
	"context"

	"proxybench/internal/dockerx"
	"proxybench/internal/proxyconf"
)

// readConfig records what the running proxy says about its parity
// settings (package proxyconf) in the manifest, when the engine can exec
// into its container (the real client; the tests' fakes cannot).
func (r *Runner) readConfig(ctx context.Context, proxy string, ctr dockerx.Container) {
	e, ok := r.Docker.(proxyconf.Engine)
	if !ok {
		return
	}
	pc := proxyconf.Read(ctx, e, proxy, ctr)
	if pc.Error != "" {
		r.Log.Warn("proxy configuration not read: its parity column stays empty", "proxy", proxy, "err", pc.Error)
	}
	r.m.ProxyConfig[proxy] = pc
}
