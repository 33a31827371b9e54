package plan

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"proxybench/internal/cellid"
	"proxybench/internal/placement"
)

var now = time.Date(2026, 11, 30, 5, 15, 0, 0, time.UTC)

func TestLoad(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		wantErr []string // substrings, all must appear
		check   func(t *testing.T, p *Plan)
	}{
		{name: "defaults", check: func(t *testing.T, p *Plan) {
			if p.Run != "20261130T051500Z" || p.Tier != "quick" || p.Mode != "closed" || p.Concurrency != 50 || !p.Isolate ||
				p.MetricsAddr != "127.0.0.1:9500" || strings.Join(p.Proxies, ",") != "nginx,haproxy,traefik,caddy" {
				t.Errorf("defaults: %+v", p)
			}
		}},
		{name: "brief example", args: strings.Fields("-tier quick -proxies nginx,traefik -origins fast,go -concurrency 50 -results results"),
			check: func(t *testing.T, p *Plan) {
				if strings.Join(p.Proxies, ",") != "nginx,traefik" || strings.Join(p.Origins, ",") != "fast,go" {
					t.Errorf("got %v %v", p.Proxies, p.Origins)
				}
			}},
		{name: "rate means open", args: []string{"-rate", "500"}, check: func(t *testing.T, p *Plan) {
			if p.Mode != "open" {
				t.Errorf("mode %q", p.Mode)
			}
		}},
		{name: "stages", args: []string{"-stages", "10s:100,20s:300"}, check: func(t *testing.T, p *Plan) {
			if p.Mode != "stages" || len(p.Stages) != 2 || time.Duration(p.Stages[1].Duration) != 20*time.Second || p.Stages[1].Target != 300 {
				t.Errorf("stages %+v mode %q", p.Stages, p.Mode)
			}

			// The cell's rate is the schedule's average: 0 -> 100 over 10 s
			// (500 requests), 100 -> 300 over 20 s (4000), 4500 / 30 s.
			x, err := p.Expand()
			if err != nil || len(x.Cells) == 0 || x.Cells[0].Rate != 150 || time.Duration(x.Cells[0].Duration) != 30*time.Second {
				t.Errorf("stages cell %+v (%v), want rate 150 over 30s", x.Cells, err)
			}
		}},
		{name: "concurrency stages", args: []string{"-stages", "10s:100,20s:300", "-stage-kind", "concurrency"}, check: func(t *testing.T, p *Plan) {
			x, err := p.Expand()
			if err != nil || len(x.Cells) == 0 || x.Cells[0].Concurrency != 300 || x.Cells[0].Rate != 0 {
				t.Errorf("concurrency stages cell %+v (%v), want the peak 300 connections, no rate", x.Cells, err)
			}
		}},
		{name: "isolate off", args: []string{"-isolate=false"}, check: func(t *testing.T, p *Plan) {
			if p.Isolate {
				t.Error("isolate still on")
			}
		}},
		{name: "file then flags win", args: []string{"-plan", "testdata/good.yaml", "-repeats", "2", "-proxies", "caddy"},
			check: func(t *testing.T, p *Plan) {
				if p.Tier != "medium" || p.Repeats != 2 || strings.Join(p.Proxies, ",") != "caddy" || p.Concurrency != 100 ||
					time.Duration(p.Warmup) != 7*time.Second || time.Duration(p.SLO.P99) != 20*time.Millisecond || p.SLO.ErrorRatio != 0.001 {
					t.Errorf("merged plan %+v", p)
				}
			}},
		{name: "plans/example.yaml", args: []string{"-plan", "../../../plans/example.yaml"}, check: func(t *testing.T, p *Plan) {
			x, err := p.Expand()
			// 2 proxies x 2 origins x 3 repeats, and the A/A control's 3.
			if err != nil || len(x.Cells) != 2*2*3+3 || x.Cells[0].ID != "nginx.fast.simple.medium.r1" || !x.LongRun {
				t.Errorf("example expands to %v cells (%v)", len(x.Cells), err)
			}
		}},
		{name: "unknown yaml field", args: []string{"-plan", "testdata/unknown.yaml"},
			wantErr: []string{"testdata/unknown.yaml", "line 3", "concurency", "known keys:", "concurrency"}},
		{name: "bad yaml duration", args: []string{"-plan", "testdata/badduration.yaml"},
			wantErr: []string{"testdata/badduration.yaml", "line 2", `"soon"`}},
		{name: "missing file", args: []string{"-plan", "testdata/nope.yaml"}, wantErr: []string{"nope.yaml"}},
		{name: "bad tier", args: []string{"-tier", "fast"}, wantErr: []string{"tier:", `"fast"`, "quick, medium, soak, all"}},
		{name: "bad tier duration", args: []string{"-tier", "10s,500ms"}, wantErr: []string{"duration 500ms"}},
		{name: "bad proxy", args: []string{"-proxies", "nginx,envoy"}, wantErr: []string{"proxies:", `unknown proxy "envoy"`, "known: nginx"}},
		{name: "bad origin and scenario", args: []string{"-origins", "rust", "-scenarios", "grpc"},
			wantErr: []string{`unknown origin "rust"`, `unknown scenario "grpc"`}},
		{name: "duplicate proxy", args: []string{"-proxies", "nginx,nginx"}, wantErr: []string{`"nginx" listed twice`}},
		{name: "closed with rate", args: []string{"-mode", "closed", "-rate", "10"}, wantErr: []string{"rate 10 with mode closed"}},
		{name: "open without rate", args: []string{"-mode", "open"}, wantErr: []string{"rate 0 with mode open"}},
		{name: "bad flag value", args: []string{"-concurrency", "many"}, wantErr: []string{"-concurrency", "many", "whole number"}},
		{name: "bad run id", args: []string{"-run", "../etc"}, wantErr: []string{`run "../etc"`}},
		{name: "NaN rate", args: []string{"-rate", "NaN"}, wantErr: []string{"rate NaN: must be a finite number"}},
		{name: "Inf stage", args: []string{"-stages", "1s:+Inf"}, wantErr: []string{`flag -stages "1s:+Inf": stage 1 "1s:+Inf": target "+Inf" is not a number >= 0`}},
		{name: "bad mode", args: []string{"-mode", "turbo"}, wantErr: []string{`mode "turbo": use closed, open or stages (or leave it empty`}},
		{name: "bad stage kind", args: []string{"-stages", "10s:1", "-stage-kind", "vus"}, wantErr: []string{`stage_kind "vus": use rate (open loop) or concurrency`}},
		{name: "stages without stages", args: []string{"-mode", "stages"}, wantErr: []string{"mode stages without stages: give stages such as 10s:100,30s:500"}},
		{name: "zero stage", args: []string{"-stages", "10s:1,0s:5"}, wantErr: []string{`flag -stages "10s:1,0s:5": stage 2 "0s:5": duration "0s" is not a positive Go duration like 10s`}},
		{name: "stages with mode open", args: []string{"-mode", "open", "-rate", "5", "-stages", "1s:1"}, wantErr: []string{"stages given with mode open"}},
		{name: "closed without connections", args: []string{"-concurrency", "0"}, wantErr: []string{"concurrency 0: closed loop needs at least 1 connection"}},
		{name: "concurrency stages never 1", args: []string{"-stages", "10s:0", "-stage-kind", "concurrency"},
			wantErr: []string{"stages 10s:0: concurrency stages need a target of at least 1 somewhere"}},
		{name: "zero repeats", args: []string{"-repeats", "0"}, wantErr: []string{"repeats 0"}},
		{name: "zero loadgens", args: []string{"-loadgens", "0"}, wantErr: []string{"loadgens 0: use 1..64 (1 = this process alone)"}},
		{name: "fewer connections than loadgens", args: []string{"-loadgens", "4", "-concurrency", "3"},
			wantErr: []string{"loadgens 4 with concurrency 3: a closed loop of 3 connections cannot be split over 4 loadgen workers"}},
		{name: "loadgens", args: []string{"-loadgens", "3", "-rate", "900"}, check: func(t *testing.T, p *Plan) {
			if p.Loadgens != 3 || Default().Loadgens != 1 {
				t.Errorf("loadgens %d, default %d", p.Loadgens, Default().Loadgens)
			}
		}},
		{name: "stray arg", args: []string{"quick"}, wantErr: []string{`unexpected argument "quick"`}},
		{name: "placement default auto", check: func(t *testing.T, p *Plan) {
			if p.Placement != (placement.Spec{Mode: placement.Auto}) {
				t.Errorf("placement %+v", p.Placement)
			}
		}},
		{name: "placement none", args: []string{"-placement", "none"}, check: func(t *testing.T, p *Plan) {
			if p.Placement != (placement.Spec{Mode: placement.None}) {
				t.Errorf("placement %+v", p.Placement)
			}
		}},
		{name: "placement section is custom", args: []string{"-plan", "testdata/placement.yaml"}, check: func(t *testing.T, p *Plan) {
			if p.Placement != (placement.Spec{Mode: placement.Custom, Proxy: "1", Observability: "0"}) {
				t.Errorf("placement %+v", p.Placement)
			}
		}},
		{name: "placement flag wins over the section", args: []string{"-plan", "testdata/placement.yaml", "-placement", "auto"}, check: func(t *testing.T, p *Plan) {
			if p.Placement != (placement.Spec{Mode: placement.Auto}) {
				t.Errorf("placement %+v", p.Placement)
			}
		}},
		{name: "bad placement flag", args: []string{"-placement", "pinned"}, wantErr: []string{"invalid plan:", `placement.mode "pinned": use auto`}},
		{name: "bad placement section", args: []string{"-plan", "testdata/badplacement.yaml"},
			wantErr: []string{"placement.mode auto with CPUs named for proxy, origins", `placement.origins "0-1" shares CPU 1 with placement.proxy "1"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, err := Load(tc.args, now, io.Discard)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("no error, plan %+v", p)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, p)
		})
	}
}

// loadgens is a plan file's key too, and the flag wins over it.
func TestLoadgensInPlanFile(t *testing.T) {
	t.Parallel()
	f := filepath.Join(t.TempDir(), "plan.yaml")
	if err := os.WriteFile(f, []byte("loadgens: 3\nconcurrency: 9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want int
	}{{[]string{"-plan", f}, 3}, {[]string{"-plan", f, "-loadgens", "2"}, 2}} {
		p, err := Load(tc.args, time.Now(), io.Discard)
		if err != nil || p.Loadgens != tc.want {
			t.Errorf("%v: loadgens %v, %v; want %d", tc.args, p, err, tc.want)
		}
	}
}

// dist is a plan key; -show prints it (local when unset) instead of
// running, and a bad value or an unknown key is an error naming it.
func TestDistAndShow(t *testing.T) {
	t.Parallel()
	f := filepath.Join(t.TempDir(), "plan.yaml")
	if err := os.WriteFile(f, []byte("dist: swarm\nloadgens: 3\nconcurrency: 9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantShown(t, []loadCase{
		{[]string{"-plan", f, "-show", "dist"}, "swarm"},
		{[]string{"-plan", f, "-show", "loadgens"}, "3"},
		{[]string{"-plan", f, "-dist", "local", "-show", "dist"}, "local"},
		{[]string{"-show", "dist"}, "local"},
	})
	wantLoadError(t, []loadCase{
		{[]string{"-dist", "k8s"}, `dist "k8s": use local`},
		{[]string{"-launch", "ssh"}, `launch "ssh": use local`},
		{[]string{"-launch", "swarm", "-loadgens", "3"}, `launch swarm with dist "": Swarm services need the lab on Docker Swarm`},
		{[]string{"-show", "nope"}, `-show "nope": not a plan key`},
	})
}

// -show answers what scripts/bench.sh and scripts/arms.sh need of a run
// from the one flag parser: both flag forms, the plan file's path, the
// defaults, and the run id the run would generate (RunID of its start).
func TestShowKeys(t *testing.T) {
	t.Parallel()
	f := filepath.Join(t.TempDir(), "plan.yaml")
	if err := os.WriteFile(f, []byte("results: planres\nplacement:\n  proxy: \"1\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const gen = "20261130T051500Z" // now, as the run id it generates
	wantShown(t, []loadCase{
		{[]string{"-show", "results,run,plan"}, "results=results\nrun=" + gen + "\nplan="},
		{[]string{"-show", "run"}, gen},
		{[]string{"-results", "/tmp/r", "-run", "x1", "-show", "results,run"}, "results=/tmp/r\nrun=x1"},
		{[]string{"-results=/tmp/r", "--run=x1", "-show=results,run"}, "results=/tmp/r\nrun=x1"},
		{[]string{"--results", "a=b", "-show", "results"}, "a=b"},
		{[]string{"-plan", f, "-show", "results,plan,placement,dist"}, "results=planres\nplan=" + f + "\nplacement=custom\ndist=local"},
		{[]string{"-plan=" + f, "-results", "flagres", "-placement", "none", "-show", "results,placement"}, "results=flagres\nplacement=none"},
		{[]string{"-placement", "none", "-placement", "auto", "-show", "placement"}, "auto"}, // the last one given wins
		{[]string{"-metrics-addr", "10.0.0.1:9500", "-show", "metrics-addr"}, "10.0.0.1:9500"},
	})
	wantLoadError(t, []loadCase{
		{[]string{"-results", "a\nb", "-show", "results,run"}, "-show results: its value \"a\\nb\" holds a line break"},
		{[]string{"-show", "results,nope"}, `-show "nope": not a plan key`},
		{[]string{"-show", "results,"}, `-show "": not a plan key`},
		{[]string{"-rsults", "x", "-show", "results"}, "flag provided but not defined: -rsults"},
		{[]string{"-run", "a/b", "-show", "run"}, `run "a/b"`},
	})
}

// loadCase is a command line of loadgen run and what Load answers: the
// value -show prints, or a part of the error.
type loadCase struct {
	args []string
	want string
}

func wantShown(t *testing.T, cases []loadCase) {
	t.Helper()
	for _, tc := range cases {
		_, err := Load(tc.args, now, io.Discard)
		if v, ok := errors.AsType[Shown](err); !ok || string(v) != tc.want {
			t.Errorf("%v: %v; want Shown(%q)", tc.args, err, tc.want)
		}
	}
}

func wantLoadError(t *testing.T, cases []loadCase) {
	t.Helper()
	for _, tc := range cases {
		if _, err := Load(tc.args, now, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v; want %q", tc.args, err, tc.want)
		}
	}
}

func TestHelpListsEveryFlag(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if _, err := Load([]string{"-h"}, now, &buf); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("err %v", err)
	}
	for _, f := range fields {
		if !strings.Contains(buf.String(), "-"+f.name) {
			t.Errorf("help lacks -%s", f.name)
		}
	}
	if !strings.Contains(buf.String(), "(default 127.0.0.1:9500)") {
		t.Errorf("help lacks defaults:\n%s", buf.String())
	}
}

// Every flag has a YAML key of the same name, so a plan file can say all a
// command line can.
func TestFlagsMatchYAMLKeys(t *testing.T) {
	t.Parallel()
	keys := map[string]bool{}
	for _, k := range yamlKeys() {
		keys[k] = true
	}
	for _, f := range fields {
		k := strings.ReplaceAll(f.name, "-", "_")
		if strings.HasPrefix(k, "slo_") {
			continue // nested under slo:
		}
		if !keys[k] {
			t.Errorf("flag -%s has no yaml key %s", f.name, k)
		}
	}
}

func TestExpandOrderAndIDs(t *testing.T) {
	t.Parallel()
	p, err := Load(strings.Fields("-tier 5s,30s -proxies traefik,nginx -origins fast,go -repeats 2 -scenarios simple,auth"), now, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	x, err := p.Expand()
	if err != nil {
		t.Fatal(err)
	}
	// 2 tiers x 2 repeats x 2 proxies x 2 origins x 2 scenarios, and the
	// A/A control's copy in each round of the first tier.
	if len(x.Cells) != 2*2*2*2*2+2 {
		t.Fatalf("%d cells", len(x.Cells))
	}
	var ids []string
	for _, c := range x.Cells[:19] {
		ids = append(ids, c.ID)
	}
	// The control sits next to its twin, after it in odd rounds and
	// before it in even ones.
	want := []string{
		"traefik.fast.simple.5s.r1", "traefik.fast.simple.5s.aa.r1", "traefik.fast.auth.5s.r1", "traefik.go.simple.5s.r1", "traefik.go.auth.5s.r1",
		"nginx.fast.simple.5s.r1", "nginx.fast.auth.5s.r1", "nginx.go.simple.5s.r1", "nginx.go.auth.5s.r1",
		"traefik.fast.simple.5s.aa.r2", "traefik.fast.simple.5s.r2", "traefik.fast.auth.5s.r2", "traefik.go.simple.5s.r2", "traefik.go.auth.5s.r2",
		"nginx.fast.simple.5s.r2", "nginx.fast.auth.5s.r2", "nginx.go.simple.5s.r2", "nginx.go.auth.5s.r2",
		"traefik.fast.simple.30s.r1",
	}
	if strings.Join(ids, " ") != strings.Join(want, " ") {
		t.Errorf("order\n got %v\nwant %v", ids, want)
	}
	if a := x.Cells[1]; a.Arm != cellid.ArmControl || a.PlanKey() != x.Cells[0].PlanKey() || a.GroupKey() == x.Cells[0].GroupKey() {
		t.Errorf("control cell %+v", a.Key)
	}
	c := x.Cells[0]
	if c.Path != "/fast/" || c.Skip != nil || x.Cells[2].Skip == nil || x.Cells[2].Path != "/auth/fast/" {
		t.Errorf("paths/skip: %+v %+v", c, x.Cells[2])
	}
	if !x.LongRun {
		t.Error("30s tier should make a long run")
	}
}

func TestExpandArmsAndRandomOrder(t *testing.T) {
	t.Parallel()
	expand := func(args string) *Expanded {
		t.Helper()
		p, err := Load(strings.Fields(args), now, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		x, err := p.Expand()
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	ids := func(x *Expanded) string {
		var out []string
		for _, c := range x.Cells {
			out = append(out, c.ID)
		}
		return strings.Join(out, " ")
	}
	// The duet: ABBA by repeat, cell by cell; no control without -control.
	d := expand("-tier 5s -proxies nginx -origins fast,go -repeats 2 -duet-cpus 0.7 -control=false")
	want := "nginx.fast.simple.5s.r1 nginx.fast.simple.5s.candidate.r1 nginx.go.simple.5s.r1 nginx.go.simple.5s.candidate.r1 " +
		"nginx.fast.simple.5s.candidate.r2 nginx.fast.simple.5s.r2 nginx.go.simple.5s.candidate.r2 nginx.go.simple.5s.r2"
	if got := ids(d); got != want {
		t.Errorf("duet order\n got %s\nwant %s", got, want)
	}
	o := expand("-tier 5s -proxies nginx -origins fast -repeats 2 -observer")
	// With an arm, the control is next to the plan's own cell too: before
	// it in odd repeats, after it in even ones.
	if got := ids(o); got != "nginx.fast.simple.5s.aa.r1 nginx.fast.simple.5s.r1 nginx.fast.simple.5s.unobserved.r1 "+
		"nginx.fast.simple.5s.unobserved.r2 nginx.fast.simple.5s.r2 nginx.fast.simple.5s.aa.r2" {
		t.Errorf("observer order %s", got)
	}
	// The control copies the first group that runs: caddy has no ratelimit.
	c := expand("-tier 5s -proxies caddy,nginx -origins fast -scenarios ratelimit -repeats 2")
	if got := ids(c); !strings.Contains(got, "nginx.fast.ratelimit.5s.r1 nginx.fast.ratelimit.5s.aa.r1") ||
		!strings.Contains(got, "nginx.fast.ratelimit.5s.aa.r2 nginx.fast.ratelimit.5s.r2") {
		t.Errorf("control not next to nginx's ratelimit cell: %s", got)
	}
	if one := expand("-tier 5s -proxies nginx -origins fast"); len(one.Cells) != 1 {
		t.Errorf("1 repeat has no control: %s", ids(one))
	}
	// Random: the same cells, each round a permutation, reproducible from
	// the seed (and from the run id when no seed is given).
	base := "-tier 5s -proxies nginx,haproxy,traefik,caddy -origins fast,go -repeats 6 -order random"
	r1, r2, r3 := expand(base+" -seed 7"), expand(base+" -seed 7"), expand(base+" -seed 8")
	if ids(r1) != ids(r2) || ids(r1) == ids(r3) {
		t.Error("random order is not a function of the seed")
	}
	inter := expand("-tier 5s -proxies nginx,haproxy,traefik,caddy -origins fast,go -repeats 6")
	if ids(r1) == ids(inter) {
		t.Error("random order equals interleaved")
	}
	got, want2 := strings.Fields(ids(r1)), strings.Fields(ids(inter))
	slices.Sort(got)
	slices.Sort(want2)
	if !slices.Equal(got, want2) {
		t.Error("random order changes the cells, not only their order")
	}
	firsts := map[string]bool{}
	for i := 0; i < len(r1.Cells); i += 9 { // 8 cells and the control per round
		firsts[r1.Cells[i].Proxy] = true
	}
	for i, c := range r1.Cells {
		if c.Arm != cellid.ArmControl {
			continue
		}
		prev, next := r1.Cells[max(i-1, 0)], r1.Cells[min(i+1, len(r1.Cells)-1)]
		if (prev.GroupKey() != c.PlanKey() || prev.Repeat != c.Repeat) && (next.GroupKey() != c.PlanKey() || next.Repeat != c.Repeat) {
			t.Fatalf("control %s is not next to its twin (%s, %s)", c.ID, prev.ID, next.ID)
		}
	}
	if len(firsts) < 2 {
		t.Errorf("6 shuffled rounds all start with the same proxy: %v", firsts)
	}
	if p, _ := Load(strings.Fields("-order random -run x"), now, io.Discard); p == nil || p.Seed == 0 {
		t.Error("no seed derived from the run id")
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"good.yaml", "unknown.yaml", "badduration.yaml"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("stages: [{duration: 1s, target: 5}]\nmode: stages\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Parse(b)
		if err != nil {
			return
		}
		p.Finish(now)
		if p.Validate() == nil {
			if math.IsNaN(p.Rate) || p.Rate < 0 {
				t.Fatalf("valid plan with rate %g", p.Rate)
			}
			if _, err := p.Expand(); err != nil {
				t.Fatalf("valid plan does not expand: %v", err)
			}
		}
	})
}

func FuzzParseTiers(f *testing.F) {
	for _, s := range []string{"quick", "all", "10s,90s", "quick,quick", "1h59m", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tiers, err := ParseTiers(s)
		if err != nil {
			return
		}
		for _, tr := range tiers {
			if tr.Duration < time.Second || tr.Duration > MaxCell {
				t.Fatalf("%q gave tier %+v", s, tr)
			}
		}
	})
}
