package report

import (
	"strings"
	"testing"
	"time"

	"proxybench/internal/manifest"
)

func f64(v float64) *float64 { return &v }

// TestContentionOf turns the manifest's seconds into shares of the
// window: foreign and steal per CPU of the role's list, run delay and
// throttling per second, pressure only from the role's own cgroup.
func TestContentionOf(t *testing.T) {
	t.Parallel()
	if ContentionOf(nil) != nil || ContentionOf(&manifest.Contention{}) != nil {
		t.Error("no readings: want no contention")
	}
	got := ContentionOf(&manifest.Contention{WindowSeconds: 4, Roles: []manifest.RoleContention{
		{Role: manifest.RoleProxy, Container: "proxybench-nginx", CPUs: "1", ForeignSeconds: f64(2), StealSeconds: f64(0.2),
			RunDelaySeconds: f64(3.2), PressureSeconds: f64(1), PressureScope: manifest.PressureCgroup,
			Throttling: &manifest.Throttling{Periods: 40, ThrottledPeriods: 4, ThrottledSeconds: 0.4}, ThreadsExited: 1},
		{Role: manifest.RoleLoadgen, CPUs: "0-1", ForeignSeconds: f64(2), PressureSeconds: f64(3), PressureScope: manifest.PressureHost},
	}})
	if len(got) != 2 {
		t.Fatalf("%d roles", len(got))
	}
	p, l := got[0], got[1]
	for _, c := range []struct {
		what      string
		got, want Num
	}{{"proxy foreign", p.ForeignShare, 0.5}, {"proxy steal", p.StealShare, 0.05}, {"proxy run delay", p.RunDelayPerS, 0.8},
		{"proxy pressure", p.PressureShare, 0.25}, {"proxy throttled", p.ThrottledPerS, 0.1},
		{"loadgen foreign over 2 CPUs", l.ForeignShare, 0.25}} {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
	for what, v := range map[string]Num{"loadgen host pressure": l.PressureShare, "loadgen steal": l.StealShare,
		"loadgen run delay": l.RunDelayPerS, "loadgen throttled": l.ThrottledPerS} {
		if v.Known() {
			t.Errorf("%s = %v, want unknown", what, v)
		}
	}
	if p.ThreadsExited != 1 || p.Container != "proxybench-nginx" || l.PressureScope != manifest.PressureHost {
		t.Errorf("roles %+v", got)
	}
}

func near(a, b Num) bool {
	return a.Known() && float64(a) > float64(b)-1e-9 && float64(a) < float64(b)+1e-9
}

// quiet is a role that got its CPUs: a proxy alone on CPU 1 whose two
// workers wait for each other (the run delay of a busy proxy), with a
// little of the host's background on its CPU.
func quiet(role string) RoleContention {
	return RoleContention{Role: role, CPUs: "1", ForeignShare: 0.03, RunDelayPerS: 0.6, PressureShare: 0.5,
		StealShare: 0.01, ThrottledPerS: 0}
}

// TestJudgeContention: a row per threshold, each at and below it.
func TestJudgeContention(t *testing.T) {
	t.Parallel()
	th := DefaultContention
	at := func(v float64) Num { return Num(v) }
	under := func(v float64) Num { return Num(v - 0.001) }
	for _, tc := range []struct {
		name string
		mut  func(r *RoleContention)
		role string
		fire bool
	}{
		{"quiet proxy", func(*RoleContention) {}, manifest.RoleProxy, false},
		{"hog on the proxy's CPU", func(r *RoleContention) { r.ForeignShare, r.RunDelayPerS = 0.46, 0.48 }, manifest.RoleProxy, true},
		{"foreign at the threshold", func(r *RoleContention) { r.ForeignShare = at(th.ForeignShare) }, manifest.RoleProxy, true},
		{"foreign just under", func(r *RoleContention) { r.ForeignShare = under(th.ForeignShare) }, manifest.RoleProxy, false},
		// Somebody else had the CPU, but the role did not want it.
		{"foreign, no wait", func(r *RoleContention) {
			r.ForeignShare, r.RunDelayPerS, r.PressureShare = 0.9, under(th.RunDelayPerS), 0.05
		}, manifest.RoleProxy, false},
		{"foreign, run delay at the threshold", func(r *RoleContention) { r.ForeignShare, r.RunDelayPerS = 0.9, at(th.RunDelayPerS) }, manifest.RoleProxy, true},
		{"foreign, run delay unread, own pressure", func(r *RoleContention) {
			r.ForeignShare, r.RunDelayPerS, r.PressureShare = 0.5, NaN(), at(th.PressureShare)
		}, manifest.RoleProxy, true},
		{"foreign, run delay unread, little pressure", func(r *RoleContention) {
			r.ForeignShare, r.RunDelayPerS, r.PressureShare = 0.5, NaN(), under(th.PressureShare)
		}, manifest.RoleProxy, false},
		{"foreign unknown", func(r *RoleContention) { r.ForeignShare, r.RunDelayPerS = NaN(), 5 }, manifest.RoleProxy, false},
		{"steal", func(r *RoleContention) { r.StealShare = at(th.StealShare) }, manifest.RoleProxy, true},
		{"steal under", func(r *RoleContention) { r.StealShare = under(th.StealShare) }, manifest.RoleProxy, false},
		{"origin throttled", func(r *RoleContention) { r.ThrottledPerS = at(th.ThrottledPerS) }, manifest.RoleOrigin, true},
		{"origin throttled under", func(r *RoleContention) { r.ThrottledPerS = under(th.ThrottledPerS) }, manifest.RoleOrigin, false},
		// The proxy's quota is the limit under test; the loadgen's is loadgen_bound's.
		{"proxy throttled", func(r *RoleContention) { r.ThrottledPerS = 0.5 }, manifest.RoleProxy, false},
		{"loadgen throttled", func(r *RoleContention) { r.ThrottledPerS = 0.5 }, manifest.RoleLoadgen, false},
		{"hog on the loadgen's CPU", func(r *RoleContention) { r.ForeignShare, r.RunDelayPerS = 0.9, 0.2 }, manifest.RoleLoadgen, true},
		{"hog on the origin's CPU", func(r *RoleContention) { r.ForeignShare, r.RunDelayPerS = 0.9, 1.6 }, manifest.RoleOrigin, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := baseCell()
			r := quiet(tc.role)
			tc.mut(&r)
			c.Contention = []RoleContention{quiet(manifest.RoleLoadgen), r}
			if tc.role == manifest.RoleLoadgen {
				c.Contention = []RoleContention{r}
			}
			Judge(&c, DefaultThresholds, false)
			sev, why := "", ""
			for _, f := range c.Validity.Flags {
				if f.Code == FlagContended {
					sev, why = f.Severity, f.Reason
				}
			}
			switch {
			case tc.fire && sev != Suspect:
				t.Errorf("not contended (flags %+v)", c.Validity.Flags)
			case tc.fire && !strings.HasPrefix(why, tc.role+": "):
				t.Errorf("reason %q does not name the %s first", why, tc.role)
			case !tc.fire && sev != "":
				t.Errorf("contended: %s", why)
			}
			if !tc.fire && c.Validity.Verdict != Valid {
				t.Errorf("verdict %s (flags %+v)", c.Validity.Verdict, c.Validity.Flags)
			}
		})
	}
}

