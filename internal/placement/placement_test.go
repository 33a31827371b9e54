package placement

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

func cpus(t *testing.T, s string) CPUSet {
	t.Helper()
	cs, err := ParseCPUSet(s)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func TestParseCPUSet(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want, err string
	}{
		{in: "", want: ""},
		{in: "1", want: "1"},
		{in: "2-3", want: "2-3"},
		{in: "0,2-3", want: "0,2-3"},
		{in: "3,0,1,2", want: "0-3"},
		{in: "0-1,1-2", want: "0-2"},
		{in: " 0 , 5 ", want: "0,5"},
		{in: "0,1,3,4,5,7", want: "0-1,3-5,7"},
		{in: "3-1", err: "runs backwards"},
		{in: "a", err: "want CPU numbers"},
		{in: "-1", err: "want CPU numbers"},
		{in: "1-", err: "want CPU numbers"},
		{in: "1,,2", err: "want CPU numbers"},
		{in: "+1", err: "want CPU numbers"},
		{in: "0-99999", err: "above 8191"},
	} {
		got, err := ParseCPUSet(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseCPUSet(%q) = %v, %v; want error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got.String() != tc.want {
			t.Errorf("ParseCPUSet(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func FuzzParseCPUSet(f *testing.F) {
	for _, s := range []string{"", "1", "0-3", "0,2-3", "3-1", "x", "0-8191"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cs, err := ParseCPUSet(s)
		if err != nil {
			return
		}
		// The canonical text reads back as the same set.
		again, err := ParseCPUSet(cs.String())
		if err != nil || !again.Equal(cs) {
			t.Fatalf("%q -> %q -> %v, %v", s, cs, again, err)
		}
		for i := 1; i < len(cs); i++ {
			if cs[i] <= cs[i-1] {
				t.Fatalf("%q: not sorted and unique: %v", s, cs)
			}
		}
	})
}

func TestAuto(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		online                       string
		loadgen, proxy, origins, obs string // "" = all (no cpuset)
		proxyCPUs                    float64
		workers, originWorkers       int
		separated                    bool
		reasonHas                    string
	}{
		{online: "0", proxyCPUs: 1, workers: 1, originWorkers: 1, reasonHas: "nothing can be separated"},
		{online: "0-1", loadgen: "0", proxy: "1", origins: "0", obs: "0", proxyCPUs: 1, workers: 1, originWorkers: 1, separated: true},
		{online: "0-2", loadgen: "0", proxy: "2", origins: "1", obs: "0", proxyCPUs: 1, workers: 1, originWorkers: 1, separated: true},
		{online: "0-3", loadgen: "1", proxy: "3", origins: "2", obs: "0", proxyCPUs: 1, workers: 1, originWorkers: 1, separated: true},
		{online: "0-4", loadgen: "1-2", proxy: "4", origins: "3", obs: "0", proxyCPUs: 1, workers: 1, originWorkers: 1, separated: true},
		{online: "0-7", loadgen: "1-3", proxy: "6-7", origins: "4-5", obs: "0", proxyCPUs: 2, workers: 2, originWorkers: 2, separated: true},
		{online: "0-15", loadgen: "1-7", proxy: "12-15", origins: "8-11", obs: "0", proxyCPUs: 4, workers: 4, originWorkers: 4, separated: true},
		// Holes in the online list: the CPUs are taken in order.
		{online: "0,2", loadgen: "0", proxy: "2", origins: "0", obs: "0", proxyCPUs: 1, workers: 1, originWorkers: 1, separated: true},
	} {
		t.Run(tc.online, func(t *testing.T) {
			t.Parallel()
			p, err := Resolve(Spec{}, cpus(t, tc.online))
			if err != nil {
				t.Fatal(err)
			}
			got := fmt.Sprintf("%s %s %s %s %g %d %d %v", p.Loadgen, p.Proxy, p.Origins, p.Observability, p.ProxyCPUs, p.Workers, p.OriginWorkers, p.Separated())
			want := fmt.Sprintf("%s %s %s %s %g %d %d %v", tc.loadgen, tc.proxy, tc.origins, tc.obs, tc.proxyCPUs, tc.workers, tc.originWorkers, tc.separated)
			if got != want || p.Mode != Auto {
				t.Errorf("auto on %s: %s (mode %s), want %s", tc.online, got, p.Mode, want)
			}
			if !strings.Contains(p.Reason, tc.reasonHas) {
				t.Errorf("reason %q lacks %q", p.Reason, tc.reasonHas)
			}
			// Every online CPU has a role and the proxy's are its own.
			if p.Separated() {
				var others CPUSet
				for _, r := range []CPUSet{p.Loadgen, p.Origins, p.Observability} {
					others = append(others, r...)
					if len(r.Intersect(p.Proxy)) > 0 {
						t.Errorf("role %s shares the proxy's CPUs %s", r, p.Proxy)
					}
				}
				all, _ := ParseCPUSet(others.String() + "," + p.Proxy.String())
				if !all.Equal(p.Online) {
					t.Errorf("roles cover %s of online %s", all, p.Online)
				}
			}
		})
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		spec   Spec
		online string
		want   string   // Summary
		errs   []string // every one must appear
	}{
		{name: "none on 2", spec: Spec{Mode: None}, online: "0-1",
			want: "placement none (online CPUs 0-1): loadgen all, proxy all, origins all, observability all; every proxy: CPU quota 2, workers 2"},
		{name: "none on 8 keeps 2", spec: Spec{Mode: None}, online: "0-7",
			want: "placement none (online CPUs 0-7): loadgen all, proxy all, origins all, observability all; every proxy: CPU quota 2, workers 2"},
		{name: "none on 1", spec: Spec{Mode: None}, online: "0",
			want: "placement none (online CPUs 0): loadgen all, proxy all, origins all, observability all; every proxy: CPU quota 1, workers 1"},
		{name: "custom, the rest for the others", spec: Spec{Proxy: "2-3"}, online: "0-3",
			want: "placement custom (online CPUs 0-3): loadgen 0-1, proxy 2-3, origins 0-1, observability 0-1; every proxy: CPU quota 2, workers 2"},
		{name: "custom, every role", spec: Spec{Mode: Custom, Loadgen: "0-1", Proxy: "3", Origins: "2", Observability: "0"}, online: "0-3",
			want: "placement custom (online CPUs 0-3): loadgen 0-1, proxy 3, origins 2, observability 0; every proxy: CPU quota 1, workers 1"},
		{name: "custom without proxy", spec: Spec{Mode: Custom, Loadgen: "0"}, online: "0-1",
			errs: []string{"placement.proxy: empty: a custom placement needs the proxy's CPUs"}},
		{name: "bad mode", spec: Spec{Mode: "fast"}, online: "0-1",
			errs: []string{`placement.mode "fast": use auto`}},
		{name: "auto with CPUs", spec: Spec{Mode: Auto, Proxy: "1"}, online: "0-1",
			errs: []string{"placement.mode auto with CPUs named for proxy: drop the mode"}},
		{name: "bad list", spec: Spec{Proxy: "1-x"}, online: "0-1",
			errs: []string{`placement.proxy "1-x": want CPU numbers`}},
		{name: "offline CPU", spec: Spec{Proxy: "5", Origins: "0,7"}, online: "0-1",
			errs: []string{`placement.proxy "5": CPU 5 not online (online: 0-1): name CPUs of 0-1`, `placement.origins "0,7": CPU 7 not online`}},
		{name: "proxy shares", spec: Spec{Proxy: "1", Loadgen: "0-1", Observability: "1"}, online: "0-1",
			errs: []string{`placement.loadgen "0-1" shares CPU 1 with placement.proxy "1": the proxy's CPUs are its own`, `placement.observability "1" shares CPU 1`}},
		{name: "proxy takes all", spec: Spec{Proxy: "0-1"}, online: "0-1",
			errs: []string{`placement.proxy "0-1" takes every online CPU (0-1): leave at least one`}},
		{name: "no CPUs online", spec: Spec{}, online: "",
			errs: []string{"the host reports no online CPU"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, err := Resolve(tc.spec, cpus(t, tc.online))
			if len(tc.errs) > 0 {
				if err == nil {
					t.Fatalf("no error; placement %s", p.Summary())
				}
				if !strings.HasPrefix(err.Error(), "invalid plan:\n  ") {
					t.Errorf("error %q not in the plan's style", err)
				}
				for _, e := range tc.errs {
					if !strings.Contains(err.Error(), e) {
						t.Errorf("error %q lacks %q", err, e)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Summary(); got != tc.want {
				t.Errorf("summary\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestEnv(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		spec   Spec
		online string
		want   string
	}{
		{Spec{}, "0-1", "PROXY_CPUSET=1 PROXY_CPUS=1 PROXY_WORKERS=1 ORIGIN_CPUSET=0 ORIGIN_WORKERS=1 INFRA_CPUSET=0"},
		{Spec{Mode: None}, "0-1", "PROXY_CPUSET= PROXY_CPUS=2 PROXY_WORKERS=2 ORIGIN_CPUSET= ORIGIN_WORKERS=2 INFRA_CPUSET="},
		{Spec{}, "0-7", "PROXY_CPUSET=6-7 PROXY_CPUS=2 PROXY_WORKERS=2 ORIGIN_CPUSET=4-5 ORIGIN_WORKERS=2 INFRA_CPUSET=0"},
	} {
		p, err := Resolve(tc.spec, cpus(t, tc.online))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, v := range p.Env() {
			got = append(got, v.Name+"="+v.Value)
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%s on %s: %s, want %s", tc.spec.Name(), tc.online, strings.Join(got, " "), tc.want)
		}
	}
}

func TestMismatches(t *testing.T) {
	t.Parallel()
	online := CPUSet{0, 1}
	autoP, _ := Resolve(Spec{}, online)
	placed := []Observed{
		{Name: "proxybench-nginx", Role: RoleProxy, Cpuset: "1", CPUs: 1},
		{Name: "proxybench-caddy", Role: RoleProxy, Cpuset: "1", CPUs: 1},
		{Name: "proxybench-origin-fast", Role: RoleOrigins, Cpuset: "0"},
		{Name: "proxybench-prometheus", Role: RoleObservability, Cpuset: "0"},
		{Name: "stranger", Cpuset: "0-1"}, // no role: not the stack's to place
	}
	unplaced := []Observed{
		{Name: "proxybench-nginx", Role: RoleProxy, CPUs: 2},
		{Name: "proxybench-caddy", Role: RoleProxy, CPUs: 2},
		{Name: "proxybench-origin-fast", Role: RoleOrigins},
		{Name: "proxybench-prometheus", Role: RoleObservability},
	}
	for _, tc := range []struct {
		name  string
		ctrs  []Observed
		mode  string // StackMode
		diffs []string
	}{
		{name: "auto stack", ctrs: placed, mode: Auto},
		{name: "none stack", ctrs: unplaced, mode: None, diffs: []string{
			"proxybench-nginx (proxy) runs on CPUs all, the plan gives proxy CPUs 1",
			"proxybench-nginx has a CPU quota of 2, the plan gives every proxy 1",
			"proxybench-origin-fast (origins) runs on CPUs all, the plan gives origins CPUs 0"}},
		{name: "one proxy's quota cut by hand", mode: "", ctrs: []Observed{placed[0], {Name: "proxybench-caddy", Role: RoleProxy, Cpuset: "1", CPUs: 0.7}},
			diffs: []string{"proxybench-caddy has a CPU quota of 0.7, the plan gives every proxy 1"}},
		{name: "one proxy elsewhere", mode: "", ctrs: []Observed{placed[0], {Name: "proxybench-custom", Role: RoleProxy, Cpuset: "0-1", CPUs: 1}},
			diffs: []string{"proxybench-custom (proxy) runs on CPUs 0-1, the plan gives proxy CPUs 1"}},
		{name: "no quota", mode: "", ctrs: []Observed{{Name: "p", Role: RoleProxy, Cpuset: "1"}},
			diffs: []string{"p has a CPU quota of none"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := autoP.Mismatches(tc.ctrs)
			for _, d := range tc.diffs {
				if !strings.Contains(strings.Join(got, "\n"), d) {
					t.Errorf("mismatches %q lack %q", got, d)
				}
			}
			if len(tc.diffs) == 0 && len(got) > 0 {
				t.Errorf("mismatches %q, want none", got)
			}
			if m := StackMode(tc.ctrs, online); m != tc.mode {
				t.Errorf("stack mode %q, want %q", m, tc.mode)
			}
			err := autoP.MismatchError(tc.ctrs, online, "PLACEMENT=auto")
			if (err != nil) != (len(tc.diffs) > 0) {
				t.Fatalf("MismatchError %v", err)
			}
			if err != nil && !strings.Contains(err.Error(), "the run asks placement auto") || err != nil && !strings.Contains(err.Error(), "make up PLACEMENT=auto") {
				t.Errorf("error %q does not say what to do", err)
			}
			if tc.mode == None && !strings.Contains(err.Error(), "the stack runs placement none") {
				t.Errorf("error %q does not name the stack's placement", err)
			}
		})
	}
}

func TestWorkerSetting(t *testing.T) {
	t.Parallel()
	got := []string{WorkerSetting("nginx", 1), WorkerSetting("haproxy", 2), WorkerSetting("traefik", 3), WorkerSetting("caddy", 1), WorkerSetting("custom", 1)}
	want := "worker_processes 1|nbthread 2|GOMAXPROCS=3|GOMAXPROCS=1|user's image"
	if strings.Join(got, "|") != want {
		t.Errorf("%s, want %s", strings.Join(got, "|"), want)
	}
}

// TestPin pins a child process (the test binary again, so this one keeps
// its CPUs) and reads every thread's mask back from /proc, the way the
// e2e test checks the real loadgen.
func TestPin(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	online, err := Online()
	if err != nil {
		t.Fatal(err)
	}
	target := online[len(online)-1:]
	cmd := exec.Command(os.Args[0], "-test.run=^TestPinChild$", "-test.v")
	cmd.Env = append(os.Environ(), "PLACEMENT_PIN_CHILD="+target.String())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "pinned to "+target.String()+" gomaxprocs 1") {
		t.Errorf("child said:\n%s", out)
	}
}

func TestPinChild(t *testing.T) {
	want := os.Getenv("PLACEMENT_PIN_CHILD")
	if want == "" {
		t.Skip("run by TestPin")
	}
	cs := cpus(t, want)
	done := make(chan bool)
	for range 4 { // threads busy while Pin walks them
		go func() {
			for {
				select {
				case <-done:
					return
				default:
					runtime.Gosched()
				}
			}
		}()
	}
	defer close(done)
	if err := Pin(cs); err != nil {
		t.Fatal(err)
	}
	a, err := SelfAffinity()
	if err != nil {
		t.Fatal(err)
	}
	// Independently of SelfAffinity: every thread's Cpus_allowed_list.
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile("/proc/self/task/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok && strings.TrimSpace(v) != want {
				t.Errorf("thread %s: Cpus_allowed_list %s, want %s", e.Name(), strings.TrimSpace(v), want)
			}
		}
	}
	fmt.Printf("pinned to %s gomaxprocs %d threads %d\n", a.CPUs, a.GOMAXPROCS, a.Threads)
}

func TestCPUSetUnion(t *testing.T) {
	for _, tc := range []struct{ a, b, want CPUSet }{
		{CPUSet{0}, CPUSet{1}, CPUSet{0, 1}},
		{CPUSet{1, 3}, CPUSet{0, 1}, CPUSet{0, 1, 3}},
		{nil, CPUSet{2}, CPUSet{2}},
		{nil, nil, CPUSet{}},
	} {
		if got := tc.a.Union(tc.b); !got.Equal(tc.want) {
			t.Errorf("%v ∪ %v = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
