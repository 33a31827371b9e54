package dashcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"gopkg.in/yaml.v3"
)

// ruleFile is the part of a Prometheus rule file the checks read.
type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Record string            `yaml:"record"`
			Alert  string            `yaml:"alert"`
			Expr   string            `yaml:"expr"`
			Labels map[string]string `yaml:"labels"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// RuleQueries lists the expression of every rule in the files matching glob
// (promtool checks the files themselves; this feeds the live test). Each
// recorded name is also returned as its own query: the live Prometheus must
// have evaluated the rule, not just be able to.
func RuleQueries(glob string) ([]Query, error) {
	names, err := filepath.Glob(glob)
	if err != nil {
		return nil, fmt.Errorf("list rule files: %w", err)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no rule files match %s", glob)
	}
	sort.Strings(names)
	var out []Query
	for _, n := range names {
		raw, err := os.ReadFile(n)
		if err != nil {
			return nil, fmt.Errorf("read rules: %w", err)
		}
		var rf ruleFile
		if err := yaml.Unmarshal(raw, &rf); err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		src := filepath.Base(n)
		seen := map[string]bool{}
		for _, g := range rf.Groups {
			for _, r := range g.Rules {
				name := r.Record
				if name == "" {
					name = "alert " + r.Alert
				}
				title := name
				if q, ok := r.Labels["quantile"]; ok {
					title += fmt.Sprintf(`{quantile=%q}`, q)
				}
				out = append(out, Query{Source: src, Kind: KindRule, Title: title, Expr: r.Expr})
				if r.Record != "" && !seen[r.Record] {
					seen[r.Record] = true
					out = append(out, Query{Source: src, Kind: KindRule, Title: r.Record + " (recorded)", Expr: r.Record})
				}
			}
		}
	}
	return out, nil
}
