// Command exporter publishes what the proxies' own metrics cannot say: the
// Go proxies' garbage collector cycles parsed live from their gctrace
// output, cAdvisor's container CPU and memory series for the stack's
// containers, nginx's stub_status, and each proxy's real binary version.
// It serves them on -listen for Prometheus (default :9400: the lab runs on
// host networking and Prometheus must reach it; bind 127.0.0.1:9400 when
// nothing else has to).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stderr)
	stop()
	os.Exit(code)
}
