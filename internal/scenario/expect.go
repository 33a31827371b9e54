package scenario

import (
	"slices"
	"strings"
)

// Statuses are the statuses s expects, most common first: any other
// status beyond a small share makes a cell unexpected_status, and only
// expected statuses count as goodput. A nil s expects 2xx.
func (s *Scenario) Statuses() []string {
	if s == nil || len(s.Expected) == 0 {
		return []string{"2xx"}
	}
	return slices.Clone(s.Expected)
}

// Expected returns the statuses the scenario called name expects (2xx for
// a name not in the registry).
func Expected(name string) []string { return Get(name).Statuses() }

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
