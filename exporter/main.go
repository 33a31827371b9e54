// Command exporter publishes what the proxies' own metrics cannot say: the
// Go proxies' garbage collector cycles parsed live from their gctrace
// output, cAdvisor's container CPU and memory series for the stack's
// containers, nginx's stub_status, and each proxy's image and the version
// its image declares (proxybench_proxy_info). It serves them on -listen for
// Prometheus (default 127.0.0.1:9400; the stack passes $LISTEN:9400, and
// :9400 inside a bridge container).
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
