// Package proxyconf owns reading the parity settings from the running
// proxies themselves, not from the repository's files: nginx's own dump of
// the configuration it loaded (nginx -T, the container's command with -T),
// the configuration file HAProxy was started with read inside its
// container with the process's environment resolved, Traefik's API and
// Caddy's admin API (asked from inside the container by pbhealth get).
// Each is parsed into the same rows (Rows) in one common form, so that the
// report can compare proxies row by row (package manifest keeps them).
package proxyconf

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"proxybench/internal/dockerx"
	"proxybench/internal/manifest"
)

// The parity rows.
const (
	Workers           = "workers"
	UpstreamPool      = "upstream idle connections per origin"
	ClientIdle        = "client keep-alive idle timeout"
	ConnectTimeout    = "upstream connect timeout"
	ResponseTimeout   = "upstream response timeout"
	RequestBuffering  = "request body buffering"
	ResponseBuffering = "response buffering"
	AccessLog         = "access log"
	TLSMin            = "TLS minimum version"
)

// Rows are the parity rows in the report's order.
var Rows = []string{Workers, UpstreamPool, ClientIdle, ConnectTimeout, ResponseTimeout, RequestBuffering, ResponseBuffering, AccessLog, TLSMin}

// Engine runs a command inside a running container (dockerx.Client.Exec).
type Engine interface {
	Exec(ctx context.Context, id string, argv ...string) (string, error)
}

var _ Engine = (*dockerx.Client)(nil)

// Read asks the running proxy in ctr (Inspect's, with its command and
// environment) for its parity settings; kind is the proxy it runs
// (nginx, haproxy, traefik, caddy: a duet's candidate runs its proxy's).
// What cannot be read is the result's Error.
func Read(ctx context.Context, e Engine, kind string, ctr dockerx.Container) manifest.ProxyConfig {
	var (
		pc  manifest.ProxyConfig
		err error
	)
	switch kind {
	case "nginx":
		pc, err = readNginx(ctx, e, ctr)
	case "haproxy":
		pc, err = readHAProxy(ctx, e, ctr)
	case "traefik":
		pc, err = readTraefik(ctx, e, ctr)
	case "caddy":
		pc, err = readCaddy(ctx, e, ctr)
	default:
		return manifest.ProxyConfig{Error: fmt.Sprintf("no reader of %s's configuration: its parity column is empty", kind)}
	}
	if err != nil {
		pc.Error = err.Error()
		pc.Values = nil
	}
	return pc
}

// Differences is, for each row on which the proxies' values (those not
// NA) differ, a sentence naming each proxy's value, in Rows' order.
func Differences(cfgs map[string]manifest.ProxyConfig) []string {
	proxies := make([]string, 0, len(cfgs))
	for p := range cfgs {
		proxies = append(proxies, p)
	}
	slices.Sort(proxies)
	var out []string
	for _, row := range Rows {
		var parts []string
		seen := map[string]bool{}
		for _, p := range proxies {
			v, ok := cfgs[p].Values[row]
			if !ok || v.NA {
				continue
			}
			seen[v.Value] = true
			parts = append(parts, p+" "+v.Value)
		}
		if len(seen) > 1 {
			out = append(out, fmt.Sprintf("%s differs: %s", row, strings.Join(parts, ", ")))
		}
	}
	return out
}

// val and na make values.
func val(v, from string) manifest.ConfigValue { return manifest.ConfigValue{Value: v, From: from} }
func na(why string) manifest.ConfigValue {
	return manifest.ConfigValue{Value: "n/a", From: why, NA: true}
}

// fmtDur is a duration in the rows' form: "60s", "1m30s" as Go prints
// it but whole seconds as "Ns", "none" for zero.
func fmtDur(d time.Duration) string {
	switch {
	case d == 0:
		return "none"
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return d.String()
}

// tlsVersion is "1.2" from TLSv1.2, tls1.2, VersionTLS12, TLSv1_2 and
// the like; "" when s names none.
func tlsVersion(s string) string {
	s = strings.ToLower(s)
	for _, v := range []string{"1.3", "1_3", "13", "1.2", "1_2", "12", "1.1", "1_1", "11", "1.0", "1_0", "10"} {
		if strings.HasSuffix(s, v) {
			return v[:1] + "." + v[len(v)-1:]
		}
	}
	return ""
}

// distinct joins the values of a row read in several places (one per
// upstream): the value when all agree, else each with where it was.
func distinct(vals, wheres []string) (string, string) {
	if len(vals) == 0 {
		return "", ""
	}
	same := true
	for _, v := range vals {
		same = same && v == vals[0]
	}
	if same {
		return vals[0], fmt.Sprintf("%d of %d", len(vals), len(vals))
	}
	parts := make([]string, len(vals))
	for i := range vals {
		parts[i] = vals[i] + " (" + wheres[i] + ")"
	}
	return "mixed: " + strings.Join(parts, ", "), "per upstream"
}

// envOf is the value of name in a container's environment, "" when unset.
func envOf(ctr dockerx.Container, name string) string {
	for _, kv := range ctr.Env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

// goWorkers is a Go proxy's GOMAXPROCS as its process was started with.
func goWorkers(ctr dockerx.Container) manifest.ConfigValue {
	if v := envOf(ctr, "GOMAXPROCS"); v != "" {
		return val(v, "GOMAXPROCS in the process's environment")
	}
	return val("all CPUs", "no GOMAXPROCS: the Go runtime's default")
}
