package plan

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// What the proxies' scenario routes enforce (compose/{nginx,haproxy,traefik,
// caddy}/): change them together. TestProxyConfigsMatchTable reads the
// configs and fails when they drift apart.
const (
	APIKeyHeader   = "X-Api-Key"
	WrongAPIKey    = "pb-key-wrong"
	RateLimitRPS   = 1000 // per API key
	RateLimitBurst = 50   // extra requests a full bucket lets through at once
	// RateLimitKey is the one key a ratelimit cell sends: the limit is per key.
	RateLimitKey = "pb-key-1"
)

// ValidAPIKeys pass the auth routes; everything else gets 401.
var ValidAPIKeys = []string{"pb-key-1", "pb-key-2", "pb-key-3", "pb-key-4"}

// Limits on the plan's scenario settings.
const (
	MaxSlowDelay = 20 * time.Second // 2 s by default, up to 20 s
)

// Variant is one part of a cell's traffic mix (the auth scenario sends valid,
// missing and wrong keys side by side). Each variant is counted apart so the
// report can check every request got the answer its key deserves.
type Variant struct {
	Name   string      `json:"name"`  // bounded: valid, missing, wrong
	Share  float64     `json:"share"` // of the cell's rate (open) or connections (closed)
	Want   int         `json:"want"`  // status class the proxy must answer: 200 (any 2xx) or 401
	Header http.Header `json:"-"`
}

// Scenario is one kind of traffic a cell sends. New scenarios are rows of
// Scenarios: a path on the proxy, headers, body, connection handling and,
// when the scenario needs it, a fixed load model and a traffic mix.
type Scenario struct {
	Name  string
	About string
	// NotReady, when set, says why cells of this scenario are skipped.
	NotReady string
	// NA lists the proxies that cannot do this natively (no plugin the
	// official image lacks): their cells are skipped as "n/a: <reason>".
	NA map[string]string

	Method            string                              // default GET
	Path              func(origin string, p *Plan) string // path on the proxy, from '/'
	Header            http.Header
	Body              []byte
	NewConnPerRequest bool  // a fresh TCP connection for every request
	BodyBytes         int64 // response body bytes every 2xx must carry (0: not checked)

	// Variants, when set, is the traffic mix; otherwise one variant with Header.
	Variants func(p *Plan) []Variant
	// OpenRate, when set, fixes an open loop at this rate whatever the
	// plan's load model (the rate limit must be offered more than it allows).
	OpenRate func(p *Plan) float64
	// Limit is the configured rate limit (requests/s) and burst the cell is judged against.
	Limit, Burst float64
	// HoldsConnections: each request waits upstream, so concurrency is the
	// number of connections the proxy holds (memory per connection is measured).
	HoldsConnections bool
}

// Scenarios is the table of scenarios; only ready ones send traffic, the
// others are planned and skipped with their reason.
var Scenarios = []Scenario{
	{
		Name:   "simple",
		About:  "GET / through the proxy over keep-alive connections",
		Method: http.MethodGet,
		Path:   func(o string, _ *Plan) string { return "/" + o + "/" },
	},
	{
		Name:  "auth",
		About: "API key in X-Api-Key checked by the proxy itself under /auth/<origin>/: a wrong or missing key gets 401",
		NA: map[string]string{"traefik": "no native API-key check: Traefik has basicAuth and forwardAuth " +
			"(an external auth service) only; a header check needs a plugin the official image lacks"},
		Method:   http.MethodGet,
		Path:     func(o string, _ *Plan) string { return "/auth/" + o + "/" },
		Variants: authVariants,
	},
	{
		Name: "ratelimit",
		About: fmt.Sprintf("per-key rate limit (%d req/s, burst %d) under /rl/<origin>/, offered more than the limit in open loop",
			RateLimitRPS, RateLimitBurst),
		NA: map[string]string{"caddy": "no native rate limit: rate limiting is the third-party " +
			"caddy-ratelimit plugin, absent from the standard build"},
		Method:   http.MethodGet,
		Path:     func(o string, _ *Plan) string { return "/rl/" + o + "/" },
		Header:   http.Header{APIKeyHeader: {RateLimitKey}},
		OpenRate: func(p *Plan) float64 { return p.RateLimitOffered },
		Limit:    RateLimitRPS, Burst: RateLimitBurst,
	},
	{
		Name:   "slow",
		About:  "slow upstream: GET /delay/<slow_delay>; concurrency = connections the proxy holds",
		Method: http.MethodGet,
		Path: func(o string, p *Plan) string {
			return "/" + o + "/delay/" + strconv.FormatInt(time.Duration(p.SlowDelay).Milliseconds(), 10)
		},
		HoldsConnections: true,
	},
	payloadRow("payload-1k", 1<<10),
	payloadRow("payload-64k", 64<<10),
	payloadRow("payload-1m", 1<<20),
	{
		Name:      "upload-64k",
		About:     "POST /echo with a 64 KiB body, echoed back",
		Method:    http.MethodPost,
		Path:      func(o string, _ *Plan) string { return "/" + o + "/echo" },
		Header:    http.Header{"Content-Type": {"application/octet-stream"}},
		Body:      payload(64 << 10),
		BodyBytes: 64 << 10,
	},
	{
		Name:              "churn",
		About:             "a new TCP connection for every request (Connection: close)",
		Method:            http.MethodGet,
		Path:              func(o string, _ *Plan) string { return "/" + o + "/" },
		NewConnPerRequest: true,
	},
}

