// Command go is the "go" origin of proxybench: the contract of
// origins/README.md served by the standard library's net/http, the way most
// Go services are written (ServeMux with method and wildcard patterns).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"proxybench/origins/internal/contract"
)

func main() { os.Exit(run(os.Getenv, os.Stderr)) }

func run(getenv func(string) string, stderr io.Writer) int {
	return contract.Main("go", getenv, stderr, serve)
}

func serve(ctx context.Context, cfg contract.Config, log *slog.Logger) error {
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{
		Handler:           newHandler(cfg.Name),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       contract.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	log.Info("origin listening", "name", cfg.Name, "addr", ln.Addr().String())
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
