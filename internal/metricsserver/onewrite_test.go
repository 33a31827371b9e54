package metricsserver

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

func TestOneWriteKeepsBodyStatusAndHeaders(t *testing.T) {
	body := strings.Repeat("container_cpu_usage_seconds_total 1\n", 3000) // ~100 KB, like a scrape
	srv := httptest.NewServer(oneWrite(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusInternalServerError)
		}
		for i := 0; i < len(body); i += 4000 {
			io.WriteString(w, body[i:min(i+4000, len(body))])
		}
	})))
	defer srv.Close()
	for path, code := range map[string]int{"/": 200, "/fail": 500} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != code || string(b) != body {
			t.Errorf("%s: status %d, %d bytes; want %d, %d bytes", path, resp.StatusCode, len(b), code, len(body))
		}
		if got := resp.Header.Get("Content-Length"); got != strconv.Itoa(len(body)) {
			t.Errorf("%s: Content-Length %q, want %d (sent whole, not chunked)", path, got, len(body))
		}
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
			t.Errorf("%s: Content-Type %q lost", path, ct)
		}
	}
}
