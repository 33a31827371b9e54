package netstack

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"proxybench/internal/cgroup"
	"proxybench/internal/cputime"
	"proxybench/internal/placement"
	"proxybench/loadgen/internal/attack"
	"proxybench/loadgen/internal/study"
)

// hostNginx finds the host's nginx binary.
func hostNginx() (string, error) {
	if p, err := exec.LookPath("nginx"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
		return "/usr/sbin/nginx", nil
	}
	return "", errors.New("no nginx in PATH nor /usr/sbin/nginx")
}

func versionOr(v string) string {
	if v == "" {
		return "(version unknown)"
	}
	return v
}

// freePort is a TCP port of 127.0.0.1 nothing listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// killLeftover stops a host nginx an earlier run left (its pid file in
// state/bare), when that pid is still an nginx of that directory.
func killLeftover(e *study.Env, state string) {
	b, err := os.ReadFile(filepath.Join(state, modeBare, "nginx.pid"))
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !bytes.Contains(cmdline, []byte("nginx")) || !bytes.Contains(cmdline, []byte(state)) {
		return
	}
	e.Log.Warn("netstack: stopping the host nginx an earlier run left", "pid", pid)
	_ = syscall.Kill(-pid, syscall.SIGKILL) // its own process group: master and workers
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

// startBare runs nginx as a host process in the foreground, in its own
// process group, pinned by taskset before its master forks the workers.
func startBare(e *study.Env, bin, dir string, cpus placement.CPUSet, port int) (*server, error) {
	args := nginxArgs(bin, dir)
	if len(cpus) > 0 {
		args = append([]string{"taskset", "-c", cpus.String()}, args...)
	}
	logf, err := os.Create(filepath.Join(dir, "stderr.log"))
	if err != nil {
		return nil, fmt.Errorf("netstack: %w", err)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("netstack: start the host nginx (%s): %w", strings.Join(args, " "), err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	pid := cmd.Process.Pid // taskset execs nginx: the same pid
	stop := func() {
		_ = syscall.Kill(pid, syscall.SIGTERM) // nginx: fast shutdown
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			<-done
		}
		_ = syscall.Kill(-pid, syscall.SIGKILL) // any worker left behind
	}
	// Fail fast when it exits at once (a bad config, a port taken).
	select {
	case <-done:
		b, _ := os.ReadFile(filepath.Join(dir, "stderr.log"))
		return nil, fmt.Errorf("netstack: the host nginx exited at start: %s", strings.TrimSpace(string(b)))
	case <-time.After(200 * time.Millisecond):
	}
	e.Log.Info("netstack host nginx started", "pid", pid, "cmd", strings.Join(args, " "))
	return &server{Mode: modeBare, Port: port, Pid: pid, URL: fmt.Sprintf("http://127.0.0.1:%d/", port), stop: stop,
		Detail: fmt.Sprintf("host process: `%s`; listens on 127.0.0.1:%d", strings.Join(quote(args), " "), port)}, nil
}

// startContainer runs the mode's container from the lab's image.
func startContainer(ctx context.Context, e *study.Env, mode, image, dir string, cpus placement.CPUSet, port int) (*server, error) {
	c := study.Container{Name: containerPrefix + mode, Image: image, Network: "host", Cpuset: cpus.String(),
		Mounts: []string{dir + ":" + mountDir}, Cmd: nginxArgs("nginx", mountDir)}
	if mode == modeBridge {
		c.Network = "bridge"
		c.Publish = []string{fmt.Sprintf("127.0.0.1::%d", containerPort)}
	}
	stop, err := e.Start(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("netstack: %s container: %w", mode, err)
	}
	s := &server{Mode: mode, Container: c.Name, stop: stop}
	dc, err := study.Engine()
	if err != nil {
		return s, fmt.Errorf("netstack: %w", err)
	}
	ctr, err := dc.Inspect(ctx, c.Name)
	if err != nil {
		return s, fmt.Errorf("netstack: %w", err)
	}
	s.ID, s.Pid = ctr.ID, ctr.Pid
	if s.Pid <= 0 {
		logs, _ := dc.Tail(ctx, c.Name, 20)
		return s, fmt.Errorf("netstack: %s container is not running (%s %s): %s", mode, ctr.State, ctr.ExitInfo(), logs)
	}
	if mode == modeBridge {
		if port, err = dc.HostPort(ctx, c.Name, containerPort); err != nil {
			return s, fmt.Errorf("netstack: %w", err)
		}
	}
	s.Port, s.URL = port, fmt.Sprintf("http://127.0.0.1:%d/", port)
	pin := "no cpuset"
	if c.Cpuset != "" {
		pin = "--cpuset-cpus " + c.Cpuset
	}
	switch mode {
	case modeHost:
		s.Detail = fmt.Sprintf("docker run --network host %s, no --cpus, image %s: `%s`; listens on 127.0.0.1:%d", pin, image, strings.Join(quote(c.Cmd), " "), port)
	default:
		s.Detail = fmt.Sprintf("docker run --network bridge -p %s %s, no --cpus, image %s: `%s`; listens on 0.0.0.0:%d in its netns, published on 127.0.0.1:%d",
			c.Publish[0], pin, image, strings.Join(quote(c.Cmd), " "), containerPort, port)
	}
	return s, nil
}

func quote(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if strings.ContainsAny(a, " ;") {
			out[i] = strconv.Quote(a)
		}
	}
	return out
}

// versionCheck records nginx -v and the Debian version on the host and
// in the image.
func versionCheck(ctx context.Context, e *study.Env, bin, container string) error {
	hostV, herr := exec.CommandContext(ctx, "dpkg-query", "-W", "-f", "${Version}", "nginx").Output()
	hostN, _ := exec.CommandContext(ctx, bin, "-v").CombinedOutput()
	var ctrV, ctrN string
	dc, cerr := study.Engine()
	if cerr == nil {
		ctrV, cerr = dc.Exec(ctx, container, "dpkg-query", "-W", "-f", "${Version}", "nginx")
		ctrN, _ = dc.Exec(ctx, container, "sh", "-c", "nginx -v 2>&1")
	}
	hv := strings.TrimSpace(string(hostV))
	ok := herr == nil && cerr == nil && hv != "" && hv == ctrV
	return e.AddCheck("same nginx build", ok, "host: dpkg nginx %s, %s; container: dpkg nginx %s, %s",
		versionOr(hv), strings.TrimSpace(string(hostN)), versionOr(ctrV), strings.TrimSpace(ctrN))
}

// modeChecks records that the modes really differ: netns and cgroup of
// each master, pinning and worker count, no quota. It returns the bridge's
// docker-proxy pid (0 when none) and a line about it.
func modeChecks(ctx context.Context, e *study.Env, servers map[string]*server, proxy placement.CPUSet, workers int) (dockerProxy int, line string, err error) {
	selfNS, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		return 0, "", fmt.Errorf("netstack: read the host's netns: %w", err)
	}
	online, _ := placement.Online()
	wantCPUs := proxy
	if len(wantCPUs) == 0 {
		wantCPUs = online
	}
	type info struct {
		ns, cg   string
		inDocker bool
	}
	got := map[string]info{}
	for _, m := range modes {
		s := servers[m]
		ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", s.Pid))
		if err != nil {
			return 0, "", fmt.Errorf("netstack: %s nginx pid %d: %w", m, s.Pid, err)
		}
		g, err := cgroup.Of(s.Pid)
		if err != nil {
			return 0, "", fmt.Errorf("netstack: %s nginx: %w", m, err)
		}
		raw, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", s.Pid))
		got[m] = info{ns: ns, cg: g.Path, inDocker: inContainerCgroup(string(raw))}
	}
	b, h, br := got[modeBare], got[modeHost], got[modeBridge]
	_ = e.AddCheck("bare: host process in the host netns", !b.inDocker && b.ns == selfNS,
		"nginx master pid %d: netns %s, host netns %s; cgroup %s (container cgroup: %t)", servers[modeBare].Pid, b.ns, selfNS, b.cg, b.inDocker)
	_ = e.AddCheck("hostnet: container cgroup, host netns", h.inDocker && strings.Contains(h.cg, servers[modeHost].ID) && h.ns == selfNS,
		"nginx master pid %d: netns %s, host netns %s; cgroup %s (container cgroup: %t)", servers[modeHost].Pid, h.ns, selfNS, h.cg, h.inDocker)
	_ = e.AddCheck("bridge: container cgroup, own netns", br.inDocker && strings.Contains(br.cg, servers[modeBridge].ID) && br.ns != selfNS,
		"nginx master pid %d: netns %s, host netns %s; cgroup %s (container cgroup: %t)", servers[modeBridge].Pid, br.ns, selfNS, br.cg, br.inDocker)

	checkPinning(e, servers, wantCPUs, workers)

	// The bridge's path: docker-proxy for the published port.
	dp := findDockerProxy(servers[modeBridge].Port)
	line = fmt.Sprintf("docker-proxy for 127.0.0.1:%d: none found", servers[modeBridge].Port)
	if dp > 0 {
		l, _ := allowedCPUs(dp)
		line = fmt.Sprintf("docker-proxy pid %d serves 127.0.0.1:%d (may run on CPUs %s)", dp, servers[modeBridge].Port, l)
	}
	return dp, line, ctx.Err()
}

