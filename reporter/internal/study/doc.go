package study

import (
	"fmt"
	"strings"

	"proxybench/internal/studydata"
	"proxybench/reporter/internal/render"
)

// naTitle is the section listing what cannot run, and why.
const naTitle = "Not available here"

// FigureName is a metric's figure file under figures/.
func FigureName(metric string) string { return metric + ".svg" }

// num formats a value for a table: 3 significant digits, "–" for NaN.
func num(x Num) string {
	if !x.Known() {
		return "–"
	}
	return render.Sig(float64(x), 3)
}

func signed(x Num) string {
	if !x.Known() {
		return "–"
	}
	if x > 0 {
		return "+" + num(x)
	}
	return num(x)
}

func pct(x Num) string {
	if !x.Known() {
		return "–"
	}
	return fmt.Sprintf("%+.1f %%", x*100)
}

func (s *Summary) metric(name string) studydata.Metric {
	for _, m := range s.Metrics {
		if m.Name == name {
			return m
		}
	}
	return studydata.Metric{Name: name, Label: name}
}

func (s *Summary) groupLabel(name string) string {
	for _, g := range s.Groups {
		if g.Name == name {
			if g.Label != "" {
				return g.Label
			}
			return g.Name
		}
	}
	if name == "" {
		return "all"
	}
	return name
}

func (s *Summary) variantLabel(name string) string {
	for _, v := range s.Variants {
		if v.Name == name && v.Label != "" {
			return v.Label
		}
	}
	return name
}