// TestContendedReasons: the reason names who was starved and by how much,
// with the thresholds, the proxy first, every starved role in one flag.
func TestContendedReasons(t *testing.T) {
	t.Parallel()
	c := baseCell()
	c.Contention = []RoleContention{
		{Role: manifest.RoleLoadgen, CPUs: "0", ForeignShare: 0.5, RunDelayPerS: 0.3, PressureShare: NaN(), StealShare: 0.21, ThrottledPerS: 0},
		{Role: manifest.RoleProxy, Container: "proxybench-nginx", CPUs: "1", ForeignShare: 0.46, RunDelayPerS: 0.48, PressureShare: 0.7, StealShare: 0, ThrottledPerS: 0},
		{Role: manifest.RoleOrigin, Container: "proxybench-origin-fast", CPUs: "0-1", ForeignShare: 0.1, RunDelayPerS: 2, PressureShare: 0.9, StealShare: 0, ThrottledPerS: 0.2},
	}
	Judge(&c, DefaultThresholds, false)
	var got []string
	for _, f := range c.Validity.Flags {
		got = append(got, f.Code+" ("+f.Severity+"): "+f.Reason)
	}
	want := "contended (suspect): proxy (proxybench-nginx): 46 % of its CPU 1's time went to other processes (>= 25 %) while its threads waited 0.48 s per s for a CPU (>= 0.1 s); " +
		"origin (proxybench-origin-fast): its cgroup's CPU quota throttled it 0.20 s per s (>= 0.05 s); " +
		"loadgen: 50 % of its CPU 0's time went to other processes (>= 25 %) while its threads waited 0.30 s per s for a CPU (>= 0.1 s); the hypervisor stole 21 % of its CPU 0's time (>= 20 %)"
	if len(got) != 1 || got[0] != want {
		t.Errorf("flags\n%s\nwant\n%s", strings.Join(got, "\n"), want)
	}
	if c.Validity.Verdict != Suspect {
		t.Errorf("verdict %s", c.Validity.Verdict)
	}
}