// checkPinning records, from the kernel, that each mode's master and
// workers run on wantCPUs with the same worker count, and from the cgroups
// that none has a CPU quota.
func checkPinning(e *study.Env, servers map[string]*server, wantCPUs placement.CPUSet, workers int) {
	var pins, quotas []string
	pinOK, quotaOK := true, true
	for _, m := range modes {
		s := servers[m]
		kids := cputime.Children("/proc", s.Pid)
		pids := append([]int{s.Pid}, kids...)
		var lists []string
		for _, p := range pids {
			l, err := allowedCPUs(p)
			c, perr := placement.ParseCPUSet(l)
			if err != nil || perr != nil || !c.Equal(wantCPUs) {
				pinOK = false
			}
			lists = append(lists, l)
		}
		if len(kids) != workers {
			pinOK = false
		}
		pins = append(pins, fmt.Sprintf("%s: %d workers, CPUs %s", m, len(kids), strings.Join(lists, " ")))
		g, err := cgroup.Of(s.Pid)
		q := "?"
		if err == nil {
			cores, limited, qerr := g.Quota()
			switch {
			case qerr != nil:
				q, quotaOK = "unread: "+qerr.Error(), false
			case limited:
				q, quotaOK = fmt.Sprintf("%g cores", cores), false
			default:
				q = "none"
			}
		} else {
			quotaOK = false
		}
		quotas = append(quotas, m+" "+q)
	}
	_ = e.AddCheck("pinned, same workers", pinOK, "want %d workers, master and workers on CPUs %s; %s", workers, wantCPUs, strings.Join(pins, "; "))
	_ = e.AddCheck("no CPU quota", quotaOK, "cgroup CPU quota of each nginx master: %s", strings.Join(quotas, ", "))

}

