package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"proxybench/internal/cgroup"
	"proxybench/internal/cputime"
	"proxybench/internal/dockerx"
	"proxybench/internal/manifest"
	"proxybench/loadgen/internal/selfcpu"
)

// originService is the compose service of an origin: origin-<name>.
const originService = "origin-"

// originContainer is the running container of the cell's origin; nil
// without Docker or when it cannot be found (its role is then left out of
// the cell's contention).
func (r *Runner) originContainer(ctx context.Context, origin string) *dockerx.Container {
	if r.Docker == nil {
		return nil
	}
	ctr, err := r.Docker.Service(ctx, r.Plan.Project, originService+origin)
	if err != nil || !ctr.Running {
		r.Log.Debug("origin's CPU contention not read: no running container", "origin", origin, "err", err)
		return nil
	}
	return &ctr
}

// contention reads, at a cell's two window edges, what the loadgen, the
// proxy's container and the origin's container each got of their CPUs
// (manifest.Contention): /proc/stat for the busy and steal time of every
// CPU, and for each container its cgroup's usage, throttling and pressure
// and the run-queue wait of every thread in it. The loadgen's own readings
// are its selfcpu snapshots, taken at the same edges. Everything that can
// be resolved (cgroups, cpusets) is resolved before the window, so an edge
// only reads counters. They are a few files per container and one per
// thread (a threaded origin holds a hundred and more, some 25 µs each on
// a small VM), so each edge reads them on a goroutine of its own rather
// than hold up the engine: the readings land within milliseconds of the
// edge, the same lag at both, and the window between them is measured.
type contention struct {
	proc        string           // /proc
	done        [2]chan struct{} // closed when edge i's readings are taken
	loadgenCPUs []int
	loadgenNote string // why loadgenCPUs is unknown
	ctrs        []*ctrRole
	at          [2]time.Time
	stat        [2]cputime.Stat
	statErr     [2]error
}

// ctrRole is one container's role in the cell.
type ctrRole struct {
	role, name string
	cpus       []int
	notes      []string // what set-up could not resolve
	g          *cgroup.Group
	wait       *cputime.Wait
	read       [2]ctrRead
}

type ctrRead struct {
	usage           time.Duration
	usageErr        error
	thr             cgroup.Throttling
	thrErr          error
	wait            time.Duration
	threads, exited int
	waitErr         error
	psi             time.Duration
	psiErr          error
}

// newContention resolves each role's cgroup and CPUs; a container without
// a readable cgroup is left out (logged at debug).
func newContention(proxy, origin *dockerx.Container, log *slog.Logger) *contention {
	c := &contention{proc: procRoot, done: [2]chan struct{}{make(chan struct{}), make(chan struct{})}}
	if cpus, err := cputime.Affinity(0); err == nil {
		c.loadgenCPUs = cpus
	} else {
		c.loadgenNote = fmt.Sprintf("cpus: the loadgen's affinity mask: %v", err)
	}
	for _, r := range []struct {
		role string
		ctr  *dockerx.Container
	}{{manifest.RoleProxy, proxy}, {manifest.RoleOrigin, origin}} {
		if r.ctr == nil || r.ctr.Pid <= 0 {
			continue
		}
		g, err := cgroup.Of(r.ctr.Pid)
		if err != nil {
			log.Debug("CPU contention not read: the container's cgroup cannot be found", "role", r.role, "container", r.ctr.Name, "err", err)
			continue
		}
		cr := &ctrRole{role: r.role, name: r.ctr.Name, g: g, wait: cputime.NewWait()}
		cr.cpus, err = containerCPUs(g, r.ctr.Pid)
		if err != nil {
			cr.notes = append(cr.notes, "cpus: "+err.Error())
		}
		c.ctrs = append(c.ctrs, cr)
	}
	return c
}

// containerCPUs is the container's effective cpuset, else the affinity
// mask of its main process, which the cpuset bounds.
func containerCPUs(g *cgroup.Group, pid int) ([]int, error) {
	s, err := g.CPUs()
	if err == nil {
		return cputime.ParseList(s)
	}
	cpus, aerr := cputime.Affinity(pid)
	if aerr != nil {
		return nil, fmt.Errorf("cpuset: %v; affinity of pid %d: %v", err, pid, aerr)
	}
	return cpus, nil
}

// start takes edge i's readings (0 start, 1 end) on a goroutine: the end
// edge's after the start edge's. Each edge starts once.
func (c *contention) start(i int) {
	go func() {
		defer close(c.done[i])
		if i == 1 {
			<-c.done[0]
		}
		c.read(i)
	}()
}

// wait is until both edges' readings are taken.
func (c *contention) wait() { <-c.done[0]; <-c.done[1] }

