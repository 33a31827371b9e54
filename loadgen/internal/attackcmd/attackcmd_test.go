package attackcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"proxybench/internal/metricslint"
	"strconv"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"proxybench/loadgen/internal/attack"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestParseStages(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []attack.Stage
		err  string
	}{
		{"10s:100,20s:500", []attack.Stage{{Duration: 10 * time.Second, Target: 100}, {Duration: 20 * time.Second, Target: 500}}, ""},
		{" 1m : 0.5 ", []attack.Stage{{Duration: time.Minute, Target: 0.5}}, ""},
		{"10s", nil, "want DURATION:TARGET"},
		{"10:100", nil, "not a positive Go duration"},
		{"-1s:100", nil, "not a positive Go duration"},
		{"1s:-3", nil, "not a number >= 0"},
		{"1s:NaN", nil, "not a number >= 0"},
		{"1s:1,", nil, "stage 2"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseStages(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || len(got) != len(tc.want) {
				t.Fatalf("%v %v", got, err)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("stage %d: %v, want %v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func FuzzParseStages(f *testing.F) {
	for _, s := range []string{"10s:100,20s:500", "1m:0", "", ",", "1s:1e9", "1h:1:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		st, err := ParseStages(s)
		if err != nil {
			return
		}
		for _, x := range st {
			if x.Duration <= 0 || x.Target < 0 || x.Target != x.Target {
				t.Fatalf("accepted %q as %v", s, x)
			}
		}
	})
}

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
		[]byte(`proxybench_open_loop_scheduled_total{origin="fast",proxy="nginx",scenario="simple"} 100` + "\n"),
		[]byte(`proxybench_target_rate_requests_per_second{origin="fast",proxy="nginx",scenario="simple"} 0` + "\n"),
		[]byte(`proxybench_requests_in_flight{origin="fast",proxy="nginx",scenario="simple"} 0` + "\n"),
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
		`proxybench_requests_total{code="200",origin="fast",proxy="nginx",scenario="simple"} ` + strconv.FormatInt(s.Sent, 10),
		`proxybench_open_loop_scheduled_total{origin="fast",proxy="nginx",scenario="simple"} 100`,
		"process_cpu_seconds_total", "go_goroutines", "proxybench_loadgen_cpu_limit_cores",
	} {
		if !bytes.Contains(scrape, []byte(want)) {
			t.Errorf("scrape lacks %q", want)
		}
	}
	metricslint.Check(t, scrape)
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
		WarmupStart: t0, Start: t0.Add(5 * time.Second), End: t0.Add(15 * time.Second),
		Requests: 990, Errors: 10, Bytes: 21000, Scheduled: 1000, Sent: 997, Missed: 3, Capped: 12, LagP99: 1234 * time.Microsecond,
		WrongOrigin: 1, Codes: map[int]int64{200: 980, 503: 10}, ErrorReasons: map[string]int64{"timeout": 7, "reset": 3}, Hist: h,
		Late: 4, LateCodes: map[int]int64{200: 3}, LateReasons: map[string]int64{"timeout": 1}, DrainEnd: t0.Add(15*time.Second + 250*time.Millisecond),
	}
	for _, tc := range []struct {
		name string
		o    options
	}{
		{"open", options{spec: attack.Spec{URL: "http://127.0.0.1:8882/fast/", Method: "GET", Mode: attack.Open, Rate: 100,
			Concurrency: 10000, ExpectOrigin: "fast"}}},
		{"closed", options{spec: attack.Spec{URL: "http://127.0.0.1:8882/fast/", Method: "GET", Mode: attack.Closed,
			Concurrency: 50, NewConnPerRequest: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			if err := writeResult(&b, &tc.o, res, false); err != nil {
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
