// Package cgroup owns finding a process's CPU cgroup and reading its CPU
// accounting: usage, CFS throttling, the CPU quota, pressure (PSI), its
// threads and the CPUs of its cpuset. It
// resolves the group from /proc/<pid>/cgroup and /proc/self/mountinfo, so it
// works on cgroup v1 (cpu and cpuacct mounted apart or together), v2 and the
// hybrid layout, with the cgroupfs and systemd drivers alike (both only name
// the path), and from inside a container whose cgroup mount is rooted below
// the hierarchy's root.
package cgroup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// FS says where /proc and the cgroup mounts are. The zero value is the live
// system; tests point it at a fixture tree.
type FS struct {
	Proc string // default "/proc"
	Root string // prefix of every mount point of mountinfo, default ""
}

func (f FS) proc() string {
	if f.Proc == "" {
		return "/proc"
	}
	return f.Proc
}

// Self is the calling process's CPU cgroup.
func Self() (*Group, error) { return FS{}.Find(0) }

// Of is the CPU cgroup of process pid.
func Of(pid int) (*Group, error) { return FS{}.Find(pid) }

// Group is one process's CPU cgroup: where its files are.
type Group struct {
	Version int    // 1 or 2
	Path    string // the path /proc/<pid>/cgroup names (the cpu controller's on v1)

	cpu, cpuTop  string // dir of cpu.stat and the quota; the mount point above it
	acct         string // dir of the usage counter (v1 cpuacct; v2 = cpu)
	unified      string // v2 group dir (also on a hybrid v1 host) for cpu.pressure; "" none
	ownPressure  bool   // unified is not the root group and has a cpu.pressure
	procPressure string // /proc/pressure/cpu
	cpuset       string // dir of the cpuset controller (v1; the v2 group dir); "" none
	memory       string // dir of the memory controller (v1; the v2 group dir); "" none
}

// Dirs are the group's directories: the cpu controller's (cpu.stat, the
// quota) and the usage counter's (v1 cpuacct; the same on v2).
func (g *Group) Dirs() (cpu, usage string) { return g.cpu, g.acct }

// Find resolves the CPU cgroup of pid (0 = the calling process).
func (f FS) Find(pid int) (*Group, error) {
	who := "self"
	if pid > 0 {
		who = strconv.Itoa(pid)
	}
	cgFile := filepath.Join(f.proc(), who, "cgroup")
	b, err := os.ReadFile(cgFile)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w (does the process exist, and is this the same PID namespace?)", cgFile, err)
	}
	miFile := filepath.Join(f.proc(), "self", "mountinfo")
	mb, err := os.ReadFile(miFile)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w (is /proc mounted?)", miFile, err)
	}
	mounts, err := parseMountinfo(mb)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", miFile, err)
	}
	v1 := map[string]string{} // controller -> path
	v2, hasV2 := "", false
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2, hasV2 = parts[2], true
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			v1[c] = parts[2]
		}
	}
	g := &Group{procPressure: filepath.Join(f.proc(), "pressure", "cpu")}
	var v2Top string
	if hasV2 {
		if dir, top, ok := f.locate(mounts, "cgroup2", "", v2); ok {
			g.unified, v2Top = dir, top
			g.ownPressure = v2 != "/" && fileExists(filepath.Join(dir, "cpu.pressure"))
		}
	}
	if p, ok := v1["cpuset"]; ok {
		g.cpuset, _, _ = f.locate(mounts, "cgroup", "cpuset", p)
	}
	if g.cpuset == "" {
		g.cpuset = g.unified
	}
	if p, ok := v1["memory"]; ok {
		g.memory, _, _ = f.locate(mounts, "cgroup", "memory", p)
	}
	if g.memory == "" {
		g.memory = g.unified
	}
	if p, ok := v1["cpu"]; ok {
		if dir, top, ok := f.locate(mounts, "cgroup", "cpu", p); ok {
			g.Version, g.Path, g.cpu, g.cpuTop = 1, p, dir, top
			ap, ok := v1["cpuacct"]
			if !ok {
				return nil, fmt.Errorf("%s names a cpu cgroup but no cpuacct one: the kernel lacks CONFIG_CGROUP_CPUACCT, CPU usage cannot be read", cgFile)
			}
			if g.acct, _, ok = f.locate(mounts, "cgroup", "cpuacct", ap); !ok {
				return nil, fmt.Errorf("no cgroup v1 mount of the cpuacct controller covering %s in %s: mount it (e.g. /sys/fs/cgroup/cpuacct)", ap, miFile)
			}
			return g, nil
		}
	}
	if g.unified != "" {
		g.Version, g.Path, g.cpu, g.cpuTop, g.acct = 2, v2, g.unified, v2Top, g.unified
		return g, nil
	}
	return nil, fmt.Errorf("no mounted CPU cgroup for process %s (%s lists %q; %s has no matching cgroup mount): mount /sys/fs/cgroup, or in a container bind-mount the host's read-only",
		who, cgFile, strings.TrimSpace(string(b)), miFile)
}