// read takes edge i's readings now.
func (c *contention) read(i int) {
	c.at[i] = time.Now()
	c.stat[i], c.statErr[i] = cputime.ReadStat(c.proc)
	for _, r := range c.ctrs {
		rd := &r.read[i]
		rd.usage, rd.usageErr = r.g.Usage()
		rd.thr, rd.thrErr = r.g.Throttling()
		var tids []int
		if tids, rd.waitErr = r.g.Threads(); rd.waitErr == nil {
			rd.waitErr = r.wait.ReadThreads(c.proc, tids)
		}
		rd.wait, rd.threads, rd.exited = r.wait.Total(), r.wait.Threads(), r.wait.Exited()
		rd.psi, rd.psiErr = r.g.Pressure()
	}
}

// record is the window's account, both edges read (wait first when they
// were started); self holds the loadgen's snapshots at the same edges.
func (c *contention) record(self [2]selfcpu.Snapshot) *manifest.Contention {
	window := c.at[1].Sub(c.at[0])
	out := &manifest.Contention{WindowSeconds: window.Seconds()}
	cpus := [][]int{c.loadgenCPUs}
	out.Roles = append(out.Roles, self[1].Role(self[0], c.loadgenCPUs, c.loadgenNote))
	for _, r := range c.ctrs {
		rc, ok := r.account()
		if !ok {
			continue
		}
		out.Roles = append(out.Roles, rc)
		cpus = append(cpus, r.cpus)
	}
	statErr := errors.Join(c.statErr[0], c.statErr[1])
	for i := range out.Roles {
		rc := &out.Roles[i]
		if statErr != nil {
			rc.Unread = append(rc.Unread, "busy and steal: "+statErr.Error())
			continue
		}
		if len(cpus[i]) == 0 {
			continue // its CPUs are unknown: noted above
		}
		t, err := c.stat[1].Since(c.stat[0], cpus[i])
		if err != nil {
			rc.Unread = append(rc.Unread, "busy and steal: "+err.Error())
			continue
		}
		busy := t.Busy().Seconds()
		rc.BusySeconds, rc.StealSeconds = &busy, secs(t.Steal)
	}
	attribute(out.Roles)
	return out
}

// attribute sets every role's co-tenants and foreign time from its CPUs'
// busy time: the other roles on the same host (Host) whose CPUs all lie
// inside its own share them by design, their CPU is the cell's own work;
// foreign = max(0, busy - own - co-tenants). A role whose busy time or CPUs
// are unknown gets neither. It may be called again once more roles (the
// loadgen workers') are added.
func attribute(roles []manifest.RoleContention) {
	cpus := make([][]int, len(roles))
	for i, r := range roles {
		if r.CPUs != "" {
			cpus[i], _ = cputime.ParseList(r.CPUs)
		}
	}
	for i := range roles {
		rc := &roles[i]
		if rc.BusySeconds == nil || len(cpus[i]) == 0 {
			continue
		}
		rc.CoTenantSeconds, rc.CoTenants = 0, nil
		for j, o := range roles {
			if j != i && len(cpus[j]) > 0 && o.Host == rc.Host && cputime.Subset(cpus[j], cpus[i]) {
				rc.CoTenantSeconds += o.CPUSeconds
				rc.CoTenants = append(rc.CoTenants, o.Name())
			}
		}
		rc.ForeignSeconds = fptr(max(0, *rc.BusySeconds-rc.CPUSeconds-rc.CoTenantSeconds))
	}
}

// account is a container's readings over the window; ok is false when
// its CPU usage was not read at both edges (the container stopped).
func (r *ctrRole) account() (manifest.RoleContention, bool) {
	a, b := r.read[0], r.read[1]
	if a.usageErr != nil || b.usageErr != nil {
		return manifest.RoleContention{}, false
	}
	rc := manifest.RoleContention{Role: r.role, Container: r.name, CPUs: cputime.FormatList(r.cpus),
		CPUSeconds: (b.usage - a.usage).Seconds(), Unread: slices.Clone(r.notes)}
	if err := errors.Join(a.thrErr, b.thrErr); err != nil {
		rc.Unread = append(rc.Unread, "throttling: "+err.Error())
	} else {
		rc.Throttling = &manifest.Throttling{Periods: b.thr.Periods - a.thr.Periods, ThrottledPeriods: b.thr.Throttled - a.thr.Throttled,
			ThrottledSeconds: (b.thr.ThrottledTime - a.thr.ThrottledTime).Seconds()}
	}
	if err := errors.Join(a.waitErr, b.waitErr); err != nil {
		rc.Unread = append(rc.Unread, "run delay: "+err.Error())
	} else {
		rc.RunDelaySeconds, rc.Threads, rc.ThreadsExited = secs(b.wait-a.wait), b.threads, b.exited-a.exited
	}
	switch err := errors.Join(a.psiErr, b.psiErr); {
	case errors.Is(err, cgroup.ErrNoPSI):
	case err != nil:
		rc.Unread = append(rc.Unread, "pressure: "+err.Error())
	default:
		rc.PressureSeconds, rc.PressureScope = secs(b.psi-a.psi), manifest.PressureHost
		if r.g.OwnPressure() {
			rc.PressureScope = manifest.PressureCgroup
		}
	}
	return rc, true
}

func secs(d time.Duration) *float64 { return fptr(d.Seconds()) }

func fptr(f float64) *float64 { return &f }
