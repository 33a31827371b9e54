package attackcmd

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"proxybench/internal/manifest"
	"proxybench/internal/metricslint"
	"proxybench/loadgen/internal/attack"
	"proxybench/loadgen/internal/load"
	"proxybench/loadgen/internal/wire/wiretest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestBadFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-c", "5"}, "spec URL is empty"},
		{[]string{"-url", "http://127.0.0.1:1/", "-stages", "10s"}, "-stages: stage 1"},
		{[]string{"-url", "http://127.0.0.1:1/", "-H", "novalue"}, `want "Name: value"`},
		{[]string{"-url", "http://127.0.0.1:1/", "-engine", "turbo"}, `-engine "turbo"`},
		{[]string{"-url", "http://127.0.0.1:1/", "extra"}, `unexpected argument "extra"`},
		{[]string{"-url", "http://127.0.0.1:1/", "-mode", "open"}, "open loop needs a positive rate"},
		{[]string{"-url", "http://127.0.0.1:1/", "-mode", "turbo"}, `-mode "turbo": use closed, open or stages`},
		{[]string{"-url", "http://127.0.0.1:1/", "-stages", "1s:1", "-stage-kind", "vus"}, `-stage-kind "vus": use rate (open loop) or concurrency`},
		{[]string{"-url", "http://127.0.0.1:1/", "-warmup", "-1s"}, "-warmup -1s is negative"},
		{[]string{"-url", "http://127.0.0.1:1/", "-stages", "1s:0", "-stage-kind", "concurrency"}, "need a target of at least 1"},
		{[]string{"-url", "http://127.0.0.1:1/", "-max-header-bytes", "-1"}, "spec MaxHeaderBytes -1 is negative"},
		{[]string{"-url", "http://127.0.0.1:1/", "-max-body-bytes", "-1"}, "spec MaxBodyBytes -1 is negative"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			code := Main(context.Background(), tc.args, &out, &errb, discard())
			if code != 2 || !strings.Contains(errb.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, errb.String(), tc.want)
			}
		})
	}
}

func TestLimitFlags(t *testing.T) {
	t.Parallel()
	o, err := parse([]string{"-url", "http://127.0.0.1:1/"}, io.Discard)
	if err != nil || o.spec.MaxHeaderBytes != attack.DefaultMaxHeaderBytes || o.spec.MaxBodyBytes != attack.DefaultMaxBodyBytes {
		t.Fatalf("defaults: %v, header %d body %d", err, o.spec.MaxHeaderBytes, o.spec.MaxBodyBytes)
	}
	o, err = parse([]string{"-url", "http://127.0.0.1:1/", "-max-header-bytes", "1024", "-max-body-bytes", "5000000000"}, io.Discard)
	if err != nil || o.spec.MaxHeaderBytes != 1024 || o.spec.MaxBodyBytes != 5_000_000_000 {
		t.Fatalf("set: %v, header %d body %d", err, o.spec.MaxHeaderBytes, o.spec.MaxBodyBytes)
	}
}

