// Command go is the "go" origin of proxybench: the contract of
// origins/README.md served by the standard library's net/http, the way most
// Go services are written (ServeMux with method and wildcard patterns).
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"proxybench/origins/internal/contract"
)

func main() { os.Exit(contract.Main("go", os.Getenv, os.Stderr, serve)) }

func serve(ctx context.Context, ln net.Listener, cfg contract.Config, log *slog.Logger) error {
	srv := &http.Server{
		Handler:           newHandler(cfg.Name),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       contract.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	// A short grace: in-flight /delay requests may run for a minute, and a
	// benchmark origin being stopped has no one left to wait for.
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}