// TestJudgeStealPerSecond: a burst of steal is judged on its worst second,
// not on the window's average. A fake in the sense of the brief: the
// hypervisor's steal cannot be made on demand here, so the cell carries
// the loadgen's per-second reading (StealWorstSecond) as a real run writes
// it; the watch itself is tested in internal/cputime.
func TestJudgeStealPerSecond(t *testing.T) {
	t.Parallel()
	th := DefaultContention
	for _, tc := range []struct {
		name  string
		worst Num
		fire  bool
	}{
		{"a 5 s burst in a 60 s cell: 8 % on average, 40 % in its worst second", 0.40, true},
		{"at the threshold", Num(th.StealShare), true},
		{"just under", Num(th.StealShare - 0.001), false},
		{"not watched", NaN(), false},
	} {
		c := baseCell()
		c.Contention = []RoleContention{quiet(manifest.RoleLoadgen), quiet(manifest.RoleProxy)}
		c.Contention[1].StealShare = 0.08 // the window's average: under the threshold
		c.StealWorstSecond = tc.worst
		Judge(&c, DefaultThresholds, false)
		why := ""
		for _, f := range c.Validity.Flags {
			if f.Code == FlagContended && f.Severity == Suspect {
				why = f.Reason
			}
		}
		if got := strings.Contains(why, "worst second"); got != tc.fire {
			t.Errorf("%s: contended %q, want fired %v", tc.name, why, tc.fire)
		}
	}
}

// TestJudgeStall: a stall of the loadgen is judged on what it did to the
// window: at least manifest.StallFloor long and manifest.StallShare of
// the window. The stall itself is made for real (SIGSTOP) in
// internal/cputime and e2e's TestFlagLittlesLaw; here the reading is
// carried as a real run writes it.
func TestJudgeStall(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		seconds float64
		window  float64
		fire    bool
	}{
		{"1 s in a 4 s window", 1, 4, true},
		{"at both thresholds: 50 ms of 5 s", 0.050, 5, true},
		{"50 ms of a 60 s window: under 1 %", 0.050, 60, false},
		{"600 ms of a 60 s window: 1 %", 0.600, 60, true},
		{"just under the floor", 0.049, 2, false},
	} {
		c := baseCell()
		c.Contention = []RoleContention{quiet(manifest.RoleLoadgen), quiet(manifest.RoleProxy)}
		c.DurationS = Num(tc.window)
		c.Stall = &manifest.Stall{Seconds: tc.seconds, At: c.Start.Add(time.Second)}
		Judge(&c, DefaultThresholds, false)
		why := ""
		for _, f := range c.Validity.Flags {
			if f.Code == FlagContended && f.Severity == Suspect {
				why = f.Reason
			}
		}
		if got := strings.Contains(why, "the loadgen could not run for"); got != tc.fire {
			t.Errorf("%s: contended %q, want fired %v", tc.name, why, tc.fire)
		}
		if tc.fire && !strings.Contains(why, "at +1.0 s into the window") {
			t.Errorf("%s: the reason %q does not say when", tc.name, why)
		}
	}
}