// Document lays the summary out as the study's report.
func Document(s *Summary) render.Doc {
	d := render.Doc{Title: s.Title}
	if d.Title == "" {
		d.Title = "Study " + s.Study
	}
	d.Lead = append(d.Lead, fmt.Sprintf("Study **%s**, run `%s`, scale %s, status **%s**; %s to %s UTC on %s (%d CPUs, kernel %s).",
		s.Study, s.Run, s.Scale, s.Status, s.Start.Format("2006-01-02 15:04:05"), s.End.Format("15:04:05"),
		s.Host.Hostname, s.Host.CPUs, s.Host.Kernel))
	if s.Error != "" {
		d.Lead = append(d.Lead, "The study stopped early: "+s.Error+". Every sample measured before is below.")
	}
	if s.Question != "" {
		d.Lead = append(d.Lead, "*Question.* "+s.Question)
	}
	d.Lead = append(d.Lead, s.findings()...)

	method := render.Section{Title: "1. Method", Text: append([]string{}, s.Method...)}
	if t, ok := s.conditionsTable(); ok {
		method.Tables = append(method.Tables, t)
	}
	d.Sections = append(d.Sections, method)

	checks := render.Section{Title: "2. Checks of the mechanism"}
	if len(s.Checks) == 0 {
		checks.Text = []string{"The study recorded no checks."}
	} else {
		t := render.Table{Header: []string{"check", "result", "measured"}}
		for _, c := range s.Checks {
			t.Rows = append(t.Rows, []render.Cell{{Text: c.Name}, render.Passed(c.OK), {Text: c.Detail}})
		}
		checks.Tables = []render.Table{t}
		if !s.ChecksOK {
			checks.Text = []string{"**A check failed: the mechanism did not do what the study asked of it, so its numbers do not answer the question.**"}
		}
	}
	d.Sections = append(d.Sections, checks)

	res := render.Section{Title: "3. Results", Text: []string{
		"Per condition and variant: mean with its 95 % Student-t interval, median with its order-statistic interval (coverage in the last column), sample standard deviation and range. Failed samples are counted, never averaged in."}}
	for _, m := range s.Metrics {
		if m.Better != "" {
			res.Figures = append(res.Figures, FigureName(m.Name))
		}
	}
	for _, g := range groupNames(s.Groups) {
		res.Tables = append(res.Tables, s.statsTable(g))
	}
	d.Sections = append(d.Sections, res)

	if s.Baseline != "" {
		cmp := render.Section{Title: "4. Against " + s.variantLabel(s.Baseline), Text: []string{fmt.Sprintf(
			"Each variant minus %s, in the metric's unit and relative to %s's mean, with Welch's 95 %% interval; p is Welch's, adjusted by Holm over all %d comparisons. \"No significant difference\" is a result, kept as such.",
			s.variantLabel(s.Baseline), s.variantLabel(s.Baseline), len(s.Diffs))}}
		t := render.Table{Header: []string{"condition", "variant", "metric", "difference", "95 % CI", "relative", "p (Holm)", "verdict"},
			Right: []bool{false, false, false, true, true, true, true, false}}
		for _, x := range s.Diffs {
			m := s.metric(x.Metric)
			t.Rows = append(t.Rows, []render.Cell{{Text: s.groupLabel(x.Group)}, {Text: s.variantLabel(x.Variant)}, {Text: m.Label},
				{Text: signed(x.Delta) + " " + m.Unit}, {Text: "[" + signed(x.Low) + ", " + signed(x.High) + "]"}, {Text: pct(x.Relative)},
				{Text: num(x.PHolm)}, {Text: x.Verdict, Class: verdictClass(x.Verdict)}})
		}
		cmp.Tables = []render.Table{t}
		d.Sections = append(d.Sections, cmp)
	}

	if len(s.NA) > 0 {
		t := render.Table{Header: []string{"condition", "variant", "why it cannot run here"}}
		for _, n := range s.NA {
			g, v := s.groupLabel(n.Group), s.variantLabel(n.Variant)
			if n.Group == "" {
				g = "every"
			}
			if n.Variant == "" {
				v = "every"
			}
			t.Rows = append(t.Rows, []render.Cell{{Text: g}, {Text: v}, {Text: "n/a: " + n.Reason}})
		}
		d.Sections = append(d.Sections, render.Section{Title: fmt.Sprintf("%d. %s", len(d.Sections)+1, naTitle), Tables: []render.Table{t}})
	}
	if len(s.Original) > 0 {
		t := render.Table{Header: []string{"condition", "variant", "metric", "original", "here (mean)", "here (median)", "n", "note"},
			Right: []bool{false, false, false, true, true, true, true, false}}
		for _, o := range s.Original {
			m := s.metric(o.Metric)
			t.Rows = append(t.Rows, []render.Cell{{Text: s.groupLabel(o.Group)}, {Text: s.variantLabel(o.Variant)}, {Text: m.Label},
				{Text: num(Num(o.Value)) + " " + o.Unit}, {Text: num(o.Ours) + " " + o.OursUnit}, {Text: num(o.OursMedian) + " " + o.OursUnit},
				{Text: fmt.Sprint(o.OursN)}, {Text: o.Note}})
		}
		d.Sections = append(d.Sections, render.Section{Title: fmt.Sprintf("%d. Beside the original findings", len(d.Sections)+1),
			Text: []string{"The original lab ran on other hardware with other tools; the comparison is of direction and size, not of the numbers themselves."}, Tables: []render.Table{t}})
	}
	if len(s.Notes) > 0 {
		d.Sections = append(d.Sections, render.Section{Title: fmt.Sprintf("%d. Notes", len(d.Sections)+1), Text: s.Notes})
	}
	return d
}

func verdictClass(v string) string {
	switch v {
	case VerdictHigher, VerdictLower:
		return "suspect"
	case VerdictUntestable:
		return "invalid"
	}
	return "valid"
}

// findings is the report's opening: one line per significant difference
// and one saying, per metric, how many comparisons found none.
func (s *Summary) findings() []string {
	var sig []string
	none, total := map[string]int{}, 0
	for _, x := range s.Diffs {
		m := s.metric(x.Metric)
		where := s.variantLabel(x.Variant)
		if x.Group != "" {
			where += " (" + s.groupLabel(x.Group) + ")"
		}
		switch x.Verdict {
		case VerdictHigher, VerdictLower:
			sig = append(sig, fmt.Sprintf("%s: %s %s %s [%s, %s] (%s), p %s after Holm", where, m.Label, signed(x.Delta), m.Unit,
				signed(x.Low), signed(x.High), pct(x.Relative), num(x.PHolm)))
		case VerdictNone:
			none[x.Metric]++
			total++
		}
	}
	var out []string
	if len(sig) > 0 {
		out = append(out, "*Differences from "+s.variantLabel(s.Baseline)+" beyond chance:* "+strings.Join(sig, "; ")+".")
	}
	if total > 0 {
		var per []string
		for _, m := range s.Metrics {
			if n := none[m.Name]; n > 0 {
				per = append(per, fmt.Sprintf("%s %d", m.Label, n))
			}
		}
		out = append(out, fmt.Sprintf("*No significant difference (a negative result, kept):* %d of %d comparisons with %s (%s; section 4).",
			total, len(s.Diffs), s.variantLabel(s.Baseline), strings.Join(per, ", ")))
	}
	if !s.ChecksOK {
		out = append(out, "**A mechanism check failed (section 2).**")
	}
	return out
}

