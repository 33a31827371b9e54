package dashcheck

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
)

// Kind says where an expression lives.
type Kind string

// Kinds of expressions.
const (
	KindTarget     Kind = "panel"
	KindAnnotation Kind = "annotation"
	KindVariable   Kind = "variable"
	KindRule       Kind = "rule"
)

// Query is one PromQL expression and where it comes from.
type Query struct {
	Source  string // dashboard title or rule file
	Kind    Kind
	Title   string // panel title, annotation or variable name, recorded name
	RefID   string
	Expr    string
	Instant bool // Grafana runs it as an instant query (tables)
}

func (q Query) String() string {
	s := fmt.Sprintf("%s: %s %q", q.Source, q.Kind, q.Title)
	if q.RefID != "" {
		s += " query " + q.RefID
	}
	return s
}

// Queries lists every expression of a dashboard: panel targets, annotation
// targets and query variables (label_values definitions reduced to their
// metric selector, the part Prometheus evaluates).
func Queries(f File) []Query {
	title := f.Title()
	var out []Query
	for _, p := range panels(f.Dashboard) {
		for _, t := range p.Targets {
			pq, ok := t.(*prometheus.Dataquery)
			if !ok {
				continue
			}
			out = append(out, Query{
				Source: title, Kind: KindTarget, Title: deref(p.Title), RefID: deref(pq.RefId),
				Expr: pq.Expr, Instant: pq.Instant != nil && *pq.Instant && (pq.Range == nil || !*pq.Range),
			})
		}
	}
	for _, a := range f.Dashboard.Annotations.List {
		expr := deref(a.Expr)
		if pq, ok := a.Target.(*prometheus.Dataquery); ok && pq.Expr != "" {
			expr = pq.Expr
		}
		out = append(out, Query{Source: title, Kind: KindAnnotation, Title: a.Name, Expr: expr})
	}
	for _, v := range f.Dashboard.Templating.List {
		if v.Type != dashboard.VariableTypeQuery {
			continue
		}
		metric, _, err := LabelValues(variableQuery(v))
		if err != nil {
			out = append(out, Query{Source: title, Kind: KindVariable, Title: "$" + v.Name})
			continue
		}
		out = append(out, Query{Source: title, Kind: KindVariable, Title: "$" + v.Name, Expr: metric})
	}
	return out
}

func variableQuery(v dashboard.VariableModel) string {
	if v.Query != nil && v.Query.String != nil {
		return *v.Query.String
	}
	if v.Query != nil && v.Query.Map != nil {
		if s, ok := v.Query.Map["query"].(string); ok {
			return s
		}
	}
	return deref(v.Definition)
}

var labelValuesRe = regexp.MustCompile(`^\s*label_values\(\s*(.+?)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*$`)

// LabelValues splits a Grafana `label_values(selector, label)` variable query.
func LabelValues(q string) (selector, label string, err error) {
	m := labelValuesRe.FindStringSubmatch(q)
	if m == nil {
		return "", "", fmt.Errorf("variable query %q is not label_values(<selector>, <label>)", q)
	}
	return m[1], m[2], nil
}

// VariableNames are the template variables a dashboard defines.
func VariableNames(d dashboard.Dashboard) []string {
	out := make([]string, 0, len(d.Templating.List))
	for _, v := range d.Templating.List {
		out = append(out, v.Name)
	}
	return out
}

// builtins are Grafana's global variables with the values Grafana gives
// them for this stack (1 s scrape interval, so $__rate_interval is 4 s over
// short ranges).
var builtins = map[string]string{
	"__rate_interval":    "4s",
	"__interval":         "1s",
	"__interval_ms":      "1000",
	"__range":            "15m",
	"__range_s":          "900",
	"__range_ms":         "900000",
	"__auto":             "1s",
	"__dashboard":        "proxybench",
	"__rate_interval_ms": "4000",
}

// SampleValues gives each dashboard variable a value that parses wherever
// the variable may appear (it only ever appears inside a regex matcher).
func SampleValues(vars []string) map[string]string {
	m := make(map[string]string, len(vars))
	for _, v := range vars {
		m[v] = "sample"
	}
	return m
}

// varRe matches $name, ${name}, ${name:format} and [[name]].
var varRe = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)(?::[A-Za-z0-9_]+)?\}|\$([A-Za-z0-9_]+)|\[\[([A-Za-z0-9_]+)\]\]`)

// Substitute replaces Grafana variables in expr by vals (then the builtins).
// An undefined variable is an error: Grafana would send it to Prometheus
// verbatim and the panel would break.
func Substitute(expr string, vals map[string]string) (string, error) {
	var missing []string
	out := varRe.ReplaceAllStringFunc(expr, func(m string) string {
		sub := varRe.FindStringSubmatch(m)
		name := sub[1] + sub[2] + sub[3]
		if v, ok := vals[name]; ok {
			return v
		}
		if v, ok := builtins[name]; ok {
			return v
		}
		missing = append(missing, "$"+name)
		return m
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("undefined variable %s (define it in the dashboard's templating)", strings.Join(missing, ", "))
	}
	return out, nil
}

// RegexValue formats variable values the way Grafana interpolates a
// multi-value variable into a Prometheus regex matcher: regex-escaped,
// backslashes doubled for the PromQL string, joined as (a|b).
func RegexValue(values []string) string {
	esc := make([]string, len(values))
	for i, v := range values {
		esc[i] = strings.ReplaceAll(regexp.QuoteMeta(v), `\`, `\\`)
	}
	if len(esc) == 1 {
		return esc[0]
	}
	return "(" + strings.Join(esc, "|") + ")"
}
