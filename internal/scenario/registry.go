package scenario

import (
	"fmt"
	"slices"
	"strings"

	"proxybench/internal/manifest"
)

// All is "all": the group of every scenario.
const All = "all"

// registry holds every scenario in Rank order.
var registry []*Scenario

// register adds s from its file's init. A name, group or rank given twice
// is a programming error.
func register(s *Scenario) {
	if s.Name == "" || s.Path == nil {
		panic(fmt.Sprintf("scenario %q: a scenario needs a name and a path", s.Name))
	}
	for _, o := range registry {
		if o.Name == s.Name || o.Rank == s.Rank {
			panic(fmt.Sprintf("scenario %s: name or rank %d already taken by %s", s.Name, s.Rank, o.Name))
		}
	}
	for _, g := range s.Groups {
		if g == All || Get(g) != nil {
			panic(fmt.Sprintf("scenario %s: group %q is a scenario name or all", s.Name, g))
		}
	}
	i, _ := slices.BinarySearchFunc(registry, s.Rank, func(o *Scenario, r int) int { return o.Rank - r })
	registry = slices.Insert(registry, i, s)
}

// List is every scenario in Rank order.
func List() []*Scenario { return slices.Clone(registry) }

// Names are the scenarios' names in Rank order.
func Names() []string {
	out := make([]string, len(registry))
	for i, s := range registry {
		out[i] = s.Name
	}
	return out
}

// Get is the scenario called name; nil when there is none.
func Get(name string) *Scenario {
	for _, s := range registry {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Lookup finds a scenario by name; the error lists the known ones.
func Lookup(name string) (*Scenario, error) {
	if s := Get(name); s != nil {
		return s, nil
	}
	names := Names()
	groups := GroupNames()
	slices.Sort(groups)
	for _, g := range groups {
		names = append(names, g+" (group)")
	}
	return nil, fmt.Errorf("unknown scenario %q (known: %s)", name, strings.Join(names, ", "))
}

// GroupNames are the group names: the scenarios' own groups in the order
// they first appear, then all.
func GroupNames() []string {
	var out []string
	for _, s := range registry {
		for _, g := range s.Groups {
			if !slices.Contains(out, g) {
				out = append(out, g)
			}
		}
	}
	return append(out, All)
}

// Group lists the scenarios a group name stands for, in Rank order; nil
// when name is no group.
func Group(name string) []string {
	if name == All {
		return Names()
	}
	var out []string
	for _, s := range registry {
		if slices.Contains(s.Groups, name) {
			out = append(out, s.Name)
		}
	}
	return out
}

// ExpandGroups replaces group names by their scenarios in order, skipping
// members already listed, so "simple,payload" is five scenarios. A name
// given twice stays twice, for validation to name it.
func ExpandGroups(names []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range names {
		if g := Group(n); g != nil {
			for _, m := range g {
				if !seen[m] {
					seen[m] = true
					out = append(out, m)
				}
			}
			continue
		}
		seen[n] = true
		out = append(out, n)
	}
	return out
}

// WrongAnswers is the scenario called name's count of expected statuses
// that answered the wrong request (Scenario.Wrong); 0 when it has none.
func WrongAnswers(name string, d *manifest.ScenarioData, windowS float64) int64 {
	s := Get(name)
	if s == nil || s.Wrong == nil || d == nil {
		return 0
	}
	return s.Wrong(d, windowS)
}

// WrongWhat names the scenario called name's wrong answers.
func WrongWhat(name string) string {
	if s := Get(name); s != nil {
		return s.WrongWhat
	}
	return ""
}
