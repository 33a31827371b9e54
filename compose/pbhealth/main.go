// Command pbhealth is the in-container helper mounted into every container
// of the stack: a static binary that works the same in Debian, Alpine and
// scratch images, so neither healthchecks nor start-up depend on a shell,
// curl or sed being there.
//
//	pbhealth URL                     exits 0 when GET URL answers 2xx within 2 s
//	pbhealth get URL                 the same, and writes the answer's body to
//	                                 stdout (a proxy's own API, read by
//	                                 exec: internal/proxyconf)
//	pbhealth render SRC DST -- CMD…  writes SRC to DST with ${LISTEN_ADDR},
//	                                 ${PROXY_WORKERS} and ${TLS_MIN_VERSION}
//	                                 replaced by those variables' values,
//	                                 then runs CMD in its place (exec)
//
// render is for the proxies whose configuration cannot read the
// environment itself (nginx, Traefik's static file): the stack decides the
// address every listener binds (127.0.0.1 unless LISTEN says otherwise)
// and passes it as LISTEN_ADDR, and the worker count of its CPU placement
// (internal/placement) as PROXY_WORKERS, and the lowest TLS version the
// TLS ports accept (1.2 or 1.3) as TLS_MIN_VERSION. ${LISTEN_ADDR} must
// appear in SRC; the others are replaced where they appear.
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() { os.Exit(run(os.Args[1:], os.Getenv, os.Stderr)) }

func run(args []string, getenv func(string) string, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "render" {
		argv, err := render(args[1:], getenv)
		if err != nil {
			fmt.Fprintln(stderr, "pbhealth render:", err)
			return 2
		}
		bin, err := exec.LookPath(argv[0])
		if err != nil {
			fmt.Fprintln(stderr, "pbhealth render:", err)
			return 2
		}
		err = syscall.Exec(bin, argv, os.Environ())
		fmt.Fprintf(stderr, "pbhealth render: exec %s: %v\n", bin, err)
		return 1
	}
	if len(args) == 2 && args[0] == "get" {
		return get(args[1], os.Stdout, stderr)
	}
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: pbhealth URL | pbhealth get URL | pbhealth render SRC DST -- CMD [ARG...]")
		return 2
	}
	return get(args[0], io.Discard, stderr)
}

// Placeholder is the token render requires: every listener's address.
const Placeholder = "${LISTEN_ADDR}"

// WorkersPlaceholder is replaced by PROXY_WORKERS where it appears.
const WorkersPlaceholder = "${PROXY_WORKERS}"

// TLSMinPlaceholder is replaced by TLS_MIN_VERSION where it appears.
const TLSMinPlaceholder = "${TLS_MIN_VERSION}"

// maxWorkers bounds PROXY_WORKERS: a typo must not start thousands of
// processes.
const maxWorkers = 1024

// render writes the configuration and returns the command to run.
func render(args []string, getenv func(string) string) ([]string, error) {
	if len(args) < 4 || args[2] != "--" {
		return nil, fmt.Errorf("want SRC DST -- CMD [ARG...], got %q", args)
	}
	src, dst, argv := args[0], args[1], args[3:]
	addr := getenv("LISTEN_ADDR")
	if net.ParseIP(addr) == nil {
		return nil, fmt.Errorf("LISTEN_ADDR %q: want the IP address every listener binds, e.g. 127.0.0.1 (the default) or 0.0.0.0", addr)
	}
	if strings.Contains(addr, ":") {
		addr = "[" + addr + "]" // host:port in both nginx and Traefik
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return nil, err
	}
	if !strings.Contains(string(b), Placeholder) {
		return nil, fmt.Errorf("%s has no %s: its listeners would ignore the address the stack asks for", src, Placeholder)
	}
	out := strings.ReplaceAll(string(b), Placeholder, addr)
	if strings.Contains(out, WorkersPlaceholder) {
		w := getenv("PROXY_WORKERS")
		if n, err := strconv.Atoi(w); err != nil || n < 1 || n > maxWorkers || strconv.Itoa(n) != w {
			return nil, fmt.Errorf("PROXY_WORKERS %q: want the proxy's worker count, a whole number in 1..%d (scripts/stack.sh sets it from the CPU placement)", w, maxWorkers)
		}
		out = strings.ReplaceAll(out, WorkersPlaceholder, w)
	}
	if strings.Contains(out, TLSMinPlaceholder) {
		v := getenv("TLS_MIN_VERSION")
		if v != "1.2" && v != "1.3" {
			return nil, fmt.Errorf("TLS_MIN_VERSION %q: want 1.3 (the default) or 1.2, the lowest TLS version the TLS ports accept", v)
		}
		out = strings.ReplaceAll(out, TLSMinPlaceholder, v)
	}
	if err := os.WriteFile(dst, []byte(out), 0o644); err != nil {
		return nil, err
	}
	return argv, nil
}

// get asks url and copies a 2xx answer's body (at most 16 MiB) to out.
func get(url string, out, stderr io.Writer) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		fmt.Fprintf(stderr, "pbhealth: bad URL %q: %v\n", url, err)
		return 2
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "pbhealth: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		fmt.Fprintf(stderr, "pbhealth: %s answered %s\n", url, resp.Status)
		return 1
	}
	if _, err := io.Copy(out, io.LimitReader(resp.Body, 16<<20)); err != nil {
		fmt.Fprintf(stderr, "pbhealth: %s: %v\n", url, err)
		return 1
	}
	return 0
}
