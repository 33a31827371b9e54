package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "in.conf"), filepath.Join(dir, "out.conf")
	os.WriteFile(src, []byte("listen ${LISTEN_ADDR}:8882;\nlisten ${LISTEN_ADDR}:8982;\n"), 0o644)
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "LISTEN_ADDR" {
				return v
			}
			return ""
		}
	}
	for _, tc := range []struct{ addr, want, err string }{
		{"127.0.0.1", "listen 127.0.0.1:8882;\nlisten 127.0.0.1:8982;\n", ""},
		{"::1", "listen [::1]:8882;\nlisten [::1]:8982;\n", ""},
		{"", "", `LISTEN_ADDR ""`},
		{"localhost; evil", "", `LISTEN_ADDR "localhost; evil"`},
	} {
		os.Remove(dst)
		argv, err := render([]string{src, dst, "--", "nginx", "-c", dst}, env(tc.addr))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err %v, want one naming %s", tc.addr, err, tc.err)
			}
			if _, serr := os.Stat(dst); serr == nil {
				t.Errorf("%q: wrote %s despite the error", tc.addr, dst)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tc.addr, err)
		}
		if b, _ := os.ReadFile(dst); string(b) != tc.want {
			t.Errorf("%q: rendered %q, want %q", tc.addr, b, tc.want)
		}
		if strings.Join(argv, " ") != "nginx -c "+dst {
			t.Errorf("argv %q", argv)
		}
	}
	os.WriteFile(src, []byte("listen 8882;\n"), 0o644)
	if _, err := render([]string{src, dst, "--", "nginx"}, env("127.0.0.1")); err == nil || !strings.Contains(err.Error(), "has no ${LISTEN_ADDR}") {
		t.Errorf("a config without the placeholder: err %v", err)
	}
	if _, err := render([]string{src, dst, "nginx"}, env("127.0.0.1")); err == nil {
		t.Error("no -- separator accepted")
	}
}

func TestRenderWorkers(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "in.conf"), filepath.Join(dir, "out.conf")
	os.WriteFile(src, []byte("worker_processes ${PROXY_WORKERS};\nlisten ${LISTEN_ADDR}:8882;\n"), 0o644)
	for _, tc := range []struct{ workers, want, err string }{
		{"1", "worker_processes 1;\nlisten 127.0.0.1:8882;\n", ""},
		{"2", "worker_processes 2;\nlisten 127.0.0.1:8882;\n", ""},
		{"", "", `PROXY_WORKERS ""`},
		{"0", "", `PROXY_WORKERS "0"`},
		{"02", "", `PROXY_WORKERS "02"`},
		{"2; daemon on", "", `PROXY_WORKERS "2; daemon on"`},
		{"100000", "", "1..1024"},
	} {
		os.Remove(dst)
		env := func(k string) string {
			return map[string]string{"LISTEN_ADDR": "127.0.0.1", "PROXY_WORKERS": tc.workers}[k]
		}
		_, err := render([]string{src, dst, "--", "nginx"}, env)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err %v, want one naming %s", tc.workers, err, tc.err)
			}
			if _, serr := os.Stat(dst); serr == nil {
				t.Errorf("%q: wrote %s despite the error", tc.workers, dst)
			}
			continue
		}
		if b, _ := os.ReadFile(dst); err != nil || string(b) != tc.want {
			t.Errorf("%q: rendered %q (%v), want %q", tc.workers, b, err, tc.want)
		}
	}
	// A config without the placeholder needs no PROXY_WORKERS (Traefik's).
	os.WriteFile(src, []byte("listen ${LISTEN_ADDR}:8882;\n"), 0o644)
	if _, err := render([]string{src, dst, "--", "traefik"}, func(k string) string {
		return map[string]string{"LISTEN_ADDR": "127.0.0.1"}[k]
	}); err != nil {
		t.Errorf("no workers placeholder: %v", err)
	}
}
