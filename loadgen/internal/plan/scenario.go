package plan

import (
	"fmt"
	"net/http"
	"strings"
)

// Scenario is one kind of traffic a cell sends. New scenarios are rows of
// Scenarios: a path on the proxy, headers, body, connection handling and,
// when the scenario needs it, a fixed load model.
type Scenario struct {
	Name  string
	About string
	// NotReady, when set, says why cells of this scenario are skipped.
	NotReady string

	Method            string                     // default GET
	Path              func(origin string) string // path on the proxy, from '/'
	Header            http.Header
	Body              []byte
	NewConnPerRequest bool // a fresh TCP connection for every request
}

// Scenarios is the table of scenarios; only ready ones send traffic, the
// others are planned and skipped with their reason.
var Scenarios = []Scenario{
	{
		Name:   "simple",
		About:  "GET / through the proxy over keep-alive connections",
		Method: http.MethodGet,
		Path:   func(o string) string { return "/" + o + "/" },
	},
	{Name: "auth", About: "API key checked by the proxy (X-Api-Key) under /auth/<origin>/", NotReady: "scenario auth is not implemented yet (issue 8)",
		Path: func(o string) string { return "/auth/" + o + "/" }},
	{Name: "ratelimit", About: "per-key rate limit under /rl/<origin>/", NotReady: "scenario ratelimit is not implemented yet (issue 8)",
		Path: func(o string) string { return "/rl/" + o + "/" }},
	{Name: "slow", About: "slow upstream: GET /delay/100", NotReady: "scenario slow is not implemented yet (issue 8)",
		Path: func(o string) string { return "/" + o + "/delay/100" }},
	{Name: "payload", About: "large responses: GET /bytes/65536", NotReady: "scenario payload is not implemented yet (issue 8)",
		Path: func(o string) string { return "/" + o + "/bytes/65536" }},
	{Name: "churn", About: "a new connection for every request", NotReady: "scenario churn is not implemented yet (issue 8)",
		Path: func(o string) string { return "/" + o + "/" }, NewConnPerRequest: true},
}

// LookupScenario finds a scenario by name.
func LookupScenario(name string) (Scenario, error) {
	var names []string
	for _, s := range Scenarios {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	return Scenario{}, fmt.Errorf("unknown scenario %q (known: %s)", name, strings.Join(names, ", "))
}