func (s *Summary) conditionsTable() (render.Table, bool) {
	t := render.Table{Caption: "Conditions and variants", Header: []string{"kind", "name", "what it is"}}
	for _, g := range s.Groups {
		if g.Name != "" {
			t.Rows = append(t.Rows, []render.Cell{{Text: "condition"}, {Text: s.groupLabel(g.Name)}, {Text: g.Mechanism}})
		}
	}
	for _, v := range s.Variants {
		name := s.variantLabel(v.Name)
		if v.Name == s.Baseline {
			name += " (baseline)"
		}
		t.Rows = append(t.Rows, []render.Cell{{Text: "variant"}, {Text: name}, {Text: v.Detail}})
	}
	return t, len(t.Rows) > 0
}

func (s *Summary) statsTable(group string) render.Table {
	t := render.Table{Header: []string{"variant", "metric", "n", "mean", "95 % CI", "median", "median CI", "sd", "min", "max", "coverage"},
		Right: []bool{false, false, true, true, true, true, true, true, true, true, true}}
	if group != "" || len(s.Groups) > 1 {
		t.Caption = s.groupLabel(group)
	}
	for _, v := range s.Variants {
		if studydata.NAReason(s.NA, group, v.Name) != "" {
			t.Rows = append(t.Rows, []render.Cell{{Text: s.variantLabel(v.Name)}, {Text: "n/a (why: " + naTitle + ")"}, {}, {}, {}, {}, {}, {}, {}, {}, {}})
			continue
		}
		for _, m := range s.Metrics {
			x, ok := s.Stat(group, v.Name, m.Name)
			if !ok {
				continue
			}
			n := fmt.Sprint(x.N)
			if x.Failed > 0 {
				n += fmt.Sprintf(" (+%d failed)", x.Failed)
			}
			u := " " + m.Unit
			t.Rows = append(t.Rows, []render.Cell{{Text: s.variantLabel(v.Name)}, {Text: m.Label}, {Text: n}, {Text: num(x.Mean) + u},
				{Text: "[" + num(x.CILow) + ", " + num(x.CIHigh) + "]"}, {Text: num(x.Median) + u},
				{Text: "[" + num(x.MedianLow) + ", " + num(x.MedianHigh) + "]"}, {Text: num(x.Stddev)},
				{Text: num(x.Min)}, {Text: num(x.Max)}, {Text: num(x.MedianCoverage*100) + " %"}})
		}
	}
	return t
}

// Figures renders one figure per metric that has a direction (Better):
// the variants' means with 95 % intervals, per condition.
func Figures(s *Summary) map[string][]byte {
	out := map[string][]byte{}
	var groups, glabels []string
	for _, g := range groupNames(s.Groups) {
		groups = append(groups, g)
		glabels = append(glabels, s.groupLabel(g))
	}
	var series []string
	for _, v := range s.Variants {
		series = append(series, s.variantLabel(v.Name))
	}
	for _, m := range s.Metrics {
		if m.Better == "" {
			continue
		}
		p := render.BarPanel{Title: fmt.Sprintf("%s (%s; %s is better)", m.Label, m.Unit, m.Better), YLabel: m.Unit,
			Groups: glabels, Series: series, Values: map[[2]string]render.Bar{}, Format: func(x float64) string { return num(Num(x)) },
			Note: "bars: mean across repeats; tick and whisker: the 95 % interval of the mean"}
		for gi, g := range groups {
			for _, v := range s.Variants {
				if x, ok := s.Stat(g, v.Name, m.Name); ok && x.N > 0 {
					p.Values[[2]string{glabels[gi], s.variantLabel(v.Name)}] = render.Bar{V: float64(x.Mean), Lo: float64(x.CILow), Hi: float64(x.CIHigh)}
				}
			}
		}
		title := s.Title + ": " + m.Label
		out[FigureName(m.Name)] = []byte(render.BarChart(title, []render.BarPanel{p}))
	}
	return out
}
