package proxyconf

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"proxybench/internal/dockerx"
	"proxybench/internal/manifest"
	"proxybench/internal/stack"
)

// apiGet asks a proxy's own API from inside its container (the lab's
// pbhealth get, mounted in every container) and decodes the JSON answer.
func apiGet(ctx context.Context, e Engine, ctr dockerx.Container, url string, into any) error {
	out, err := e.Exec(ctx, ctr.ID, "/pbhealth", "get", url)
	if err != nil {
		return err
	}
	if err := json.Unmarshal([]byte(out), into); err != nil {
		return fmt.Errorf("%s: %w: %.200q", url, err, out)
	}
	return nil
}

// jsonDur reads a duration the APIs write as a string ("1m0s", "60s") or
// as a number of nanoseconds.
func jsonDur(raw json.RawMessage) (time.Duration, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return time.Duration(n) * time.Second, true
		}
		d, err := time.ParseDuration(s)
		return d, err == nil
	}
	var n int64
	if json.Unmarshal(raw, &n) == nil {
		return time.Duration(n), true
	}
	return 0, false
}

// durRow is a duration row from a JSON field, or the proxy's default.
func durRow(raw json.RawMessage, field, def string) manifest.ConfigValue {
	if d, ok := jsonDur(raw); ok {
		return val(fmtDur(d), field+" "+string(raw))
	}
	return val(def, "default "+field)
}

// traefikAPI is the API's base inside the container: the metrics
// entrypoint, where compose/traefik routes api@internal.
func traefikAPI() (string, error) {
	p, err := stack.LookupProxy("traefik")
	if err != nil || !strings.HasSuffix(p.Metrics, "/metrics") {
		return "", fmt.Errorf("traefik's API: no metrics entrypoint in internal/stack")
	}
	return strings.TrimSuffix(p.Metrics, "/metrics") + "/api", nil
}

// caddyAdmin is Caddy's admin API's /config/ inside the container.
func caddyAdmin() (string, error) {
	p, err := stack.LookupProxy("caddy")
	if err != nil || len(p.Admin) == 0 {
		return "", fmt.Errorf("caddy's admin API: no admin port in internal/stack")
	}
	return fmt.Sprintf("http://127.0.0.1:%d/config/", p.Admin[0]), nil
}

// TraefikAnswers are the API's answers the rows come from.
type TraefikAnswers struct {
	EntryPoints []struct {
		Name      string `json:"name"`
		Transport struct {
			RespondingTimeouts struct {
				IdleTimeout json.RawMessage `json:"idleTimeout"`
			} `json:"respondingTimeouts"`
		} `json:"transport"`
	}
	Overview struct {
		Features struct {
			AccessLog bool `json:"accessLog"`
		} `json:"features"`
	}
	Middlewares []struct {
		Name   string          `json:"name"`
		Type   string          `json:"type"`
		Status string          `json:"status"`
		Buffer json.RawMessage `json:"buffering"`
	}
}

func readTraefik(ctx context.Context, e Engine, ctr dockerx.Container) (manifest.ProxyConfig, error) {
	base, err := traefikAPI()
	if err != nil {
		return manifest.ProxyConfig{}, err
	}
	pc := manifest.ProxyConfig{Source: "Traefik's API (" + base + "/entrypoints, /overview, /http/middlewares)"}
	var a TraefikAnswers
	for _, q := range []struct {
		path string
		into any
	}{{"/entrypoints", &a.EntryPoints}, {"/overview", &a.Overview}, {"/http/middlewares", &a.Middlewares}} {
		if err := apiGet(ctx, e, ctr, base+q.path, q.into); err != nil {
			return pc, fmt.Errorf("traefik's API (compose/traefik routes api@internal on the metrics entrypoint): %w", err)
		}
	}
	pc.Values = ParseTraefik(&a, goWorkers(ctr))
	return pc, nil
}

