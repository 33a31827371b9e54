// Package scenario owns what the loadgen and the reporter must agree on about
// a scenario by name: today, the response statuses each scenario expects.
// Any other status beyond a small share makes a cell unexpected_status, and
// only expected statuses count as goodput.
package scenario

import (
	"slices"
	"strings"
)

// expected lists the status classes ("2xx") or exact codes ("401") a
// scenario's responses may carry. A scenario missing here expects 2xx.
var expected = map[string][]string{
	"simple":    {"2xx"},
	"auth":      {"2xx", "401"}, // 401 only for the invalid-key variants (checked per variant as auth_wrong)
	"ratelimit": {"2xx", "429"}, // 429 only over the limit (checked as the precision of the limit)
}

// Expected returns the statuses scenario expects, most common first.
func Expected(name string) []string {
	if e, ok := expected[name]; ok {
		return slices.Clone(e)
	}
	return []string{"2xx"}
}

// Matches says whether the status code (e.g. "404") is one of exp: a
// class such as "2xx" matches any three-digit code starting with its digit.
func Matches(code string, exp []string) bool {
	for _, e := range exp {
		if e == code {
			return true
		}
		if len(e) == 3 && strings.HasSuffix(e, "xx") && len(code) == 3 && code[0] == e[0] {
			return true
		}
	}
	return false
}
