package runner

import (
	"bytes"
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"proxybench/internal/cellid"
	"proxybench/internal/manifest"
	"proxybench/internal/scenario"
	"proxybench/loadgen/internal/attack"
	"proxybench/loadgen/internal/load"
	"proxybench/loadgen/internal/plan"
)

// authProxy is a real HTTP server checking the API key the way the
// proxies' /auth/ routes do; leaky lets a wrong key through.
func authProxy(t *testing.T, leaky bool) *httptest.Server {
	return fakeProxy(t, func(w http.ResponseWriter, r *http.Request) {
		if rest, ok := strings.CutPrefix(r.URL.Path, "/auth"); ok {
			key := r.Header.Get(scenario.APIKeyHeader)
			if !slices.Contains(scenario.ValidAPIKeys, key) && !(leaky && key == scenario.WrongAPIKey) {
				w.WriteHeader(http.StatusUnauthorized)
				io.WriteString(w, "invalid api key\n")
				return
			}
			r.URL.Path = rest
		}
		origin(w, r)
	})
}

func TestAuthMixCountsEachVariant(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		leaky     bool
		wantWrong bool
	}{
		{"exact proxy", false, false},
		{"proxy letting a wrong key through", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			srv := authProxy(t, tt.leaky)
			code := run(context.Background(), args(t, dir, "-tier", "1s", "-proxies", "nginx", "-origins", "fast", "-scenarios", "auth",
				"-rate", "400", "-auth-invalid", "0.1"),
				io.Discard, io.Discard, testLog(t), env{target: targets(map[string]*httptest.Server{"nginx": srv}), docker: noDocker, clock: &sleeper{}})
			if code != 0 {
				t.Fatalf("exit %d", code)
			}
			m, err := manifest.Read(filepath.Join(dir, "t1", "manifest.json"))
			if err != nil {
				t.Fatal(err)
			}
			sd := m.Cells[0].ScenarioData
			if sd == nil || len(sd.Variants) != 3 || sd.AuthWrong == nil {
				t.Fatalf("scenario data %+v", sd)
			}
			// Open loop: each variant is scheduled exactly its share of
			// 400 req/s; what did not complete inside the window was sent
			// late, missed at its end (a timer waking after it on a busy
			// machine) or failed, and the cell accounts for every one.
			c := m.Cells[0]
			var short int64
			for name, want := range map[string]int64{"valid": 360, "missing": 20, "wrong": 20} {
				got := sd.Variants[name].Requests
				if got > want+1 {
					t.Errorf("%s: %d requests, more than its %d scheduled", name, got, want)
				}
				short += want - got
			}
			if math.Abs(float64(short-(c.Missed+c.Late+c.Errors))) > 3 {
				t.Errorf("variants %d short of their schedule, but the cell counts %d missed + %d late + %d errors", short, c.Missed, c.Late, c.Errors)
			}
			if c.Sent+c.Missed != c.Scheduled || math.Abs(float64(c.Scheduled-400)) > 3 {
				t.Errorf("sent %d + missed %d != scheduled %d (want 400)", c.Sent, c.Missed, c.Scheduled)
			}
			if got := sd.Variants["missing"].Codes["401"]; got != sd.Variants["missing"].Requests {
				t.Errorf("missing key: %d 401s of %d", got, sd.Variants["missing"].Requests)
			}
			if (*sd.AuthWrong > 0) != tt.wantWrong {
				t.Errorf("auth_wrong %d, want wrong answers: %v", *sd.AuthWrong, tt.wantWrong)
			}
			if c := m.Cells[0]; c.Requests != sd.Variants["valid"].Requests+sd.Variants["missing"].Requests+sd.Variants["wrong"].Requests {
				t.Errorf("cell requests %d are not the sum of the variants %+v", c.Requests, sd.Variants)
			}
		})
	}
}

func TestSplitSpec(t *testing.T) {
	t.Parallel()
	vs := []scenario.Variant{{Name: "valid", Share: 0.9}, {Name: "missing", Share: 0.05}, {Name: "wrong", Share: 0.05}}
	tests := []struct {
		name     string
		spec     attack.Spec
		wantConc []int
		wantRate []float64
	}{
		{"closed splits connections, at least one each", attack.Spec{Load: load.Closed{Connections: 10}}, []int{9, 1, 1}, []float64{0, 0, 0}},
		{"open splits the rate", attack.Spec{Load: load.Open{Rate: 1000, MaxInFlight: 100}}, []int{90, 5, 5}, []float64{900, 50, 50}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for i, s := range splitSpec(tt.spec, vs) {
				if conc, rate := s.Load.Summary(); conc != tt.wantConc[i] || math.Abs(rate-tt.wantRate[i]) > 1e-9 {
					t.Errorf("variant %s: concurrency %d rate %g, want %d %g", vs[i].Name, conc, rate, tt.wantConc[i], tt.wantRate[i])
				}
			}
		})
	}
}