// ParseTraefik reads the parity rows from Traefik's API answers;
// Traefik's defaults fill what it does not report.
func ParseTraefik(a *TraefikAnswers, workers manifest.ConfigValue) map[string]manifest.ConfigValue {
	v := map[string]manifest.ConfigValue{Workers: workers}
	// The static serversTransport (the upstream pool and its timeouts) is
	// in no answer of Traefik 3's API.
	for _, row := range []string{UpstreamPool, ConnectTimeout, ResponseTimeout} {
		v[row] = na("Traefik's API does not report the static serversTransport")
	}
	v[ClientIdle] = val("180s", "default idleTimeout")
	var idles, where []string
	for _, ep := range a.EntryPoints {
		if ep.Name == "metrics" || ep.Name == "traefik" {
			continue
		}
		d := durRow(ep.Transport.RespondingTimeouts.IdleTimeout, "idleTimeout", "180s")
		idles, where = append(idles, d.Value), append(where, ep.Name)
	}
	if x, from := distinct(idles, where); x != "" {
		v[ClientIdle] = val(x, "respondingTimeouts.idleTimeout of "+from+" entrypoints")
	}
	buffered := []string{}
	for _, m := range a.Middlewares {
		if strings.EqualFold(m.Type, "buffering") && m.Status == "enabled" {
			buffered = append(buffered, m.Name)
		}
	}
	if len(buffered) > 0 {
		v[RequestBuffering] = val("on", "buffering middleware "+strings.Join(buffered, ", "))
		v[ResponseBuffering] = val("on", "buffering middleware "+strings.Join(buffered, ", "))
	} else {
		v[RequestBuffering] = val("off", "no buffering middleware")
		v[ResponseBuffering] = val("off", "no buffering middleware")
	}
	if a.Overview.Features.AccessLog {
		v[AccessLog] = val("on", "overview: accessLog")
	} else {
		v[AccessLog] = val("off", "overview: no accessLog")
	}
	v[TLSMin] = na("Traefik's API does not report TLS options")
	return v
}

func readCaddy(ctx context.Context, e Engine, ctr dockerx.Container) (manifest.ProxyConfig, error) {
	url, err := caddyAdmin()
	if err != nil {
		return manifest.ProxyConfig{}, err
	}
	pc := manifest.ProxyConfig{Source: "Caddy's admin API (" + url + ")"}
	var cfg CaddyConfig
	if err := apiGet(ctx, e, ctr, url, &cfg); err != nil {
		return pc, fmt.Errorf("caddy's admin API: %w", err)
	}
	pc.Values, err = ParseCaddy(&cfg, goWorkers(ctr))
	return pc, err
}

// CaddyConfig is the part of Caddy's JSON configuration the rows come
// from; the routes are walked as raw JSON for their reverse_proxy
// handlers.
type CaddyConfig struct {
	Apps struct {
		HTTP struct {
			Servers map[string]struct {
				Listen      []string          `json:"listen"`
				IdleTimeout json.RawMessage   `json:"idle_timeout"`
				Routes      json.RawMessage   `json:"routes"`
				Logs        json.RawMessage   `json:"logs"`
				TLSPolicies []json.RawMessage `json:"tls_connection_policies"`
			} `json:"servers"`
		} `json:"http"`
	} `json:"apps"`
}

// caddyProxy is a reverse_proxy handler's settings.
type caddyProxy struct {
	Transport struct {
		KeepAlive struct {
			MaxIdlePerHost *int `json:"max_idle_conns_per_host"`
		} `json:"keep_alive"`
		DialTimeout           json.RawMessage `json:"dial_timeout"`
		ResponseHeaderTimeout json.RawMessage `json:"response_header_timeout"`
	} `json:"transport"`
	RequestBuffers  int64           `json:"request_buffers"`
	ResponseBuffers int64           `json:"response_buffers"`
	Upstreams       []caddyUpstream `json:"upstreams"`
}

type caddyUpstream struct {
	Dial string `json:"dial"`
}

// faultsPool says whether p proxies to the faults scenario's pool, whose
// timeouts are its own (docs/faults.md), not the parity rows'.
func (p caddyProxy) faultsPool() bool {
	replica := fmt.Sprintf("%s:%d", stack.FaultReplica.Service, stack.FaultReplica.Port)
	return slices.ContainsFunc(p.Upstreams, func(u caddyUpstream) bool { return u.Dial == replica })
}

