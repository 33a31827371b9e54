package attackcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKneeStalledChild is the knee search that TestKneeRunsAStalledStepAgain
// stops: it runs only as that test's child (PB_KNEE_CHILD_URL set).
func TestKneeStalledChild(t *testing.T) {
	url := os.Getenv("PB_KNEE_CHILD_URL")
	if url == "" {
		t.Skip("the child of TestKneeRunsAStalledStepAgain")
	}
	var errb bytes.Buffer
	if code := Main(context.Background(), []string{"-url", url, "-knee", "-knee-start", "200", "-knee-step", "200", "-knee-max", "400",
		"-knee-step-d", "1s", "-knee-p99", "100ms", "-json", "-quiet"}, os.Stdout, &errb, discard()); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
}

// A knee step in which the host stopped the loadgen's process (here a
// SIGSTOP of 300 ms, about 500 ms into the first step: the sends due meanwhile
// go late, their latency from the intended time past the 100 ms p99
// limit) is the host's: it is run again, its stall reported, and the
// search goes on to the target's own answer (every step of this quick
// target holds). A real stop, of a real process, timed by the process's
// own watch.
func TestKneeRunsAStalledStepAgain(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	t.Cleanup(srv.Close)
	cmd := exec.Command(os.Args[0], "-test.run", "^TestKneeStalledChild$")
	cmd.Env = append(os.Environ(), "PB_KNEE_CHILD_URL="+srv.URL+"/")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // inside the first step of 1 s
	stopped := time.Now()
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped for %v", time.Since(stopped).Round(time.Millisecond))
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v\n%s\n%s", err, out.String(), errb.String())
	}
	var k kneeJSON
	if err := json.NewDecoder(strings.NewReader(out.String())).Decode(&k); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	// The stopped step: the one with the longest stall (a busy host may
	// stall another one too, briefly).
	longest := 0
	for i, st := range k.Steps {
		if st.StallS > k.Steps[longest].StallS {
			longest = i
		}
	}
	st := k.Steps[longest]
	t.Logf("the stopped step: rate %v, held %v, retried %v, stall %.3f s, why %q", st.Rate, st.Held, st.Retried, st.StallS, st.Why)
	if st.Held || !st.Retried || st.StallS < 0.25 || st.StallS > 1 || !strings.Contains(st.Why, "while the loadgen could not run") {
		t.Errorf("the stopped step: %+v: want broken for the loadgen, its stall of about 0.3 s reported, run again", st)
	}
	if k.Invalid || k.LastHeld != 400 {
		t.Errorf("knee %v, invalid %v %q, steps %+v: want the stopped step run again and every rate held", k.LastHeld, k.Invalid, k.InvalidReason, k.Steps)
	}
}
