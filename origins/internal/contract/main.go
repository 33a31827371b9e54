package contract

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
)

// Main is the whole life of a Go origin named name: its configuration from
// getenv (exit 2 when bad), a listener on its address, serve on it until
// SIGINT or SIGTERM (exit 1 when either fails), logs as text to stderr.
func Main(name string, getenv func(string) string, stderr io.Writer,
	serve func(context.Context, net.Listener, Config, *slog.Logger) error) int {
	log := slog.New(slog.NewTextHandler(stderr, nil))
	cfg, err := LoadConfig(getenv, name)
	if err != nil {
		log.Error("bad config", "err", err)
		return 2
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		log.Error("origin failed", "err", fmt.Errorf("listen: %w", err))
		return 1
	}
	log.Info("origin listening", "name", cfg.Name, "addr", ln.Addr().String())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, ln, cfg, log); err != nil {
		log.Error("origin failed", "err", err)
		return 1
	}
	return 0
}
