package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFlagErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-gctrace-file", "x.log"}, "-gctrace-service"},
		{[]string{"-housekeeping", "0s"}, "positive"},
		{[]string{"-docker=false", "-nginx-status", ""}, "nothing to export"},
		{[]string{"extra"}, "unexpected arguments"},
		{[]string{"-cgroup-prefixes", " , "}, "-cgroup-prefixes names no prefix"},
		{[]string{"-nope"}, "flag provided but not defined"},
	} {
		var stderr bytes.Buffer
		if code := run(context.Background(), tc.args, strings.NewReader(""), &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("run %q: code %d, stderr %q; want 2 and %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}

func TestSplitPrefixes(t *testing.T) {
	t.Parallel()
	got := strings.Join(splitPrefixes(" /docker/, proxybench-swarm/ ,,"), "|")
	if got != "/docker/|/proxybench-swarm/" {
		t.Errorf("splitPrefixes = %q", got)
	}
}

// TestServesGCTraceFromFile runs the exporter without Docker on a real
// gctrace capture being appended to a file, and scrapes it over HTTP.
func TestServesGCTraceFromFile(t *testing.T) {
	t.Parallel()
	capture, err := os.ReadFile("../internal/gctrace/testdata/go1.18.10.log")
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Count(capture, []byte("\ngc ")) + 1 // first line is a gc line too
	path := filepath.Join(t.TempDir(), "caddy.log")
	half := len(capture) / 2
	if err := os.WriteFile(path, capture[:half], 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseFlags([]string{"-docker=false", "-nginx-status", "", "-gctrace-file", path, "-gctrace-service", "caddy"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0") // held from here on: no other test can take the port
	if err != nil {
		t.Fatal(err)
	}
	cfg.ln = ln
	addr := ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- serve(ctx, cfg, strings.NewReader(""), slog.New(slog.DiscardHandler)) }()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(capture[half:])
	f.Close()
	wantLine := fmt.Sprintf(`proxybench_gc_cycles_total{container="caddy",service="caddy"} %d`, want)
	var body string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if body = string(b); strings.Contains(body, wantLine) {
			break
		}
	}
	if !strings.Contains(body, wantLine) {
		t.Errorf("metrics lack %q:\n%s", wantLine, grepLines(body, "proxybench_gc_cycles"))
	}
	forced := fmt.Sprintf(`proxybench_gc_forced_cycles_total{container="caddy",service="caddy"} %d`, bytes.Count(capture, []byte("(forced)")))
	for _, s := range []string{"proxybench_gc_pause_seconds_bucket", forced, "process_cpu_seconds_total"} {
		if !strings.Contains(body, s) {
			t.Errorf("metrics lack %q", s)
		}
	}
	if resp, err := http.Get("http://" + addr + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz: %v %v, want 200", resp, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("exporter after cancel: %v, want a clean stop", err)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
