package scaleout

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"proxybench/internal/placement"
	"proxybench/internal/studydata"
	"proxybench/loadgen/internal/attack"
)

func TestScaleoutPlan(t *testing.T) {
	want := map[string][]float64{"A": {1.5}, "B": {0.5, 1.0}, "C": {0.5, 0.5, 0.5}}
	ports := map[int]string{}
	lab := map[int]bool{8881: true, 8882: true, 8883: true, 8884: true, 8885: true, 8982: true, 8983: true, 8985: true,
		9090: true, 9101: true, 9102: true, 9103: true, 9104: true, 9400: true, 9500: true, 3000: true}
	if len(cases) != len(want) {
		t.Fatalf("%d cases, want %d", len(cases), len(want))
	}
	for _, c := range cases {
		if math.Abs(c.total()-budget) > 1e-9 {
			t.Errorf("case %s totals %g CPU, want the budget %g", c.Name, c.total(), budget)
		}
		var got []float64
		for i, x := range c.Ctrs {
			got = append(got, x.CPUs)
			if other, dup := ports[x.Port]; dup || lab[x.Port] {
				t.Errorf("%s port %d is taken (by %q or the lab)", x.Name, x.Port, other)
			}
			ports[x.Port] = x.Name
			switch {
			case x.Kind == "haproxy" && (i != 0 || x.Workers() != 1):
				t.Errorf("%s: HAProxy must be the front (index %d) with nbthread 1 (got %d)", x.Name, i, x.Workers())
			case x.Kind == "nginx" && x.Workers() != int(math.Ceil(x.CPUs)):
				t.Errorf("%s: %d workers for quota %g, want ceil", x.Name, x.Workers(), x.CPUs)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want[c.Name]) {
			t.Errorf("case %s quotas %v, want %v", c.Name, got, want[c.Name])
		}
	}
	// Every HAProxy backend is an nginx of the same case.
	for _, c := range cases {
		for _, x := range c.Ctrs {
			for _, b := range x.Backends {
				if ports[b] == "" || !strings.HasPrefix(ports[b], c.Ctrs[0].Name[:len("pb-scaleout-x")]) {
					t.Errorf("%s balances over port %d, not an nginx of case %s (%q)", x.Name, b, c.Name, ports[b])
				}
			}
		}
	}
	if len(cases[2].Ctrs[0].Backends) != 2 {
		t.Errorf("case C balances over %v, want two nginx", cases[2].Ctrs[0].Backends)
	}
}

func TestScaleoutCpuset(t *testing.T) {
	for _, tc := range []struct {
		online string
		mode   string
		want   string
	}{
		{"0-1", placement.Auto, "0-1"}, // proxy CPU 1 alone cannot give 1.5: every CPU
		{"0-7", placement.Auto, "6-7"}, // two proxy CPUs hold the budget
		{"0-3", placement.Auto, "0-3"},
		{"0-1", placement.None, ""},
	} {
		online, _ := placement.ParseCPUSet(tc.online)
		p, err := placement.Resolve(placement.Spec{Mode: tc.mode}, online)
		if err != nil {
			t.Fatal(err)
		}
		got, why := cpusetOf(p)
		if got.String() != tc.want || why == "" {
			t.Errorf("online %s %s: cpuset %q (%s), want %q", tc.online, tc.mode, got, why, tc.want)
		}
	}
}

func TestScaleoutConfigs(t *testing.T) {
	a := nginxConf(cases[0].Ctrs[0])
	for _, s := range []string{"worker_processes 2;", "listen 127.0.0.1:18901 ", "root /srv/scaleout;", "stub_status;", "access_log off;"} {
		if !strings.Contains(a, s) {
			t.Errorf("nginx config of A lacks %q:\n%s", s, a)
		}
	}
	if b := nginxConf(cases[1].Ctrs[1]); !strings.Contains(b, "worker_processes 1;") {
		t.Errorf("nginx 1.0 must run 1 worker:\n%s", b)
	}
	h := haproxyConf(cases[2].Ctrs[0])
	for _, s := range []string{"nbthread 1\n", "bind 127.0.0.1:18921 ", "balance roundrobin", "server n1 127.0.0.1:18922 ", "server n2 127.0.0.1:18923 ", "http-reuse always"} {
		if !strings.Contains(h, s) {
			t.Errorf("HAProxy config of C lacks %q:\n%s", s, h)
		}
	}
	if b := bodyBytes(); len(b) != 76800 {
		t.Errorf("body is %d bytes, want 76800", len(b))
	}
}

func TestScaleoutValuesCountBadStatuses(t *testing.T) {
	r := &attack.Result{Start: time.Unix(0, 0), End: time.Unix(1, 0), Requests: 90, Errors: 10, Codes: map[int]int64{200: 80, 502: 10}}
	if v := values(r); math.Abs(v["error_ratio"]-0.2) > 1e-9 {
		t.Errorf("error_ratio %g, want 0.2 (10 transport errors + 10 of status 502 in 100)", v["error_ratio"])
	}
}

func TestStubRequests(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "Active connections: 1 \nserver accepts handled requests\n 7 7 4242 \nReading: 0 Writing: 1 Waiting: 0 \n")
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	var p int
	fmt.Sscan(port, &p)
	n, err := stubRequests(context.Background(), p)
	if err != nil || n != 4242 {
		t.Fatalf("stubRequests = %d, %v; want 4242", n, err)
	}
}

func TestScaleoutNotes(t *testing.T) {
	rec := &studydata.Record{}
	add := func(v string, rep int, p99, rps float64) {
		rec.Samples = append(rec.Samples, studydata.Sample{Group: "15pct", Variant: v, Repeat: rep, Values: map[string]float64{"p99_us": p99, "rps": rps}})
	}
	add("A", 1, 100, 100)
	add("B", 1, 900, 100)
	add("C", 1, 800, 90)
	add("A", 2, 100, 100)
	add("B", 2, 700, 100)
	add("C", 2, 800, 100)
	rates := map[string]float64{"15pct": 100}
	got := pairNotes(rec, rateLevels[:1], rates)
	if len(got) != 1 || !strings.Contains(got[0], "B below A in 0 of 2; C below A in 0 of 2; C below B in 1 of 2") {
		t.Errorf("pair notes %q", got)
	}
	if s := sustainedNote(rec, rates); !strings.Contains(s, "A 100.0 % (at 15pct), B 100.0 % (at 15pct), C 90.0 % (at 15pct)") {
		t.Errorf("sustained note %q", s)
	}
}
