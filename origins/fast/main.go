// Command fast is the "fast" origin of proxybench: the contract of
// origins/README.md served by a hand-rolled HTTP/1.1 server over net.Conn.
// It exists so that the origin is never the bottleneck when a proxy is
// measured: one goroutine and two fixed buffers per connection, keep-alive
// and pipelining, and no allocation per request on GET /.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"syscall"
	"time"

	"proxybench/origins/internal/contract"
)

func main() { os.Exit(contract.Main("fast", os.Getenv, os.Stderr, serve)) }

func serve(ctx context.Context, ln net.Listener, cfg contract.Config, log *slog.Logger) error {
	s := newServer(cfg.Name, time.Now)
	go s.keepClock(ctx, time.Second)
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				// Out of descriptors: back off instead of spinning; the
				// connections being served will free some.
				log.Warn("accept", "err", err)
				time.Sleep(50 * time.Millisecond)
				continue
			}
			return fmt.Errorf("accept: %w", err)
		}
		go s.serveConn(c)
	}
}