// ScenarioGroups are names that stand for several scenarios in a plan.
var ScenarioGroups = map[string][]string{
	"payload": {"payload-1k", "payload-64k", "payload-1m", "upload-64k"},
	"all":     {"simple", "auth", "ratelimit", "slow", "payload-1k", "payload-64k", "payload-1m", "upload-64k", "churn"},
}

func payloadRow(name string, n int64) Scenario {
	return Scenario{
		Name:      name,
		About:     fmt.Sprintf("GET /bytes/%d: a %s response body", n, humanBytes(n)),
		Method:    http.MethodGet,
		Path:      func(o string, _ *Plan) string { return "/" + o + "/bytes/" + strconv.FormatInt(n, 10) },
		BodyBytes: n,
	}
}

// payload is the origins' /bytes pattern, so an echoed upload can be told
// from any other body.
func payload(n int) []byte {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[i%len(alphabet)]
	}
	return b
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

// authVariants splits the traffic: valid keys, and the invalid share of the
// plan half without a key, half with a wrong one.
func authVariants(p *Plan) []Variant {
	bad := p.AuthInvalid
	valid := Variant{Name: "valid", Share: 1 - bad, Want: http.StatusOK, Header: http.Header{APIKeyHeader: {ValidAPIKeys[1]}}}
	missing := Variant{Name: "missing", Share: bad / 2, Want: http.StatusUnauthorized, Header: http.Header{}}
	wrong := Variant{Name: "wrong", Share: bad / 2, Want: http.StatusUnauthorized, Header: http.Header{APIKeyHeader: {WrongAPIKey}}}
	var out []Variant
	for _, v := range []Variant{valid, missing, wrong} {
		if v.Share > 0 {
			out = append(out, v)
		}
	}
	return out
}

// VariantsFor is the traffic mix of a scenario under p: its Variants, or one
// "all" variant carrying the scenario's Header.
func (s Scenario) VariantsFor(p *Plan) []Variant {
	if s.Variants != nil {
		return s.Variants(p)
	}
	return []Variant{{Name: "all", Share: 1, Header: s.Header}}
}

// Support says whether proxy can run the scenario: "" when it can, else why not.
func (s Scenario) Support(proxy string) string { return s.NA[proxy] }

// LookupScenario finds a scenario by name.
func LookupScenario(name string) (Scenario, error) {
	var names []string
	for _, s := range Scenarios {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	for g := range ScenarioGroups {
		names = append(names, g+" (group)")
	}
	slices.Sort(names[len(Scenarios):])
	return Scenario{}, fmt.Errorf("unknown scenario %q (known: %s)", name, strings.Join(names, ", "))
}

// expandGroups replaces group names by their scenarios in order, skipping
// members already listed, so "-scenarios simple,payload" is five scenarios.
func expandGroups(names []string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, n := range names {
		if g, ok := ScenarioGroups[n]; ok {
			for _, m := range g {
				add(m)
			}
			continue
		}
		seen[n] = true
		out = append(out, n) // a name given twice stays twice: Validate names it
	}
	return out
}