type mount struct{ root, point, fstype, super string }

// parseMountinfo reads proc(5) mountinfo lines:
// ID PARENT MAJ:MIN ROOT POINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS
func parseMountinfo(b []byte) ([]mount, error) {
	var out []mount
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+2 >= len(f) {
			return nil, fmt.Errorf("malformed line %q", sc.Text())
		}
		m := mount{root: unescape(f[3]), point: unescape(f[4]), fstype: f[sep+1]}
		if sep+3 < len(f) {
			m.super = f[sep+3]
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// locate finds the directory of cgroup path p in a mount of fstype carrying
// controller (v1; "" for cgroup2), and that mount's top directory.
func (f FS) locate(mounts []mount, fstype, controller, p string) (dir, top string, ok bool) {
	for _, m := range mounts {
		if m.fstype != fstype {
			continue
		}
		if controller != "" && !hasOption(m.super, controller) {
			continue
		}
		rel := p
		if m.root != "/" {
			if p != m.root && !strings.HasPrefix(p, m.root+"/") {
				continue // this mount shows another part of the hierarchy
			}
			rel = strings.TrimPrefix(p, m.root)
		}
		if strings.HasPrefix(rel, "/..") {
			continue // outside our cgroup namespace
		}
		top = f.Root + m.point
		return filepath.Join(top, rel), top, true
	}
	return "", "", false
}

func hasOption(opts, want string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == want {
			return true
		}
	}
	return false
}

// Usage is the group's total CPU time: v1 cpuacct.usage, v2 cpu.stat usage_usec.
func (g *Group) Usage() (time.Duration, error) {
	if g.Version == 1 {
		file := filepath.Join(g.acct, "cpuacct.usage")
		s, err := read(file)
		if err != nil {
			return 0, err
		}
		ns, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse %s: %q is not a count of nanoseconds: an unexpected kernel format", file, s)
		}
		return time.Duration(ns), nil
	}
	st, file, err := g.stat()
	if err != nil {
		return 0, err
	}
	us, ok := st["usage_usec"]
	if !ok {
		return 0, fmt.Errorf("%s has no usage_usec line: an unexpected kernel format", file)
	}
	return time.Duration(us) * time.Microsecond, nil
}

// Throttling is the CFS bandwidth account of cpu.stat.
type Throttling struct {
	Periods       int64         // enforcement periods that had runnable tasks
	Throttled     int64         // of them, periods that ran out of quota
	ThrottledTime time.Duration // total time throttled
}

// Throttling reads cpu.stat (v1 nr_periods, nr_throttled, throttled_time
// ns; v2 nr_periods, nr_throttled, throttled_usec). Without a quota (or,
// on v2, without the cpu controller) the fields are zero.
func (g *Group) Throttling() (Throttling, error) {
	st, _, err := g.stat()
	if err != nil {
		return Throttling{}, err
	}
	t := Throttling{Periods: st["nr_periods"], Throttled: st["nr_throttled"]}
	if g.Version == 1 {
		t.ThrottledTime = time.Duration(st["throttled_time"])
	} else {
		t.ThrottledTime = time.Duration(st["throttled_usec"]) * time.Microsecond
	}
	return t, nil
}

func (g *Group) stat() (map[string]int64, string, error) {
	file := filepath.Join(g.cpu, "cpu.stat")
	s, err := read(file)
	if err != nil {
		return nil, file, err
	}
	out := map[string]int64{}
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return nil, file, fmt.Errorf("parse %s: line %q: %v: an unexpected kernel format", file, line, err)
		}
		out[k] = n
	}
	return out, file, nil
}

// Quota is the CPU the group may use, in cores: the smallest CFS quota over
// the group and its ancestors up to the mount (v1 cpu.cfs_quota_us /
// cpu.cfs_period_us, -1 = none; v2 cpu.max, "max" = none). limited is false
// when no level has a quota.
func (g *Group) Quota() (cores float64, limited bool, err error) {
	cores = math.Inf(1)
	for dir := g.cpu; ; dir = filepath.Dir(dir) {
		c, ok, err := g.quotaAt(dir)
		switch {
		case err == nil:
		case errors.Is(err, fs.ErrNotExist) && (dir != g.cpu || g.Version == 2):
			// An ancestor without the files (the v2 root has no cpu.max),
			// or a v2 group without the cpu controller: no quota there.
		default:
			return 0, false, err
		}
		if ok && c < cores {
			cores, limited = c, true
		}
		if dir == g.cpuTop || !strings.HasPrefix(dir, g.cpuTop) || filepath.Dir(dir) == dir {
			break
		}
	}
	if !limited {
		return 0, false, nil
	}
	return cores, true, nil
}

func (g *Group) quotaAt(dir string) (float64, bool, error) {
	q, p, err := g.rawQuotaAt(dir)
	if err != nil || q < 0 {
		return 0, false, err
	}
	return float64(q) / float64(p), true, nil
}

