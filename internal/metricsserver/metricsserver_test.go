package metricsserver

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// failing is a collector whose every Collect fails after one good series.
type failing struct{ good, bad *prometheus.Desc }

func (f failing) Describe(ch chan<- *prometheus.Desc) { ch <- f.good; ch <- f.bad }
func (f failing) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(f.good, prometheus.GaugeValue, 1)
	ch <- prometheus.NewInvalidMetric(f.bad, errors.New("source away"))
}

func TestServer(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "proxybench_test_total", Help: "A counter."})
	c.Add(3)
	reg.MustRegister(c, failing{
		good: prometheus.NewDesc("proxybench_test_good", "Served.", nil, nil),
		bad:  prometheus.NewDesc("proxybench_test_bad", "Fails.", nil, nil),
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New(reg, slog.New(slog.DiscardHandler))
	s.Handle("/healthz", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") }))
	s.Serve(ln)
	defer s.Stop()
	select {
	case <-s.Scraped():
		t.Fatal("scraped before any scrape")
	default:
	}

	for _, tc := range []struct{ accept, wantType, wantEOF string }{
		{"application/openmetrics-text;version=1.0.0,text/plain;q=0.5", "application/openmetrics-text", "# EOF\n"},
		{"text/plain", "text/plain", ""},
	} {
		req, _ := http.NewRequest("GET", "http://"+s.Addr()+"/metrics", nil)
		req.Header.Set("Accept", tc.accept)
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body := string(b)
		switch {
		case resp.StatusCode != 200:
			t.Errorf("%s: status %d: a failing collector must not fail the scrape", tc.accept, resp.StatusCode)
		case !strings.HasPrefix(resp.Header.Get("Content-Type"), tc.wantType):
			t.Errorf("%s: Content-Type %q, want %s", tc.accept, resp.Header.Get("Content-Type"), tc.wantType)
		case resp.Header.Get("Content-Encoding") != "":
			t.Errorf("%s: Content-Encoding %q, want none", tc.accept, resp.Header.Get("Content-Encoding"))
		case resp.ContentLength != int64(len(b)):
			t.Errorf("%s: Content-Length %d for %d bytes", tc.accept, resp.ContentLength, len(b))
		case !strings.Contains(body, "proxybench_test_total 3") || !strings.Contains(body, "proxybench_test_good 1") ||
			strings.Contains(body, "proxybench_test_bad") || !strings.HasSuffix(body, tc.wantEOF):
			t.Errorf("%s: body\n%s", tc.accept, body)
		}
	}
	select {
	case <-s.Scraped():
	case <-time.After(5 * time.Second):
		t.Fatal("Scraped not closed after a scrape")
	}
	resp, err := http.Get("http://" + s.Addr() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "ok\n" {
		t.Errorf("/healthz: %q", b)
	}
	// The second scrape counts the failures of the first.
	resp, err = http.Get("http://" + s.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `promhttp_metric_handler_errors_total{cause="gathering"} 2`) {
		t.Errorf("no gathering errors counted:\n%s", b)
	}
}

// ScrapedAfter fires on the first scrape that began at or after its time,
// whether served before it was asked or after, not on an earlier one.
func TestScrapedAfter(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New(prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
	s.Serve(ln)
	t.Cleanup(s.Stop)
	get := func() {
		resp, err := http.Get("http://" + s.Addr() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	past := s.ScrapedAfter(time.Now().Add(-time.Second))
	later := s.ScrapedAfter(time.Now().Add(300 * time.Millisecond))
	get()
	select {
	case <-past:
	default:
		t.Fatal("a scrape after the time did not close ScrapedAfter")
	}
	select {
	case <-later:
		t.Fatal("a scrape before the time closed ScrapedAfter")
	default:
	}
	time.Sleep(300 * time.Millisecond)
	get()
	select {
	case <-later:
	default:
		t.Fatal("the scrape after the time did not close ScrapedAfter")
	}
	// Asked after the scrape it waits for: closed at once; for a time after
	// the latest scrape: open until the next.
	select {
	case <-s.ScrapedAfter(time.Now().Add(-200 * time.Millisecond)):
	default:
		t.Fatal("a scrape already served after the time did not close ScrapedAfter")
	}
	select {
	case <-s.ScrapedAfter(time.Now()):
		t.Fatal("ScrapedAfter closed with no scrape after its time")
	default:
	}
}
