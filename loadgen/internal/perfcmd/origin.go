package perfcmd

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"proxybench/internal/tlscert"
	"proxybench/loadgen/internal/ceiling"
	"proxybench/loadgen/internal/child"
	"proxybench/loadgen/internal/cmdflags"
)

// originAddr is the fast origin's port of the stack: `loadgen perf` loads
// it when it answers (make up), and starts the trivial server on a free
// port otherwise.
const originAddr = "127.0.0.1:9104"

// TLSOriginCommand is the loadgen subcommand of the TLS origin.
const TLSOriginCommand = "perf-tls-origin"

// originBody is the body of origins/fast, served by the TLS origin too.
const originBody = "proxybench origin ok\n"

// notes say which origins a table measured against.
type notes struct{ plain, tls string }

// ensureOrigins starts, pinned to c.OriginCPU, each origin the run needs
// and nothing answers for yet (filling c.TLSURL when unset), and returns
// what stops them.
func ensureOrigins(ctx context.Context, c *config, stderr io.Writer) (stop func(), n notes, err error) {
	var procs []*child.Proc
	stop = func() {
		for _, p := range procs {
			p.Stop()
		}
	}
	// start starts an origin on a free port and returns its address.
	start := func(what string, args ...string) (string, error) {
		argv := append([]string{"taskset", "-c", c.OriginCPU, c.Self}, append(args, "-listen", "127.0.0.1:0")...)
		p, line, err := child.Start(ctx, exec.Command(argv[0], argv[1:]...), 10*time.Second, nil)
		if err != nil {
			return "", fmt.Errorf("%s %w", what, err)
		}
		procs = append(procs, p)
		addr, ok := strings.CutPrefix(line, "listening ")
		if !ok {
			return "", fmt.Errorf("%s said %q, not where it listens", what, line)
		}
		return addr, nil
	}
	if len(c.Tools) > 0 {
		n.plain = "something already answering at " + c.URL + " (not started or pinned by this command)"
		if !answers(c.URL) {
			if c.URL != "http://"+originAddr+"/" {
				return stop, n, fmt.Errorf("nothing answers at -url %s: start it, or leave -url unset for the trivial server", c.URL)
			}
			addr, err := start("the origin (trivial server)", ceiling.ServerCommand, "-workers", "1")
			if err != nil {
				return stop, n, err
			}
			c.URL = "http://" + addr + "/"
			n.plain = "the trivial server (package fastserver) on " + addr + ", pinned with taskset -c " + c.OriginCPU
		}
	}
	if len(c.TLSTools) > 0 {
		if c.TLSURL != "" {
			n.tls = c.TLSURL + " (not started or pinned by this command)"
			return stop, n, nil
		}
		if _, err := tlscert.Ensure(c.CertDir, tlscert.ECDSA, time.Now()); err != nil {
			return stop, n, fmt.Errorf("the lab certificate in %s: %w", c.CertDir, err)
		}
		addr, err := start("the TLS origin", TLSOriginCommand, "-cert-dir", c.CertDir)
		if err != nil {
			return stop, n, err
		}
		c.TLSURL = "https://" + addr + "/"
		n.tls = "a minimal net/http TLS server (HTTP/2 and HTTP/1.1, lab certificate) on " + addr + ", pinned with taskset -c " + c.OriginCPU
	}
	return stop, n, nil
}

// answers says whether url answers a GET within a second.
func answers(url string) bool {
	resp, err := (&http.Client{Timeout: time.Second}).Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return true
}

// TLSOriginMain is `loadgen perf-tls-origin [-listen ADDR] [-cert-dir
// DIR]`: HTTP/2 and HTTP/1.1 over TLS with the lab's server certificate,
// every answer origins/fast's body; it prints "listening ADDR" on stdout
// and exits when its stdin closes or ctx ends (package child).
func TLSOriginMain(ctx context.Context, args []string, stdout, stderr io.Writer, log *slog.Logger) int {
	fs := flag.NewFlagSet("loadgen "+TLSOriginCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:0", "listen address")
	dir := fs.String("cert-dir", tlscert.DefaultDir, "the lab's server certificate (server.crt, server.key)")
	if rc, ok := cmdflags.Parse(fs, args, stderr); !ok {
		return rc
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(*dir, "server.crt"), filepath.Join(*dir, "server.key"))
	if err != nil {
		fmt.Fprintf(stderr, "loadgen %s: %v (loadgen certs makes them)\n", TLSOriginCommand, err)
		return 1
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "loadgen %s: %v\n", TLSOriginCommand, err)
		return 1
	}
	body := []byte(originBody)
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("X-Origin", "perf")
			_, _ = w.Write(body)
		}),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}},
		ErrorLog:  slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	fmt.Fprintf(stdout, "listening %s\n", ln.Addr())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin) // the parent closed our stdin: stop
		_ = srv.Close()
	}()
	go func() { <-ctx.Done(); _ = srv.Close() }()
	if err := srv.Serve(tls.NewListener(ln, srv.TLSConfig)); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "loadgen %s: %v\n", TLSOriginCommand, err)
		return 1
	}
	return 0
}