// OwnQuota is the group's own CFS quota and period in microseconds as the
// kernel holds them (v1 cpu.cfs_quota_us and cpu.cfs_period_us, v2
// cpu.max), quota -1 when the group has none; Quota is what binds, over
// its ancestors too.
func (g *Group) OwnQuota() (quotaUS, periodUS int64, err error) { return g.rawQuotaAt(g.cpu) }

// rawQuotaAt reads the quota files of dir: quota -1 for none; a period
// that is not positive is an error when there is a quota.
func (g *Group) rawQuotaAt(dir string) (q, p int64, err error) {
	if g.Version == 1 {
		qf, pf := filepath.Join(dir, "cpu.cfs_quota_us"), filepath.Join(dir, "cpu.cfs_period_us")
		qs, err := read(qf)
		if err != nil {
			return 0, 0, err
		}
		if q, err = strconv.ParseInt(qs, 10, 64); err != nil {
			return 0, 0, fmt.Errorf("parse %s: %q is not a number of microseconds", qf, qs)
		}
		ps, err := read(pf)
		if err != nil {
			return 0, 0, err
		}
		if p, err = strconv.ParseInt(ps, 10, 64); (err != nil || p <= 0) && q >= 0 {
			return 0, 0, fmt.Errorf("parse %s: %q is not a positive number of microseconds", pf, ps)
		}
		if q < 0 {
			q = -1
		}
		return q, p, nil
	}
	file := filepath.Join(dir, "cpu.max")
	s, err := read(file)
	if err != nil {
		return 0, 0, err
	}
	qs, ps, ok := strings.Cut(s, " ")
	p, err2 := strconv.ParseInt(ps, 10, 64)
	if qs == "max" {
		return -1, p, nil
	}
	q, err1 := strconv.ParseInt(qs, 10, 64)
	if !ok || err1 != nil || err2 != nil || p <= 0 {
		return 0, 0, fmt.Errorf("parse %s: %q is not \"QUOTA PERIOD\" or \"max PERIOD\"", file, s)
	}
	return q, p, nil
}

// ErrNoPSI says the kernel exposes no CPU pressure: neither the cgroup's
// cpu.pressure nor /proc/pressure/cpu exists (CONFIG_PSI off, or psi=0).
var ErrNoPSI = errors.New("CPU pressure (PSI) not available: the kernel has no cpu.pressure or /proc/pressure/cpu (CONFIG_PSI, boot with psi=1)")

// Pressure is the CPU pressure "some" total: how long at least one task was
// runnable but waiting for a CPU. It reads the group's cgroup v2
// cpu.pressure (also on a hybrid host), else the system's
// /proc/pressure/cpu; ErrNoPSI where neither exists.
func (g *Group) Pressure() (time.Duration, error) {
	var files []string
	if g.unified != "" {
		files = append(files, filepath.Join(g.unified, "cpu.pressure"))
	}
	files = append(files, g.procPressure)
	for _, file := range files {
		s, err := read(file)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.EOPNOTSUPP) {
			continue
		}
		if err != nil {
			return 0, err
		}
		return parsePressure(file, s)
	}
	return 0, ErrNoPSI
}

// OwnPressure says whether Pressure reads the group's own cpu.pressure: a
// cgroup v2 group other than the root. Otherwise it reads the whole host's
// pressure, which any busy task raises, not only this group's. Find decides
// it, once.
func (g *Group) OwnPressure() bool { return g.ownPressure }

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// SystemPressure is /proc/pressure/cpu's "some" total, for a process whose
// cgroup cannot be found; ErrNoPSI where it does not exist.
func (f FS) SystemPressure() (time.Duration, error) {
	g := &Group{procPressure: filepath.Join(f.proc(), "pressure", "cpu")}
	return g.Pressure()
}

// parsePressure reads "some avg10=… avg60=… avg300=… total=µs".
func parsePressure(file, s string) (time.Duration, error) {
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "some" {
			continue
		}
		for _, kv := range f[1:] {
			if v, ok := strings.CutPrefix(kv, "total="); ok {
				us, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					break
				}
				return time.Duration(us) * time.Microsecond, nil
			}
		}
	}
	return 0, fmt.Errorf("parse %s: no \"some ... total=N\" line in %q: an unexpected kernel format", file, s)
}

// read returns a cgroup file's trimmed content, with an error that names
// the file and what to do.
func read(file string) (string, error) {
	b, err := os.ReadFile(file)
	switch {
	case err == nil:
		return strings.TrimSpace(string(b)), nil
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("read %s: %w (the cgroup is gone, e.g. its process exited, or its controller is not enabled there)", file, err)
	case errors.Is(err, fs.ErrPermission):
		return "", fmt.Errorf("read %s: %w (run as a user that may read /sys/fs/cgroup)", file, err)
	}
	return "", fmt.Errorf("read %s: %w", file, err)
}
