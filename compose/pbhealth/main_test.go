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
	const listen = "listen ${LISTEN_ADDR}:8882;\nlisten ${LISTEN_ADDR}:8982;\n"
	const workers = "worker_processes ${PROXY_WORKERS};\nlisten ${LISTEN_ADDR}:8882;\n"
	const tlsMin = "listen ${LISTEN_ADDR}:9882 ssl;\nssl_conf_command MinProtocol TLSv${TLS_MIN_VERSION};\n"
	for _, tc := range []struct {
		conf, addr, workers, want, err string
		tlsMin                         string
	}{
		{listen, "127.0.0.1", "", "listen 127.0.0.1:8882;\nlisten 127.0.0.1:8982;\n", "", ""},
		{listen, "::1", "", "listen [::1]:8882;\nlisten [::1]:8982;\n", "", ""},
		{listen, "", "", "", `LISTEN_ADDR ""`, ""},
		{listen, "localhost; evil", "", "", `LISTEN_ADDR "localhost; evil"`, ""},
		{"listen 8882;\n", "127.0.0.1", "", "", "has no ${LISTEN_ADDR}", ""},
		// PROXY_WORKERS is needed only where the config asks for it (not Traefik's).
		{workers, "127.0.0.1", "1", "worker_processes 1;\nlisten 127.0.0.1:8882;\n", "", ""},
		{workers, "127.0.0.1", "2", "worker_processes 2;\nlisten 127.0.0.1:8882;\n", "", ""},
		{workers, "127.0.0.1", "", "", `PROXY_WORKERS ""`, ""},
		{workers, "127.0.0.1", "0", "", `PROXY_WORKERS "0"`, ""},
		{workers, "127.0.0.1", "02", "", `PROXY_WORKERS "02"`, ""},
		{workers, "127.0.0.1", "2; daemon on", "", `PROXY_WORKERS "2; daemon on"`, ""},
		{workers, "127.0.0.1", "100000", "", "1..1024", ""},
		// TLS_MIN_VERSION: 1.3 or 1.2, only where the config asks for it.
		{tlsMin, "127.0.0.1", "", "listen 127.0.0.1:9882 ssl;\nssl_conf_command MinProtocol TLSv1.3;\n", "", "1.3"},
		{tlsMin, "127.0.0.1", "", "listen 127.0.0.1:9882 ssl;\nssl_conf_command MinProtocol TLSv1.2;\n", "", "1.2"},
		{tlsMin, "127.0.0.1", "", "", `TLS_MIN_VERSION ""`, ""},
		{tlsMin, "127.0.0.1", "", "", `TLS_MIN_VERSION "1.1"`, "1.1"},
		{tlsMin, "127.0.0.1", "", "", `TLS_MIN_VERSION "1.3; evil"`, "1.3; evil"},
	} {
		os.WriteFile(src, []byte(tc.conf), 0o644)
		os.Remove(dst)
		env := func(k string) string {
			return map[string]string{"LISTEN_ADDR": tc.addr, "PROXY_WORKERS": tc.workers, "TLS_MIN_VERSION": tc.tlsMin}[k]
		}
		argv, err := render([]string{src, dst, "--", "nginx", "-c", dst}, env)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q %q: err %v, want one naming %s", tc.addr, tc.workers, err, tc.err)
			}
			if _, serr := os.Stat(dst); serr == nil {
				t.Errorf("%q %q: wrote %s despite the error", tc.addr, tc.workers, dst)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q %q: %v", tc.addr, tc.workers, err)
		}
		if b, _ := os.ReadFile(dst); string(b) != tc.want {
			t.Errorf("%q %q: rendered %q, want %q", tc.addr, tc.workers, b, tc.want)
		}
		if strings.Join(argv, " ") != "nginx -c "+dst {
			t.Errorf("argv %q", argv)
		}
	}
	if _, err := render([]string{src, dst, "nginx"}, func(string) string { return "127.0.0.1" }); err == nil {
		t.Error("no -- separator accepted")
	}
}
