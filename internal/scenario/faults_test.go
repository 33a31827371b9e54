package scenario

import (
	"math"
	"strings"
	"testing"
	"time"

	"proxybench/internal/manifest"
)

func TestParseFaults(t *testing.T) {
	s, err := ParseFaults(DefaultFaults)
	if err != nil {
		t.Fatal(err)
	}
	want := Schedule{{FaultKill, 0.2, 0.4}, {FaultPause, 0.5, 0.6}, {Fault503, 0.7, 0.8}}
	if len(s) != len(want) {
		t.Fatalf("%v, want %v", s, want)
	}
	for i := range want {
		if s[i].Kind != want[i].Kind || math.Abs(s[i].From-want[i].From) > 1e-12 || math.Abs(s[i].To-want[i].To) > 1e-12 {
			t.Errorf("fault %d = %+v, want %+v", i, s[i], want[i])
		}
	}
	if s.String() != DefaultFaults {
		t.Errorf("String() = %q, want %q", s.String(), DefaultFaults)
	}
	if s, err := ParseFaults(" kill@12.5-30 "); err != nil || s[0].From != 0.125 || s[0].To != 0.3 {
		t.Errorf("percent sign optional: %v %v", s, err)
	}
	for in, want := range map[string]string{
		"":                           "empty",
		"kill":                       `"kill" has no @`,
		"boom@10%-20%":               `unknown kind "boom"`,
		"kill@10%":                   "want from%-to%",
		"kill@x-20%":                 "want from%-to%",
		"kill@0%-20%":                "0 < from < to <= 100",
		"kill@30%-20%":               "0 < from < to <= 100",
		"kill@30%-120%":              "0 < from < to <= 100",
		"kill@10%-NaN":               "want from%-to%",
		"kill@10%-30%,pause@20%-40%": "starts before fault 1 ends",
	} {
		_, err := ParseFaults(in)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `faults "`+in+`"`) {
			t.Errorf("ParseFaults(%q) = %v, want an error naming the input and %q", in, err, want)
		}
	}
}

func TestFaultsSupport(t *testing.T) {
	sh := faults.Resolve(Settings{Faults: Schedule{{FaultKill, 0.2, 0.4}}})
	if len(sh.Faults) != 1 || faults.Path("go", Settings{}) != "/faults/fast/" {
		t.Errorf("shape %+v, path %s", sh, faults.Path("go", Settings{}))
	}
	if faults.SkipOrigin("fast") != nil || faults.SkipOrigin("go") == nil || faults.Skip("caddy") != nil || faults.Skip("custom") == nil {
		t.Errorf("faults runs on fast behind every proxy, no other origin, not the custom slot")
	}
}

