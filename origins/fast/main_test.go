package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestFaultSwitch: SIGUSR1 turns the 503 fault on, SIGUSR2 off; SIGHUP
// asks for the count, and leaves the switch as it was.
func TestFaultSwitch(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sig := make(chan os.Signal)
	var on atomic.Bool
	done := make(chan struct{})
	count := make(chan struct{}, 1)
	go func() { labSignals(ctx, sig, &on, count, slog.New(slog.NewTextHandler(io.Discard, nil))); close(done) }()
	for _, step := range []struct {
		s    os.Signal
		want bool
	}{{syscall.SIGUSR1, true}, {syscall.SIGUSR1, true}, {syscall.SIGHUP, true}, {syscall.SIGUSR2, false}, {syscall.SIGUSR1, true}} {
		sig <- step.s
		deadline := time.Now().Add(2 * time.Second)
		for on.Load() != step.want && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if on.Load() != step.want {
			t.Fatalf("after %v: unavailable %v, want %v", step.s, on.Load(), step.want)
		}
	}
	select {
	case <-count:
	default:
		t.Error("SIGHUP asked for no count")
	}
	cancel()
	<-done
}
