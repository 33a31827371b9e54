package build

import (
	"proxybench/internal/manifest"
	"proxybench/internal/proxyconf"
	"proxybench/reporter/internal/report"
)

// parity is the parity table the running proxies of the report reported
// at the run's start (manifest ProxyConfig), with a warning for each row
// on which they differ; nil when the manifest has none.
func parity(man *manifest.Manifest, proxies []string) *report.Parity {
	if man == nil || len(man.ProxyConfig) == 0 {
		return nil
	}
	p := &report.Parity{Configs: map[string]manifest.ProxyConfig{}}
	for _, px := range proxies {
		if pc, ok := man.ProxyConfig[px]; ok {
			p.Proxies = append(p.Proxies, px)
			p.Configs[px] = pc
		}
	}
	if len(p.Proxies) == 0 {
		return nil
	}
	p.Warnings = proxyconf.Differences(p.Configs)
	return p
}

// readWorkers is the worker setting the running proxy reported, e.g.
// "worker_processes 1"; false when it reported none.
func readWorkers(man *manifest.Manifest, proxy string) (string, bool) {
	if man == nil {
		return "", false
	}
	v, ok := man.ProxyConfig[proxy].Values[proxyconf.Workers]
	if !ok || v.NA {
		return "", false
	}
	return v.Value + " (" + v.From + ")", true
}