// TestScenarioData: the runner hands the window's counts and the probes to
// the cell's scenario and records what it derives; a cell whose scenario
// has no account gets none.
func TestScenarioData(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)
	cell := func(name string) plan.Cell {
		return plan.Cell{Key: cellid.Key{Scenario: name}, Shape: mustScenario(t, name).Resolve(scenario.Settings{AuthInvalid: 0.1, SlowDelay: 2 * time.Second})}
	}
	mc := manifest.Cell{Start: start, End: start.Add(10 * time.Second), Requests: 15000,
		Codes: map[string]int64{"200": 10050, "429": 4950}}
	if sd := scenarioData(cell("ratelimit"), &mc, nil, probes{}); sd == nil || math.Abs(sd.Precision-1) > 1e-9 || sd.OfferedRPS != 1500 {
		t.Errorf("ratelimit: %+v, want precision 1 at 1500 req/s offered", sd)
	}
	per := map[string]*attack.Result{"valid": {Requests: 9, Codes: map[int]int64{200: 9}}, "wrong": {Requests: 1, Codes: map[int]int64{200: 1}}}
	if sd := scenarioData(cell("auth"), &mc, per, probes{}); sd == nil || sd.AuthWrong == nil || *sd.AuthWrong != 1 ||
		sd.Variants["valid"].Requests != 9 || sd.Variants["missing"].Requests != 0 {
		t.Errorf("auth: %+v, want the wrong key let through counted", sd)
	}
	mem := &manifest.ProxyMemory{Held: 4}
	if sd := scenarioData(cell("slow"), &mc, nil, probes{memory: mem}); sd == nil || sd.Memory != mem || sd.DelayS != 2 {
		t.Errorf("slow: %+v, want the delay and the memory probe", sd)
	}
	if sd := scenarioData(cell("simple"), &mc, nil, probes{}); sd != nil {
		t.Errorf("simple cell got scenario data %+v", sd)
	}
	if sd := scenarioData(plan.Cell{}, &mc, nil, probes{}); sd != nil {
		t.Errorf("unresolved cell got scenario data %+v", sd)
	}
}

// TestProbesFollowTheScenario: the memory and TIME_WAIT probes run for the
// scenarios that ask for them, whatever their names.
func TestProbesFollowTheScenario(t *testing.T) {
	t.Parallel()
	for _, sc := range scenario.List() {
		c := plan.Cell{Mode: "closed", Concurrency: 3, Shape: sc.Resolve(scenario.Settings{SlowDelay: time.Second})}
		m := startMemory(c, nil).finish()
		if (m != nil) != (sc.Probes&scenario.ProbeMemory != 0) {
			t.Errorf("%s: memory probe %+v, scenario probes %b", sc.Name, m, sc.Probes)
		}
		if m != nil && (m.Unavailable == "" || m.Held != 3) {
			t.Errorf("%s: without a container the memory probe says why: %+v", sc.Name, m)
		}
		if wants(c, scenario.ProbeTimeWait) != sc.NewConnPerRequest {
			t.Errorf("%s: TIME_WAIT probe %v, new connection per request %v", sc.Name, wants(c, scenario.ProbeTimeWait), sc.NewConnPerRequest)
		}
	}
}

func TestCountTimeWait(t *testing.T) {
	t.Parallel()
	all, at := countTimeWait(filepath.Join("testdata", "proc_net_tcp"), 8882) // 0x22B2
	if all != 3 || at != 2 {
		t.Errorf("TIME_WAIT %d, at :8882 %d; want 3 and 2", all, at)
	}
	if all, at := countTimeWait(filepath.Join("testdata", "missing"), 8882); all != 0 || at != 0 {
		t.Errorf("missing table counted %d %d", all, at)
	}
}

func TestHeldConns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		c    plan.Cell
		want int
	}{
		{plan.Cell{Mode: "closed", Concurrency: 10000, Shape: scenario.Shape{DelayS: 2}}, 10000},
		{plan.Cell{Mode: "open", Rate: 1000, Concurrency: 10000, Shape: scenario.Shape{DelayS: 2}}, 2000},
		{plan.Cell{Mode: "open", Rate: 10000, Concurrency: 5000, Shape: scenario.Shape{DelayS: 2}}, 5000},
	}
	for _, tt := range tests {
		if got := heldConns(tt.c); got != tt.want {
			t.Errorf("%+v: %d, want %d", tt.c, got, tt.want)
		}
	}
}

// FuzzProcParsers: the /proc parser never panics and never counts more
// TIME_WAIT sockets than lines.
func FuzzProcParsers(f *testing.F) {
	b, _ := os.ReadFile(filepath.Join("testdata", "proc_net_tcp"))
	f.Add(b, 8882)
	f.Fuzz(func(t *testing.T, data []byte, port int) {
		all, at := countTimeWaitIn(bytes.NewReader(data), port)
		if at > all || all > bytes.Count(data, []byte("\n"))+1 {
			t.Errorf("counted %d (%d at port) in %d lines", all, at, bytes.Count(data, []byte("\n"))+1)
		}
	})
}
