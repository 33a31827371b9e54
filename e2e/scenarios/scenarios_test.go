//go:build e2e

package scenarios

import (
	"math"
	"strings"
	"testing"

	"proxybench/internal/manifest"
)

var allProxies = []string{"nginx", "haproxy", "traefik", "caddy"}

// notSupported is docs/scenarios.md's table for the scenarios some proxy
// cannot do natively: a cell there must be skipped as not applicable with
// a reason, never run and never silently dropped.
var notSupported = map[string]bool{"traefik.auth": true, "caddy.ratelimit": true, "nginx.h3": true, "haproxy.h3": true}

func checkSupport(t *testing.T, scenario string, ran map[string]struct{}, skipped map[string]manifest.Cell) {
	t.Helper()
	for _, p := range allProxies {
		id := p + ".fast." + scenario
		_, didRun := ran[id]
		c, wasSkipped := skipped[id]
		if notSupported[p+"."+scenario] {
			if !wasSkipped || c.Skip == nil || c.Skip.Kind != manifest.SkipNotApplicable || len(c.Skip.Reason) < 15 || c.Reason != c.Skip.Text() {
				t.Errorf("%s: want skipped as not applicable with a reason, got ran=%v skip=%+v reason=%q", id, didRun, c.Skip, c.Reason)
			}
			continue
		}
		if !didRun {
			t.Errorf("%s: did not run (skip %+v)", id, c.Skip)
		}
	}
}

func byScenario(t *testing.T, ran, skipped map[string]manifest.Cell, scenario string) map[string]manifest.Cell {
	t.Helper()
	out := map[string]manifest.Cell{}
	ids := map[string]struct{}{}
	sk := map[string]manifest.Cell{}
	for _, c := range ran {
		if c.Scenario == scenario {
			out[c.Proxy] = c
			ids[c.Proxy+".fast."+scenario] = struct{}{}
		}
	}
	for id, c := range skipped {
		parts := strings.Split(id, ".")
		if len(parts) > 2 && parts[2] == scenario {
			sk[parts[0]+".fast."+scenario] = c
		}
	}
	checkSupport(t, scenario, ids, sk)
	return out
}

// TestAuth: with 10 % invalid keys (half missing, half wrong) in open loop,
// every invalid key gets 401, no valid one does, and the request mix is the
// plan's.
func TestAuth(t *testing.T) {
	m := run(t, "-tier", "2s", "-proxies", "nginx,haproxy,traefik,caddy", "-scenarios", "auth",
		"-rate", "600", "-concurrency", "60", "-auth-invalid", "0.1")
	ran, skipped := cells(t, m)
	for proxy, c := range byScenario(t, ran, skipped, "auth") {
		noErrors(t, c, 0)
		sd := c.ScenarioData
		if sd == nil || len(sd.Variants) != 3 || sd.AuthWrong == nil {
			t.Fatalf("%s: no per-variant counts: %+v", proxy, sd)
		}
		var invalid, total int64
		for name, v := range sd.Variants {
			total += v.Requests
			for code, n := range v.Codes {
				switch {
				case v.Want == 401 && code != "401":
					t.Errorf("%s: %d requests with a %s key got %s, want 401", proxy, n, name, code)
				case v.Want == 200 && !strings.HasPrefix(code, "2"):
					t.Errorf("%s: %d requests with a valid key got %s, want 2xx", proxy, n, code)
				}
			}
			if v.Want == 401 {
				invalid += v.Requests
			}
			if v.Requests == 0 {
				t.Errorf("%s: variant %s sent nothing", proxy, name)
			}
		}
		if *sd.AuthWrong != 0 {
			t.Errorf("%s: auth_wrong %d, want 0", proxy, *sd.AuthWrong)
		}
		if c.Codes["401"] != invalid {
			t.Errorf("%s: %d 401s in the cell, %d invalid-key requests: 401s must be exactly the invalid keys", proxy, c.Codes["401"], invalid)
		}
		if share := float64(invalid) / float64(total); math.Abs(share-0.1) > 0.02 {
			t.Errorf("%s: invalid share %.3f of %d requests, plan says 0.1", proxy, share, total)
		}
	}
}

// TestRateLimit: offered 1500 req/s against a 1000 req/s limit, the
// accepted rate (less the burst) is within 10 % of the limit and the rest
// are 429s, not errors.
func TestRateLimit(t *testing.T) {
	m := run(t, "-tier", "3s", "-proxies", "nginx,haproxy,traefik,caddy", "-scenarios", "ratelimit", "-concurrency", "100")
	ran, skipped := cells(t, m)
	for proxy, c := range byScenario(t, ran, skipped, "ratelimit") {
		noErrors(t, c, 0)
		sd := c.ScenarioData
		if sd == nil || sd.LimitRPS != 1000 {
			t.Fatalf("%s: no rate-limit data: %+v", proxy, sd)
		}
		if math.Abs(sd.Precision-1) > 0.10 {
			t.Errorf("%s: precision %.3f (accepted %.0f req/s, limit %.0f, burst %.0f): want within 10%%", proxy, sd.Precision, sd.AcceptedRPS, sd.LimitRPS, sd.LimitBurst)
		}
		if ok, limited := ok2xx(c), c.Codes["429"]; ok+limited != c.Requests || limited == 0 {
			t.Errorf("%s: %d 2xx + %d 429 of %d requests: every request is accepted or limited, some limited", proxy, ok, limited, c.Requests)
		}
		// The loadgen must offer well above the limit (1500 req/s planned);
		// a slower proxy completes fewer within the window, which is fine.
		if sd.OfferedRPS < 1.2*sd.LimitRPS || c.Scheduled < int64(0.99*1500*c.DurationS) {
			t.Errorf("%s: offered %.0f req/s (%d scheduled in %.0f s): want clearly above the %.0f req/s limit", proxy, sd.OfferedRPS, c.Scheduled, c.DurationS, sd.LimitRPS)
		}
	}
}