// inContainerCgroup reports whether a /proc/<pid>/cgroup text names a
// container's group (docker's cgroupfs or systemd driver, containerd).
func inContainerCgroup(cg string) bool {
	for _, l := range strings.Split(cg, "\n") {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) == 3 && (strings.Contains(parts[2], "/docker") || strings.Contains(parts[2], "docker-") || strings.Contains(parts[2], "containerd")) {
			return true
		}
	}
	return false
}

// allowedCPUs is the CPUs pid may run on ("0-1"), from the kernel's
// affinity mask.
func allowedCPUs(pid int) (string, error) {
	cpus, err := cputime.Affinity(pid)
	if err != nil {
		return "", fmt.Errorf("affinity of pid %d: %w", pid, err)
	}
	return cputime.FormatList(cpus), nil
}

// parseNetDevRx reads iface's received packets from /proc/net/dev text.
func parseNetDevRx(text, iface string) (int64, error) {
	for _, l := range strings.Split(text, "\n") {
		name, rest, ok := strings.Cut(l, ":")
		if !ok || strings.TrimSpace(name) != iface {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 2 {
			break
		}
		return strconv.ParseInt(f[1], 10, 64)
	}
	return 0, fmt.Errorf("no interface %s in net/dev", iface)
}

// findDockerProxy is the pid of the docker-proxy serving host port port, 0
// when there is none.
func findDockerProxy(port int) int {
	ents, _ := os.ReadDir("/proc")
	want := []byte("-host-port\x00" + strconv.Itoa(port) + "\x00")
	for _, d := range ents {
		p, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		if err == nil && bytes.Contains(b, []byte("docker-proxy")) && bytes.Contains(b, want) {
			return p
		}
	}
	return 0
}

// badResponses says what in r is not a 200: transport errors, other
// codes; "" when nothing.
func badResponses(r *attack.Result) string {
	var bad []string
	if r.Errors > 0 {
		var why []string
		for reason, n := range r.ErrorReasons {
			why = append(why, fmt.Sprintf("%d %s", n, reason))
		}
		slices.Sort(why)
		bad = append(bad, fmt.Sprintf("%d transport errors (%s)", r.Errors, strings.Join(why, ", ")))
	}
	for code, n := range r.Codes {
		if code != 200 && n > 0 {
			bad = append(bad, fmt.Sprintf("%d × %d", n, code))
		}
	}
	slices.Sort(bad)
	return strings.Join(bad, ", ")
}

// micros lists per-sample µs values, "none" when there are none.
func micros(v []float64) string {
	var out []string
	for _, x := range v {
		out = append(out, fmt.Sprintf("%.1f µs", x))
	}
	return listOrNone(out)
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, "; ")
}

// configHash is the config's sha256, short.
func configHash(conf string) string {
	return fmt.Sprintf("%x", sha256.Sum256([]byte(conf)))[:12]
}

// rateTolerance is how far a sample's sent rate may fall short of the
// asked one: 1 %, or a 50 ms stall's share of a window of d if more.
func rateTolerance(d time.Duration) float64 {
	if d <= 0 {
		return 0.01
	}
	return math.Max(0.01, 0.05/d.Seconds())
}
