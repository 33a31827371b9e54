// Command fast is the "fast" origin of proxybench: package fastserver (the
// contract of origins/README.md over a hand-rolled HTTP/1.1 server) on the
// contract's listener and configuration. The lab's 503 fault switch (the
// faults scenario, origins/README.md) is its signals: SIGUSR1 makes every
// answer a 503 until SIGUSR2; SIGHUP logs how many GET / it has answered
// (the origin's own count, origins/README.md).
package main

import (
	"context"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"proxybench/origins/fast/fastserver"
	"proxybench/origins/internal/contract"
)

func main() {
	// At once: a lab signal before the server is up must not end the
	// process (SIGUSR1, SIGUSR2 and SIGHUP do by default).
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGHUP)
	os.Exit(contract.Main("fast", os.Getenv, os.Stderr, func(ctx context.Context, ln net.Listener, cfg contract.Config, log *slog.Logger) error {
		var unavailable atomic.Bool
		count := make(chan struct{}, 1)
		go labSignals(ctx, sig, &unavailable, count, log)
		return fastserver.ServeLab(ctx, ln, cfg.Name, log, fastserver.Lab{Unavailable: &unavailable, Count: count})
	}))
}

// labSignals turns the 503 fault on at SIGUSR1 and off at SIGUSR2, and
// asks for the count at SIGHUP, until ctx ends.
func labSignals(ctx context.Context, sig <-chan os.Signal, unavailable *atomic.Bool, count chan<- struct{}, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case s := <-sig:
			if s == syscall.SIGHUP {
				select {
				case count <- struct{}{}:
				default: // one asked already and not yet logged: it will hold this one's count
				}
				continue
			}
			on := s == syscall.SIGUSR1
			unavailable.Store(on)
			log.Info("503 fault", "on", on, "signal", s.String())
		}
	}
}
