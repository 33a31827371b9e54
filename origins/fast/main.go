// Command fast is the "fast" origin of proxybench: package fastserver (the
// contract of origins/README.md over a hand-rolled HTTP/1.1 server) on the
// contract's listener and configuration.
package main

import (
	"context"
	"log/slog"
	"net"
	"os"

	"proxybench/origins/fast/fastserver"
	"proxybench/origins/internal/contract"
)

func main() { os.Exit(contract.Main("fast", os.Getenv, os.Stderr, serve)) }

func serve(ctx context.Context, ln net.Listener, cfg contract.Config, log *slog.Logger) error {
	return fastserver.Serve(ctx, ln, cfg.Name, log)
}
