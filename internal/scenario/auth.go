package scenario

import (
	"net/http"
	"strconv"

	"proxybench/internal/manifest"
)

// What the proxies' /auth/ routes enforce (compose/{nginx,haproxy,traefik,
// caddy}/): change them together. TestProxyConfigsMatchTable reads the
// configs and fails when they drift apart.
const (
	APIKeyHeader = "X-Api-Key"
	WrongAPIKey  = "pb-key-wrong"
)

// ValidAPIKeys pass the auth routes; everything else gets 401.
var ValidAPIKeys = []string{"pb-key-1", "pb-key-2", "pb-key-3", "pb-key-4"}

// auth sends valid, missing and wrong API keys side by side, each variant
// counted apart; it is correct when every request got the answer its key
// deserves (AuthWrong 0).
var auth = Scenario{
	Name:  "auth",
	About: "API key in X-Api-Key checked by the proxy itself under /auth/<origin>/: a wrong or missing key gets 401",
	Rank:  20,
	NA: map[string]string{"traefik": "no native API-key check: Traefik has basicAuth and forwardAuth " +
		"(an external auth service) only; a header check needs a plugin the official image lacks"},
	Method:    http.MethodGet,
	Path:      func(o string, _ Settings) string { return "/auth/" + o + "/" },
	Variants:  authVariants,
	Expected:  []string{"2xx", "401"}, // 401 only for the invalid-key variants (checked per variant as auth_wrong)
	Account:   authAccount,
	Report:    authTable,
	Wrong:     authWrong,
	WrongWhat: "a 401 to a valid key or a 2xx to an invalid one",
}

var authExpected = []string{"2xx", "401"}

func init() { register(&auth) }

// authVariants splits the traffic: valid keys, and the invalid share of the
// plan half without a key, half with a wrong one.
func authVariants(set Settings) []Variant {
	bad := set.AuthInvalid
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

// authAccount counts each variant of a mix apart and the requests answered
// against their key; a cell of one variant (no invalid keys) has none.
func authAccount(sh Shape, n Counts) *manifest.ScenarioData {
	if len(sh.Variants) < 2 {
		return nil
	}
	d := manifest.ScenarioData{Variants: map[string]manifest.VariantCount{}}
	var wrong int64
	for _, v := range sh.Variants {
		vc := manifest.VariantCount{Share: v.Share, Want: v.Want, Codes: map[string]int64{}}
		if res, ok := n.Variants[v.Name]; ok {
			vc.Requests, vc.Errors = res.Requests, res.Errors
			for code, k := range res.Codes {
				vc.Codes[strconv.Itoa(code)] = k
				if !answers(v.Want, code) {
					wrong += k
				}
			}
		}
		d.Variants[v.Name] = vc
	}
	d.AuthWrong = &wrong
	return &d
}

// authWrong counts the expected statuses that answered the wrong key: a
// 401 to a valid key, a 2xx to a missing or wrong one. (A 5xx or another
// status is no goodput anyway, and judged by errors or unexpected_status.)
func authWrong(d *manifest.ScenarioData, _ float64) int64 {
	if d == nil {
		return 0
	}
	var n int64
	for _, v := range d.Variants {
		for code, k := range v.Codes {
			c, err := strconv.Atoi(code)
			if err == nil && Matches(code, authExpected) && !answers(v.Want, c) {
				n += k
			}
		}
	}
	return n
}

// answers says whether a status code is the one a variant must get: any
// 2xx for a valid key, exactly the wanted code otherwise.
func answers(want, code int) bool {
	if want >= 200 && want < 300 {
		return code >= 200 && code < 300
	}
	return code == want
}

var authTable = &Table{
	Caption: "auth: API key checked by the proxy (401 exactly for invalid keys)",
	Header:  []string{"cell", "requests", "valid → 2xx", "missing key → 401", "wrong key → 401", "answered wrongly", "invalid share", "correct"},
	Right:   []bool{false, true, true, true, true, true, true, false},
	Notes:   []string{"Open loop: the mix is the plan's share of requests; closed loop: its share of connections (a 401 returns faster, so invalid keys make up more of the requests)."},
	Row:     authRow,
}

func authRow(c ReportCell, f Format) ([]Field, bool) {
	sd := c.Data
	if sd == nil || len(sd.Variants) == 0 {
		return nil, false
	}
	var total, invalid int64
	for _, v := range sd.Variants {
		total += v.Requests + v.Errors
		if v.Want == http.StatusUnauthorized {
			invalid += v.Requests + v.Errors
		}
	}
	wrong := int64(-1)
	if sd.AuthWrong != nil {
		wrong = *sd.AuthWrong
	}
	share := nan
	if total > 0 {
		share = float64(invalid) / float64(total)
	}
	return []Field{text(c.Name), text(f.Int(total)),
		text(variantLine(f, sd.Variants["valid"], "2xx")), text(variantLine(f, sd.Variants["missing"], "401")),
		text(variantLine(f, sd.Variants["wrong"], "401")), text(f.Int(wrong)),
		text(f.Pct(share)), verdict(wrong == 0)}, true
}

// variantLine is "answered / sent" for one variant: how many got the
// answer their key deserves.
func variantLine(f Format, v manifest.VariantCount, want string) string {
	if v.Requests+v.Errors == 0 {
		return "–"
	}
	var right int64
	for code, n := range v.Codes {
		c, _ := strconv.Atoi(code)
		if (want == "2xx" && c >= 200 && c < 300) || code == want {
			right += n
		}
	}
	return f.Int(right) + " / " + f.Int(v.Requests+v.Errors)
}
