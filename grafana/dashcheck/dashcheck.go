// Package dashcheck owns the checks on the monitoring code: the provisioned
// Grafana dashboards (valid JSON, lossless in the Grafana schema types, the
// provisioned datasource everywhere, unique panel ids, every PromQL
// expression parsing) and the extraction of every expression — dashboard
// targets, annotations, variables and recording rules — that its tests
// resolve against internal/metricdefs and the recorded series, and that the
// end-to-end test sends to a live Prometheus.
package dashcheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"sync"

	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/prometheus/prometheus/promql/parser"
)

// File is one dashboard JSON file, raw and decoded.
type File struct {
	Name      string // base name, e.g. overview.json
	Raw       []byte
	Dashboard dashboard.Dashboard
}

// Title is the dashboard's title, for messages.
func (f File) Title() string {
	if f.Dashboard.Title != nil {
		return *f.Dashboard.Title
	}
	return f.Name
}

var registerOnce sync.Once

// promql parses as a Prometheus started with flags.txt does: no
// experimental functions or syntax.
var promql = parser.NewParser(parser.Options{})

// Decode decodes one dashboard file into the SDK types; mistyped fields are
// errors. Check's round trip then proves nothing was dropped.
func Decode(name string, raw []byte) (File, error) {
	registerOnce.Do(plugins.RegisterDefaultPlugins)
	if !json.Valid(raw) {
		return File{}, fmt.Errorf("%s: not valid JSON", name)
	}
	var d dashboard.Dashboard
	// Not UnmarshalJSONStrict: in SDK v0.0.22 it returns its error list as
	// a typed nil, which its own callers take for a failure, dropping every
	// panel and annotation target. The round trip in Check catches what the
	// lenient decoder drops instead.
	if err := json.Unmarshal(raw, &d); err != nil {
		return File{}, fmt.Errorf("%s: does not decode into the Grafana dashboard schema: %w", name, err)
	}
	return File{Name: name, Raw: raw, Dashboard: d}, nil
}

// LoadDir decodes every *.json file of dir, sorted by name.
func LoadDir(dir string) ([]File, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("list dashboards: %w", err)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no dashboards (*.json) in %s: run `go run ./grafana/gen`", dir)
	}
	sort.Strings(names)
	out := make([]File, 0, len(names))
	for _, n := range names {
		raw, err := os.ReadFile(n)
		if err != nil {
			return nil, fmt.Errorf("read dashboard: %w", err)
		}
		f, err := Decode(filepath.Base(n), raw)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// Check runs every static check on one file and returns all problems found,
// each naming the dashboard and panel.
func Check(f File, datasourceUID string) error {
	var errs []error
	if err := roundTrip(f); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, checkIDs(f)...)
	errs = append(errs, checkDatasources(f, datasourceUID)...)
	vars := VariableNames(f.Dashboard)
	for _, q := range Queries(f) {
		if q.Expr == "" {
			errs = append(errs, fmt.Errorf("%s: empty expression", q))
			continue
		}
		expr, err := Substitute(q.Expr, SampleValues(vars))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", q, err))
			continue
		}
		if _, err := promql.ParseExpr(expr); err != nil {
			errs = append(errs, fmt.Errorf("%s: PromQL does not parse: %w\n\texpr: %s", q, err, expr))
		}
	}
	return errors.Join(errs...)
}

// roundTrip re-encodes the decoded dashboard and compares it with the file
// as generic JSON: a field the SDK types cannot hold would go missing here.
func roundTrip(f File) error {
	enc, err := json.Marshal(f.Dashboard)
	if err != nil {
		return fmt.Errorf("%s: re-encode: %w", f.Name, err)
	}
	var before, after any
	if err := json.Unmarshal(f.Raw, &before); err != nil {
		return fmt.Errorf("%s: %w", f.Name, err)
	}
	if err := json.Unmarshal(enc, &after); err != nil {
		return fmt.Errorf("%s: re-decode: %w", f.Name, err)
	}
	if d := diff("", before, after); d != "" {
		return fmt.Errorf("%s: not lossless in the Grafana schema types: %s", f.Name, d)
	}
	return nil
}

