// Command fast is the "fast" origin of proxybench: package fastserver (the
// contract of origins/README.md over a hand-rolled HTTP/1.1 server) on the
// contract's listener and configuration. The lab's 503 fault switch (the
// faults scenario, origins/README.md) is its signals: SIGUSR1 makes every
// answer a 503 until SIGUSR2.
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
	// At once: a switch signal before the server is up must not end the
	// process (SIGUSR1 and SIGUSR2 do by default).
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGUSR1, syscall.SIGUSR2)
	os.Exit(contract.Main("fast", os.Getenv, os.Stderr, func(ctx context.Context, ln net.Listener, cfg contract.Config, log *slog.Logger) error {
		var unavailable atomic.Bool
		go faultSwitch(ctx, sig, &unavailable, log)
		return fastserver.ServeFaults(ctx, ln, cfg.Name, log, &unavailable)
	}))
}

// faultSwitch turns the 503 fault on at SIGUSR1 and off at SIGUSR2 until
// ctx ends.
func faultSwitch(ctx context.Context, sig <-chan os.Signal, unavailable *atomic.Bool, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case s := <-sig:
			on := s == syscall.SIGUSR1
			unavailable.Store(on)
			log.Info("503 fault", "on", on, "signal", s.String())
		}
	}
}