func TestProtocolFlags(t *testing.T) {
	t.Parallel()
	o, err := parse([]string{"-url", "https://127.0.0.1:1/", "-proto", "h2", "-streams", "8", "-tls-min", "1.3", "-resume=false", "-ca", "x.pem"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	s := o.spec
	if s.Proto != attack.ProtoH2 || s.Streams != 8 || s.TLS.MinVersion != tls.VersionTLS13 || s.TLS.MaxVersion != tls.VersionTLS13 ||
		!s.TLS.DisableResumption || s.TLS.CAFile != "x.pem" {
		t.Errorf("spec %+v", s)
	}
	o, err = parse([]string{"-url", "https://127.0.0.1:1/"}, io.Discard)
	if err != nil || o.spec.Proto != "" || o.spec.TLS.DisableResumption || o.spec.TLS.MinVersion != tls.VersionTLS12 {
		t.Errorf("defaults: %v, %+v", err, o.spec)
	}
	for _, bad := range [][]string{{"-proto", "h4"}, {"-tls-min", "1.1"}, {"-tls-max", "2"}} {
		if _, err := parse(append([]string{"-url", "https://127.0.0.1:1/"}, bad...), io.Discard); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// TestAttackH2JSON runs -proto h2 end to end against a TLS server with a
// lab certificate: the JSON names the protocol and what was negotiated.
func TestAttackH2JSON(t *testing.T) {
	t.Parallel()
	srv := wiretest.NewTLSServer(t, wiretest.Hello, []string{"h2", "http/1.1"}, 0, 0)
	var out, errb bytes.Buffer
	code := Main(context.Background(), []string{"-url", srv.URL + "/", "-proto", "h2", "-streams", "4", "-c", "2", "-d", "300ms",
		"-json", "-quiet", "-ca", srv.CAFile}, &out, &errb, discard())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var s Summary
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	if s.Protocol != "h2" || s.Streams != 4 || s.TLS == nil || s.TLS.ALPN != "h2" || s.TLS.Version != "TLS 1.3" ||
		s.TLS.HandshakesFull+s.TLS.HandshakesResumed != 2 || s.Errors != 0 || s.Requests == 0 {
		t.Errorf("summary %s", out.String())
	}
}

// TestAttackJSON runs the subcommand end to end against a real server, with
// the metrics endpoint on, and checks the JSON and the scrape.
func TestAttackJSON(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != "k1" {
			w.WriteHeader(401)
			return
		}
		w.Header().Set("X-Origin", "fast")
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	var out, errb bytes.Buffer
	done := make(chan int)
	go func() {
		done <- Main(context.Background(), []string{"-url", srv.URL + "/", "-rate", "200", "-d", "500ms", "-H", "X-Api-Key: k1",
			"-expect-origin", "fast", "-json", "-quiet", "-metrics-addr", addr, "-linger", "2s",
			"-proxy", "nginx", "-origin", "fast", "-scenario", "simple"}, &out, &errb, discard())
	}()
	// Scrape until the final values are there (during -linger). The
	// scheduled counter is flushed by the monitor's tick, so it can trail
	// the last response by one tick; and the gauges are 0 only once the
	// planned end has passed (no more sends) and the drain is over.
	finals := [][]byte{
		[]byte(`proxybench_open_loop_scheduled_total{origin="fast",protocol="h1",proxy="nginx",scenario="simple"} 100` + "\n"),
		[]byte(`proxybench_target_rate_requests_per_second{origin="fast",protocol="h1",proxy="nginx",scenario="simple"} 0` + "\n"),
		[]byte(`proxybench_requests_in_flight{origin="fast",protocol="h1",proxy="nginx",scenario="simple"} 0` + "\n"),
	}
	final := func(scrape []byte) bool {
		for _, f := range finals {
			if !bytes.Contains(scrape, f) {
				return false
			}
		}
		return true
	}
	var scrape []byte
	for i := 0; i < 100 && !final(scrape); i++ {
		time.Sleep(50 * time.Millisecond)
		res, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			continue
		}
		scrape, _ = io.ReadAll(res.Body)
		res.Body.Close()
	}
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var s Summary
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	// Every due request is sent or missed, and every sent one completes
	// in the window or late (a starved loadgen may miss the last one or two).
	if s.Mode != "open" || s.Scheduled != 100 || s.Sent+s.Missed != 100 || s.Missed > 2 || s.Requests+s.Late != s.Sent ||
		s.Codes["200"] != s.Requests || s.LateCodes["200"] != s.Late || s.WrongOrigin != 0 || s.Capped != 0 {
		t.Errorf("summary %+v", s)
	}
	if s.Latency.Count != s.Sent || s.Latency.P50 <= 0 || s.Latency.Max < s.Latency.P99 || s.WindowS != 0.5 {
		t.Errorf("latency %+v, window %vs", s.Latency, s.WindowS)
	}
	for _, want := range []string{
		`proxybench_requests_total{code="200",origin="fast",protocol="h1",proxy="nginx",scenario="simple"} ` + strconv.FormatInt(s.Sent, 10),
		`proxybench_open_loop_scheduled_total{origin="fast",protocol="h1",proxy="nginx",scenario="simple"} 100`,
		"process_cpu_seconds_total", "go_goroutines", "proxybench_loadgen_cpu_limit_cores",
	} {
		if !bytes.Contains(scrape, []byte(want)) {
			t.Errorf("scrape lacks %q", want)
		}
	}
	metricslint.Check(t, scrape)
}

// -warmup is the one warm-up of the engine (attack.WarmUp): an attack of
// its own before the window, outside the summary's counts.
func TestAttackWarmup(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		name      string
		args      []string
		scheduled int64
	}{
		{"open", []string{"-rate", "200", "-d", "300ms"}, 60},
		{"rate stages", []string{"-stages", "300ms:200"}, 30},
		{"closed", []string{"-c", "2", "-d", "300ms"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			args := append([]string{"-url", srv.URL + "/", "-warmup", "200ms", "-json", "-quiet"}, tc.args...)
			if code := Main(context.Background(), args, &out, &errb, discard()); code != 0 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			var s Summary
			if err := json.Unmarshal(out.Bytes(), &s); err != nil {
				t.Fatalf("%v: %s", err, out.String())
			}
			if w := s.Start.Sub(s.WarmupStart); w < 200*time.Millisecond || w > 5*time.Second {
				t.Errorf("window starts %v after the warm-up, want its 200ms and its drain", w)
			}
			if s.Scheduled != tc.scheduled || s.WindowS != 0.3 || s.Requests == 0 || s.Errors != 0 || s.Requests+s.Late != s.Latency.Count {
				t.Errorf("summary %+v: want %d scheduled in a 0.3 s window, none of the warm-up", s, tc.scheduled)
			}
		})
	}
}

// TestSummaryGolden pins the text summary for a fixed result.
func TestSummaryGolden(t *testing.T) {
	t.Parallel()
	h := hdrhistogram.New(1, 60_000_000, 3)
	for i := int64(1); i <= 1000; i++ {
		h.RecordValue(i * 100) // 100 µs .. 100 ms
	}
	t0 := time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
	res := &attack.Result{
		Start: t0.Add(5 * time.Second), End: t0.Add(15 * time.Second),
		Requests: 990, Errors: 10, Bytes: 21000, Scheduled: 1000, Sent: 997, Missed: 3, Capped: 12, LagP99: 1234 * time.Microsecond,
		WrongOrigin: 1, Codes: map[int]int64{200: 980, 503: 10}, ErrorReasons: map[string]int64{"timeout": 7, "reset": 3}, Hist: h,
		Late: 4, LateCodes: map[int]int64{200: 3}, LateReasons: map[string]int64{"timeout": 1}, DrainEnd: t0.Add(15*time.Second + 250*time.Millisecond),
		Protocol: attack.ProtoH1,
	}
	h2 := *res
	h2.Protocol = attack.ProtoH2
	h2.TLS = &manifest.TLS{ALPN: "h2", Version: "TLS 1.3", Cipher: "TLS_AES_128_GCM_SHA256", HandshakesFull: 1, HandshakesResumed: 9, ALPNMismatches: 2}
	for _, tc := range []struct {
		name string
		o    options
		res  *attack.Result
	}{
		{"open", options{spec: attack.Spec{URL: "http://127.0.0.1:8882/fast/", Method: "GET", Load: load.Open{Rate: 100,
			MaxInFlight: 10000}, ExpectOrigin: "fast"}, rate: 100, conc: 10000}, res},
		{"closed", options{spec: attack.Spec{URL: "http://127.0.0.1:8882/fast/", Method: "GET", Load: load.Closed{
			Connections: 50}, NewConnPerRequest: true}, conc: 50}, res},
		{"h2", options{spec: attack.Spec{URL: "https://127.0.0.1:9882/fast/", Method: "GET", Load: load.Closed{
			Connections: 10}, Proto: attack.ProtoH2, Streams: 10}, conc: 10}, &h2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			if err := writeResult(&b, &tc.o, tc.res, t0, false); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "summary-"+tc.name+".txt")
			if *update {
				os.WriteFile(golden, b.Bytes(), 0o644)
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if !bytes.Equal(b.Bytes(), want) {
				t.Errorf("summary differs from %s (go test -update to accept):\n%s", golden, b.String())
			}
		})
	}
}