// diff names the first path where a and b differ, "" when equal.
func diff(path string, a, b any) string {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			return path + ": object became " + fmt.Sprintf("%T", b)
		}
		keys := make([]string, 0, len(av)+len(bv))
		for k := range av {
			keys = append(keys, k)
		}
		for k := range bv {
			if _, ok := av[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			x, inA := av[k]
			y, inB := bv[k]
			switch {
			case !inB:
				return path + "." + k + ": dropped"
			case !inA:
				return path + "." + k + ": added"
			}
			if d := diff(path+"."+k, x, y); d != "" {
				return d
			}
		}
		return ""
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return path + ": array changed length or type"
		}
		for i := range av {
			if d := diff(fmt.Sprintf("%s[%d]", path, i), av[i], bv[i]); d != "" {
				return d
			}
		}
		return ""
	default:
		if !reflect.DeepEqual(a, b) {
			return fmt.Sprintf("%s: %v became %v", path, a, b)
		}
		return ""
	}
}

// panels flattens rows (collapsed rows hold their panels) in file order.
func panels(d dashboard.Dashboard) []dashboard.Panel {
	var out []dashboard.Panel
	for _, p := range d.Panels {
		switch {
		case p.Panel != nil:
			out = append(out, *p.Panel)
		case p.RowPanel != nil:
			out = append(out, p.RowPanel.Panels...)
		}
	}
	return out
}

func checkIDs(f File) []error {
	var errs []error
	seen := map[uint32]string{}
	note := func(id *uint32, title string) {
		if id == nil {
			errs = append(errs, fmt.Errorf("%s: panel %q has no id", f.Name, title))
			return
		}
		if prev, dup := seen[*id]; dup {
			errs = append(errs, fmt.Errorf("%s: panel id %d used by both %q and %q", f.Name, *id, prev, title))
		}
		seen[*id] = title
	}
	for _, p := range f.Dashboard.Panels {
		if p.RowPanel != nil {
			id := p.RowPanel.Id
			note(&id, "row "+deref(p.RowPanel.Title))
		}
	}
	for _, p := range panels(f.Dashboard) {
		note(p.Id, deref(p.Title))
	}
	return errs
}

func checkDatasources(f File, uid string) []error {
	var errs []error
	bad := func(where string, got *string) {
		g := "<none>"
		if got != nil {
			g = *got
		}
		errs = append(errs, fmt.Errorf("%s: %s uses datasource uid %s, want %q (the provisioned one)", f.Name, where, g, uid))
	}
	for _, p := range panels(f.Dashboard) {
		where := fmt.Sprintf("panel %q", deref(p.Title))
		if p.Datasource == nil || p.Datasource.Uid == nil || *p.Datasource.Uid != uid {
			var got *string
			if p.Datasource != nil {
				got = p.Datasource.Uid
			}
			bad(where, got)
		}
		for _, t := range p.Targets {
			pq, ok := t.(*prometheus.Dataquery)
			if !ok {
				errs = append(errs, fmt.Errorf("%s: %s has a %s target, want a Prometheus query", f.Name, where, t.DataqueryType()))
				continue
			}
			if pq.Datasource != nil && (pq.Datasource.Uid == nil || *pq.Datasource.Uid != uid) {
				bad(where+" target "+deref(pq.RefId), pq.Datasource.Uid)
			}
		}
	}
	for _, a := range f.Dashboard.Annotations.List {
		if a.Datasource == nil || a.Datasource.Uid == nil || *a.Datasource.Uid != uid {
			var got *string
			if a.Datasource != nil {
				got = a.Datasource.Uid
			}
			bad(fmt.Sprintf("annotation %q", a.Name), got)
		}
	}
	for _, v := range f.Dashboard.Templating.List {
		if v.Type == dashboard.VariableTypeQuery && (v.Datasource == nil || v.Datasource.Uid == nil || *v.Datasource.Uid != uid) {
			var got *string
			if v.Datasource != nil {
				got = v.Datasource.Uid
			}
			bad(fmt.Sprintf("variable $%s", v.Name), got)
		}
	}
	return errs
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
