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
		args := append([]string{"-url", srv.URL + "/", "-knee", "-knee-start", "150", "-knee-step", "25", "-knee-max", "600",
			"-knee-step-d", "400ms", "-max-rate", "300", "-json", "-quiet"}, extra...)
		if code := Main(context.Background(), args, &out, &errb, discard()); code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		var k kneeJSON
		if err := json.Unmarshal(out.Bytes(), &k); err != nil {
			t.Fatalf("%v: %s", err, out.String())
		}
		return k
	}
	// Steps of 25 req/s: the step at the cap itself may break on a loaded
	// host (fewer than 99 % of its sends in the window), the one below it
	// holds, and either is at 80 % of the ceiling or more.
	k := knee("-ceiling", "300")
	if k.LastHeld < 250 || k.LastHeld > 300 {
		t.Fatalf("knee under a 300 req/s cap: %v, steps %+v", k.LastHeld, k.Steps)
	}
	if last := k.Steps[len(k.Steps)-1]; last.Held || !strings.Contains(last.Why, "max rate cap") {
		t.Errorf("the step above the cap broke with %q, want the cap named", last.Why)
	}
	if !k.Invalid || k.Ceiling != 300 || !strings.Contains(k.InvalidReason, "of the loadgen's own ceiling 300 req/s") {
		t.Errorf("knee %v against a ceiling of 300: invalid %v %q", k.LastHeld, k.Invalid, k.InvalidReason)
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
