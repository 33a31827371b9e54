// Package stack owns the fixed facts of the lab that every part agrees on:
// the proxies and origins, their compose service names, ports and routes.
// docs/design-notes.md describes them; change both together.
package stack

import (
	"fmt"
	"strings"
)

// Proxy is one reverse proxy under test.
type Proxy struct {
	Name    string // label value and compose service name
	Port    int    // traffic port on 127.0.0.1: cleartext HTTP/1.1
	TLSPort int    // the same routes over TLS (h2, http/1.1; h3 on UDP where the proxy has it)
	HTTP3   bool   // it answers HTTP/3 on UDP TLSPort
	Go      bool   // a Go program: gctrace is parsed for it
	Metrics string // its own metrics endpoint, "" when none
	Admin   []int  // other ports its config binds (an admin API)
}

// Origin is one upstream server sharing the origin contract.
type Origin struct {
	Name    string // label value and route prefix: /<name>/...
	Service string // compose service name
	Port    int
}

// Proxies lists the proxies in the order a run visits them.
var Proxies = []Proxy{
	{Name: "nginx", Port: 8882, TLSPort: 9882, Metrics: "http://127.0.0.1:8982/stub_status"},
	{Name: "haproxy", Port: 8885, TLSPort: 9885, Metrics: "http://127.0.0.1:8985/metrics"},
	{Name: "traefik", Port: 8883, TLSPort: 9883, HTTP3: true, Go: true, Metrics: "http://127.0.0.1:8983/metrics"},
	{Name: "caddy", Port: 8884, TLSPort: 9884, HTTP3: true, Go: true, Metrics: "http://127.0.0.1:8984/metrics", Admin: []int{2019}},
	{Name: "custom", Port: 8881, TLSPort: 9881},
}

// Origins lists the four origins.
var Origins = []Origin{
	{Name: "node", Service: "origin-node", Port: 9101},
	{Name: "python", Service: "origin-python", Port: 9102},
	{Name: "go", Service: "origin-go", Port: 9103},
	{Name: "fast", Service: "origin-fast", Port: 9104},
}

// The faults scenario's pool (docs/faults.md): two replicas of the fast
// origin behind every proxy's FaultsRoute, origin-fast (Origins) and
// FaultReplica, the one the lab faults: same image and X-Origin, its own
// service and port.
const (
	FaultsOrigin = "fast"
	FaultsRoute  = "/faults/" + FaultsOrigin + "/"
	// FaultsPool names the pool in the proxies' configs (nginx's upstream,
	// HAProxy's backend, Traefik's service and serversTransport). Its
	// timeouts are the scenario's own (1 s), not the parity rows'.
	FaultsPool = "faults"
)

// FaultReplica is the pool's second replica, the one faults are injected into.
var FaultReplica = Origin{Name: FaultsOrigin, Service: "origin-fast-b", Port: 9105}

// DefaultProxies are the proxies a run covers when none are named: the
// custom slot is opt-in.
func DefaultProxies() []string { return []string{"nginx", "haproxy", "traefik", "caddy"} }

// DefaultOrigins are all four origins.
func DefaultOrigins() []string { return names(Origins, func(o Origin) string { return o.Name }) }

// LookupProxy finds a proxy by name.
func LookupProxy(name string) (Proxy, error) {
	for _, p := range Proxies {
		if p.Name == name {
			return p, nil
		}
	}
	return Proxy{}, fmt.Errorf("unknown proxy %q (known: %s)", name, strings.Join(names(Proxies, func(p Proxy) string { return p.Name }), ", "))
}

// LookupOrigin finds an origin by name.
func LookupOrigin(name string) (Origin, error) {
	for _, o := range Origins {
		if o.Name == name {
			return o, nil
		}
	}
	return Origin{}, fmt.Errorf("unknown origin %q (known: %s)", name, strings.Join(DefaultOrigins(), ", "))
}

// Direct is the pseudo-proxy of the direct control cells: no proxy at
// all, the loadgen straight to an origin's own host port (Origin.Port),
// asking for the path the proxies' route /<origin>/<rest> forwards
// (/<rest>). It is no entry of Proxies: nothing of it runs, is paused,
// scraped or configured, and it wins nothing.
const Direct = "direct"

// IsDirect says whether proxy names the direct control.
func IsDirect(proxy string) bool { return proxy == Direct }

// DirectURL is the base URL of origin's own port on 127.0.0.1.
func DirectURL(o Origin) string { return fmt.Sprintf("http://127.0.0.1:%d", o.Port) }

// OriginPath is the path origin itself answers for path on a proxy: the
// route /<origin>/<rest> forwards /<rest>. ok is false for a route a
// proxy feature answers (/auth/<origin>/..., the rate limit's): it has no
// direct equivalent.
func OriginPath(origin, path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, "/"+origin+"/")
	return "/" + rest, ok
}

// TLSURL is the address of path on origin through proxy's TLS port.
func TLSURL(p Proxy, origin, path string) string {
	return fmt.Sprintf("https://127.0.0.1:%d/%s%s", p.TLSPort, origin, path)
}

func names[T any](xs []T, f func(T) string) []string {
	out := make([]string, 0, len(xs))
	for _, x := range xs {
		out = append(out, f(x))
	}
	return out
}

// How Prometheus finds the loadgen workers of `loadgen run -loadgens N`
// (their ports change every run): the coordinator writes their addresses
// into WorkerTargetsFile in WorkerTargetsDir (relative to the repository
// root; compose mounts the directory at /etc/prometheus/targets, and both
// scrape configs read targets/*.json there with file_sd under job
// WorkerJob) while they run.
const (
	WorkerJob         = "loadgen_worker"
	WorkerTargetsDir  = "prometheus/targets"
	WorkerTargetsFile = "loadgen-workers.json"
)

// ExporterService is the compose service of the exporter: on a Docker
// Swarm a global service, so its image is on every node (the loadgen
// workers of `-launch swarm` run in it).
const ExporterService = "exporter"

// The duet's candidate (make duet CANDIDATE_IMAGE / CANDIDATE_CONFIG) runs
// beside its proxy as a second container of the same limits, under the
// compose service CandidateService(proxy), on the proxy's ports shifted by
// CandidateShift (the loadgen moves them in the candidate's config).
const CandidateShift = 10000

// CandidateService is the compose service name of proxy's candidate.
func CandidateService(proxy string) string { return proxy + "-candidate" }

// Listeners are every TCP and UDP port the proxy's config binds: traffic,
// TLS, its metrics or status endpoint, and any admin API.
func (p Proxy) Listeners() []int {
	out := []int{p.Port, p.TLSPort}
	if m := p.Metrics; m != "" {
		var port int
		if _, err := fmt.Sscanf(m[strings.LastIndex(m, ":")+1:], "%d", &port); err == nil && port != p.Port {
			out = append(out, port)
		}
	}
	return append(out, p.Admin...)
}