// TestAnalyzeFaults feeds a synthetic window of known answers: 10 s, a
// request every millisecond answered in 1 ms, and three faults.
//   - kill 2-4 s (back 4.3 s): every other request fails from 2.0 to
//     2.5 s, so detection is the last failure, 2.499 s - 2 s; answers take
//     20 ms from 4.3 to 4.8 s, so recovery is 0.5 s.
//   - pause 5-6 s: failures until 5.95 s, past the last bin before the
//     end: not detected; back at once.
//   - 503 7-8 s: nothing fails: "none failed", recovery 0.
func TestAnalyzeFaults(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	s := NewFaultSeries(10 * time.Second)
	s.Begin(t0)
	for i := range 10000 {
		done := t0.Add(time.Duration(i) * time.Millisecond)
		sec := done.Sub(t0).Seconds()
		lat, code, reason := time.Millisecond, 200, ""
		switch {
		case sec >= 2 && sec < 2.5 && i%2 == 1:
			reason = "refused"
		case sec >= 4.3 && sec < 4.8:
			lat = 20 * time.Millisecond
		case sec >= 5.0 && sec < 5.95 && i%2 == 1:
			code = 504
		}
		s.Observe(s.Bin(done), done, lat, code, reason)
	}
	log := []manifest.FaultEvent{
		{Kind: FaultKill, Start: at(2), Applied: at(2.01), End: at(4), Restored: at(4.3)},
		{Kind: FaultPause, Start: at(5), Applied: at(5.01), End: at(6), Restored: at(6.01)},
		{Kind: Fault503, Start: at(7), Applied: at(7.01), End: at(8), Restored: at(8.01)},
	}
	f := AnalyzeFaults(log, s, at(10))
	if len(f.Timeline.Requests) != 100 || f.BinS != 0.1 {
		t.Fatalf("timeline of %d bins of %g s, want 100 of 0.1", len(f.Timeline.Requests), f.BinS)
	}
	if f.SteadyP99S != latUpper(latBucket(time.Millisecond)) || math.Abs(f.RecoveryThresholdS-(f.SteadyP99S+RecoveryFloor.Seconds())) > 1e-12 { // the floor: 2x a 1 ms p99 is under p99 + 5 ms
		t.Errorf("steady p99 %g, threshold %g", f.SteadyP99S, f.RecoveryThresholdS)
	}
	near := func(got *float64, want float64) bool { return got != nil && math.Abs(*got-want) < 1e-9 }
	kill, pause, s503 := f.Results[0], f.Results[1], f.Results[2]
	if kill.Failed != 250 || kill.Status5xx != 0 || !near(kill.FirstFailureS, 0.001) || !near(kill.DetectionS, 0.499) || !near(kill.RecoveryS, 0.5) {
		t.Errorf("kill: %+v (detection %v, recovery %v)", kill, val(kill.DetectionS), val(kill.RecoveryS))
	}
	if pause.Failed != 475 || pause.Status5xx != 475 || pause.DetectionS != nil || pause.Detection != "failed until the replica came back" || !near(pause.RecoveryS, 0) {
		t.Errorf("pause: %+v (recovery %v)", pause, val(pause.RecoveryS))
	}
	if s503.Failed != 0 || s503.Detection != "none failed" || s503.FirstFailureS != nil || !near(s503.RecoveryS, 0) {
		t.Errorf("503: %+v", s503)
	}
	if math.Abs(kill.SpanS-3) > 1e-9 || math.Abs(s503.SpanS-3) > 1e-9 {
		t.Errorf("spans %g, %g, want 3 s each (to the next fault, to the window's end)", kill.SpanS, s503.SpanS)
	}
	// Never recovered: 20 ms answers from the restore to the end.
	s2 := NewFaultSeries(4 * time.Second)
	s2.Begin(t0)
	for i := range 4000 {
		done := t0.Add(time.Duration(i) * time.Millisecond)
		lat := time.Millisecond
		if i >= 2000 {
			lat = 20 * time.Millisecond
		}
		s2.Observe(s2.Bin(done), done, lat, 200, "")
	}
	r := AnalyzeFaults([]manifest.FaultEvent{{Kind: FaultPause, Start: at(1), End: at(2), Restored: at(2)}}, s2, at(4)).Results[0]
	if r.RecoveryS != nil || !strings.Contains(r.Recovery, "not back") {
		t.Errorf("never recovered: %+v", r)
	}
	r = AnalyzeFaults([]manifest.FaultEvent{{Kind: FaultKill, Start: at(1), End: at(2), Error: "no"}}, s2, at(4)).Results[0]
	if r.RecoveryS != nil || r.Recovery != "the replica was not brought back" {
		t.Errorf("not restored: %+v", r)
	}
}

func val(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestLatBuckets(t *testing.T) {
	prev := -1.0
	for i := range latBuckets {
		if u := latUpper(i); u <= prev {
			t.Fatalf("bucket %d's upper bound %g not above %g", i, u, prev)
		}
		prev = latUpper(i)
	}
	for _, d := range []time.Duration{0, 5 * time.Microsecond, 16 * time.Microsecond, time.Millisecond, 999 * time.Millisecond, 60 * time.Second} {
		i := latBucket(d)
		if up := latUpper(i); up < d.Seconds() || up > d.Seconds()*1.125+1e-6 {
			t.Errorf("%v in bucket %d up to %g s: not within 12.5 %%", d, i, up)
		}
	}
}