// reverseProxies finds every reverse_proxy handler in a JSON tree.
func reverseProxies(raw json.RawMessage, out *[]caddyProxy) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil {
		if h, ok := obj["handler"]; ok && string(h) == `"reverse_proxy"` {
			var p caddyProxy
			if json.Unmarshal(raw, &p) == nil && !p.faultsPool() {
				*out = append(*out, p)
			}
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			reverseProxies(obj[k], out)
		}
		return
	}
	var arr []json.RawMessage
	if json.Unmarshal(raw, &arr) == nil {
		for _, x := range arr {
			reverseProxies(x, out)
		}
	}
}

// ParseCaddy reads the parity rows from Caddy's configuration: the
// servers that proxy (those with reverse_proxy handlers) and their
// handlers; Caddy's defaults fill what it does not set.
func ParseCaddy(cfg *CaddyConfig, workers manifest.ConfigValue) (map[string]manifest.ConfigValue, error) {
	v := map[string]manifest.ConfigValue{Workers: workers}
	var proxies []caddyProxy
	var idles, where []string
	logged, tlsMin := "", ""
	names := make([]string, 0, len(cfg.Apps.HTTP.Servers))
	for n := range cfg.Apps.HTTP.Servers {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		s := cfg.Apps.HTTP.Servers[n]
		var ps []caddyProxy
		reverseProxies(s.Routes, &ps)
		if len(ps) == 0 {
			continue
		}
		proxies = append(proxies, ps...)
		d := durRow(s.IdleTimeout, "idle_timeout", "300s")
		idles, where = append(idles, d.Value), append(where, strings.Join(s.Listen, " "))
		if len(s.Logs) > 0 && string(s.Logs) != "null" && logged == "" {
			logged = strings.Join(s.Listen, " ")
		}
		for _, p := range s.TLSPolicies {
			var pol struct {
				ProtocolMin string `json:"protocol_min"`
			}
			if json.Unmarshal(p, &pol) == nil {
				m := "1.2" // Caddy's default
				if pol.ProtocolMin != "" {
					m = tlsVersion(pol.ProtocolMin)
				}
				if tlsMin == "" || m < tlsMin {
					tlsMin = m
				}
			}
		}
	}
	if len(proxies) == 0 {
		return nil, fmt.Errorf("caddy's configuration has no reverse_proxy handler")
	}
	x, from := distinct(idles, where)
	v[ClientIdle] = val(x, "idle_timeout of "+from+" proxying servers")
	var pools, dials, resps []string
	var reqBuf, respBuf bool
	for _, p := range proxies {
		pool := "32"
		if m := p.Transport.KeepAlive.MaxIdlePerHost; m != nil {
			pool = strconv.Itoa(*m)
		}
		pools = append(pools, pool)
		dials = append(dials, durRow(p.Transport.DialTimeout, "dial_timeout", "3s").Value)
		resps = append(resps, durRow(p.Transport.ResponseHeaderTimeout, "response_header_timeout", "none").Value)
		reqBuf = reqBuf || p.RequestBuffers != 0
		respBuf = respBuf || p.ResponseBuffers != 0
	}
	w := make([]string, len(proxies))
	for i := range w {
		w[i] = fmt.Sprintf("handler %d", i+1)
	}
	x, from = distinct(pools, w)
	v[UpstreamPool] = val(x, "keep_alive max_idle_conns_per_host of "+from+" reverse_proxy handlers")
	x, from = distinct(dials, w)
	v[ConnectTimeout] = val(x, "dial_timeout of "+from+" reverse_proxy handlers")
	x, from = distinct(resps, w)
	v[ResponseTimeout] = val(x, "response_header_timeout of "+from+" reverse_proxy handlers")
	onOff := func(b bool, field string) manifest.ConfigValue {
		if b {
			return val("on", field+" set")
		}
		return val("off", "no "+field)
	}
	v[RequestBuffering] = onOff(reqBuf, "request_buffers")
	v[ResponseBuffering] = onOff(respBuf, "response_buffers")
	if logged != "" {
		v[AccessLog] = val("on", "logs on the server at "+logged)
	} else {
		v[AccessLog] = val("off", "no server logs")
	}
	if tlsMin != "" {
		v[TLSMin] = val(tlsMin, "tls_connection_policies protocol_min")
	} else {
		v[TLSMin] = na("no TLS server")
	}
	return v, nil
}
