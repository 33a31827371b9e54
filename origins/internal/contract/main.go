package contract

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// Main is the whole life of a Go origin named name: its configuration from
// getenv (exit 2 when bad), serve until SIGINT or SIGTERM (exit 1 when it
// fails), logs as text to stderr.
func Main(name string, getenv func(string) string, stderr io.Writer,
	serve func(context.Context, Config, *slog.Logger) error) int {
	log := slog.New(slog.NewTextHandler(stderr, nil))
	cfg, err := LoadConfig(getenv, name)
	if err != nil {
		log.Error("bad config", "err", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, cfg, log); err != nil {
		log.Error("origin failed", "err", err)
		return 1
	}
	return 0
}