// TestSlow: the origin's delay shows in the latency, nothing fails, and the
// proxy's memory was sampled while it held the connections.
func TestSlow(t *testing.T) {
	m := run(t, "-tier", "2s", "-proxies", "nginx,haproxy,traefik,caddy", "-scenarios", "slow",
		"-slow-delay", "1s", "-concurrency", "200", "-timeout", "10s")
	ran, skipped := cells(t, m)
	for proxy, c := range byScenario(t, ran, skipped, "slow") {
		noErrors(t, c, 0)
		// HdrHistogram keeps 3 significant figures: 1 s reads 0.999936 s.
		if c.Latency.Min < 0.999 || c.Latency.P50 > 1.3 {
			t.Errorf("%s: latency min %.4fs p50 %.4fs: want the 1 s delay recovered (min >= 0.999 s, p50 <= 1.3 s)", proxy, c.Latency.Min, c.Latency.P50)
		}
		sd := c.ScenarioData
		if sd == nil || sd.DelayS != 1 || sd.Memory == nil {
			t.Fatalf("%s: no slow data: %+v", proxy, sd)
		}
		mem := sd.Memory
		if mem.Unavailable != "" || mem.Samples < 4 || mem.IdleBytes <= 0 || mem.PeakBytes < mem.IdleBytes || mem.Held != 200 {
			t.Errorf("%s: memory not measured: %+v", proxy, mem)
		}
	}
}

// TestPayload: every 2xx carries the full body and bytes/s is body size x
// 2xx/s.
func TestPayload(t *testing.T) {
	m := run(t, "-tier", "1s", "-proxies", "nginx,haproxy,traefik,caddy", "-scenarios", "payload", "-concurrency", "10")
	ran, skipped := cells(t, m)
	for _, sc := range []string{"payload-1k", "payload-64k", "payload-1m", "upload-64k"} {
		for proxy, c := range byScenario(t, ran, skipped, sc) {
			// Traefik ends some keep-alive connections of 64 KiB POSTs before
			// the response (eof; 0.6-3.3 % on a 2-core VM, with the lean client and with
			// net/http alike): its finding, reported in docs/scenarios.md.
			// What this test checks is that bytes/s matches the 2xx.
			allowed := 0.0
			if proxy == "traefik" && sc == "upload-64k" {
				allowed = 0.05
			}
			noErrors(t, c, allowed)
			sd := fullBodies(t, proxy, c)
			if sc == "upload-64k" && sd.UploadBytes != 65536 {
				t.Errorf("%s upload: upload_bytes %d", proxy, sd.UploadBytes)
			}
		}
	}
}

// TestChurn: a new connection per request; connections/s is requests/s and
// the TIME_WAIT they leave at the proxy's port is counted.
func TestChurn(t *testing.T) {
	m := run(t, "-tier", "2s", "-proxies", "nginx,haproxy,traefik,caddy", "-scenarios", "churn", "-concurrency", "10")
	ran, skipped := cells(t, m)
	for proxy, c := range byScenario(t, ran, skipped, "churn") {
		noErrors(t, c, 0)
		sd := c.ScenarioData
		if sd == nil || sd.Churn == nil {
			t.Fatalf("%s: no churn data", proxy)
		}
		ch := sd.Churn
		rps := float64(c.Requests+c.Errors) / window(c)
		if math.Abs(ch.ConnsPerSec-rps) > 0.001*rps || rps < 100 {
			t.Errorf("%s: %.0f connections/s, %.0f requests/s: one connection per request", proxy, ch.ConnsPerSec, rps)
		}
		// TIME_WAIT lasts 60 s: most of the window's connections are still
		// in it, up to the ports connect() takes. Linux gives connect() the
		// even ports of the range first and, with tcp_tw_reuse on loopback,
		// reuses one in TIME_WAIT before it turns to the odd ones: 43,913
		// connections left 13,750 in TIME_WAIT with a range of 28,232 ports.
		held := min(float64(c.Requests), float64(ch.PortRangeHigh-ch.PortRangeLow+1)/2)
		if float64(ch.TimeWaitProxyPort) < 0.5*held || ch.PortRangeHigh <= ch.PortRangeLow || ch.PortPressure <= 0 {
			t.Errorf("%s: TIME_WAIT %d at the proxy port after %d connections, port range %d-%d, pressure %.3f",
				proxy, ch.TimeWaitProxyPort, c.Requests, ch.PortRangeLow, ch.PortRangeHigh, ch.PortPressure)
		}
	}
}
