package logsource

import (
	"strings"
	"sync"
	"testing"
	"time"
)

type syncLines struct {
	mu sync.Mutex
	l  lines
}

func (s *syncLines) Line(ts time.Time, b []byte) { s.mu.Lock(); s.l.Line(ts, b); s.mu.Unlock() }
func (s *syncLines) Reset()                      { s.mu.Lock(); s.l.Reset(); s.mu.Unlock() }

func waitFor(t *testing.T, s *syncLines, want string) {
	t.Helper()
	var got string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		s.mu.Lock()
		got = strings.Join(s.l.got, "|")
		s.mu.Unlock()
		if got == want {
			return
		}
	}
	t.Fatalf("lines %q, want %q", got, want)
}
