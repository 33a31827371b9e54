package attackcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A knee search under -max-rate finds the cap, and -ceiling judges that
// knee the instrument's: invalid, naming both numbers; without -ceiling it
// is not judged, and a -max-rate closed loop reports what it held.
func TestKneeJudgedAgainstCeiling(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	t.Cleanup(srv.Close)
	knee := func(extra ...string) kneeJSON {
		var out, errb bytes.Buffer
		args := append([]string{"-url", srv.URL + "/", "-knee", "-knee-start", "1000", "-knee-step", "125", "-knee-max", "4000",
			"-knee-step-d", "400ms", "-max-rate", "2000", "-json", "-quiet"}, extra...)
		if code := Main(context.Background(), args, &out, &errb, discard()); code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		var k kneeJSON
		if err := json.Unmarshal(out.Bytes(), &k); err != nil {
			t.Fatalf("%v: %s", err, out.String())
		}
		return k
	}
	// Steps of 125 req/s (6 % of the cap) of 400 ms, at rates where one
	// send missed at a step's very end is under 1 % of it: the step at the
	// cap itself may break on a loaded host (fewer than 99 % of its sends
	// in the window), a step below it holds (a stall that broke it is run
	// again), and either is at 80 % of the ceiling or more.
	k := knee("-ceiling", "2000")
	if k.LastHeld < 1625 || k.LastHeld > 2000 {
		t.Fatalf("knee under a 2000 req/s cap: %v, steps %+v", k.LastHeld, k.Steps)
	}
	// A step the loadgen alone broke (a host's stall) runs once more at
	// its rate; a step at or above the cap never does.
	for i, st := range k.Steps {
		if st.Retried && (st.Held || i+1 == len(k.Steps) || k.Steps[i+1].Rate != st.Rate || k.Steps[i+1].Retried || st.Rate >= 2000) {
			t.Errorf("step %d at %v req/s run again: %+v", i, st.Rate, k.Steps)
		}
	}
	if last := k.Steps[len(k.Steps)-1]; last.Held || !strings.Contains(last.Why, "max rate cap") {
		t.Errorf("the step above the cap broke with %q, want the cap named", last.Why)
	}
	if !k.Invalid || k.Ceiling != 2000 || !strings.Contains(k.InvalidReason, "of the loadgen's own ceiling 2000 req/s") {
		t.Errorf("knee %v against a ceiling of 2000: invalid %v %q", k.LastHeld, k.Invalid, k.InvalidReason)
	}
	if k := knee(); k.Invalid || k.InvalidReason != "" {
		t.Errorf("without -ceiling the knee is not judged: %+v", k)
	}

	var out, errb bytes.Buffer
	if code := Main(context.Background(), []string{"-url", srv.URL + "/", "-c", "4", "-d", "500ms", "-max-rate", "200", "-json", "-quiet"}, &out, &errb, discard()); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var s Summary
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	if s.MaxRate != 200 || s.Held == 0 || s.RPS > 202 {
		t.Errorf("closed loop under -max-rate 200: %+v", s)
	}
}
