package child

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// A helper says where it listens and ends when its stdin closes; one that
// dies first, or stays silent, is an error with its last words.
func TestStart(t *testing.T) {
	t.Parallel()
	var logged []string
	p, line, err := Start(t.Context(), exec.Command("sh", "-c", "echo starting >&2; echo listening 127.0.0.1:1; cat"), 5*time.Second,
		func(l string) { logged = append(logged, l) })
	if err != nil || line != "listening 127.0.0.1:1" || p.Pid <= 0 || p.Exit() != "" {
		t.Fatalf("%v %q %+v", err, line, p)
	}
	p.Stop()
	if p.Exit() != "exited" || len(logged) != 1 || logged[0] != "starting" {
		t.Errorf("after Stop: %q, logged %q", p.Exit(), logged)
	}
	_, _, err = Start(t.Context(), exec.Command("sh", "-c", "echo no port >&2; exit 3"), 5*time.Second, nil)
	if err == nil || err.Error() != "ended before it said where it listens (exit status 3): no port" {
		t.Errorf("a helper that died: %v", err)
	}
	began := time.Now()
	_, _, err = Start(t.Context(), exec.Command("sh", "-c", "echo thinking >&2; exec cat"), 200*time.Millisecond, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "did not say where it listens within 200ms: thinking") || time.Since(began) > 3*time.Second {
		t.Errorf("a silent helper: %v after %v", err, time.Since(began))
	}
}
