package runner

import (
	"errors"
	"log/slog"
	"time"

	"proxybench/internal/cgroup"
	"proxybench/internal/dockerx"
	"proxybench/internal/manifest"
	"proxybench/loadgen/internal/selfcpu"
)

// edges reads the CPU counters at a cell's two window edges: the loadgen's
// own (selfcpu), the proxy container's cgroup usage and what each role got
// of its CPUs (contention). The engine calls
// on at each edge of the attack (a mix's variants are joined into one pair
// by joinEdges); only the first call of each edge reads, any repeat is
// ignored.
type edges struct {
	self  *selfcpu.Collector
	proxy *cgroup.Group // nil: the proxy's CPU is not read
	cont  *contention
	log   *slog.Logger

	once selfcpu.Edges
	read [2]edgeRead // start, end
}

type edgeRead struct {
	self     selfcpu.Snapshot
	proxy    time.Duration
	proxyErr error
}

// newEdges finds the proxy's and the origin's cgroups now, before the
// window, so that the edges only read counters. origin may be nil.
func newEdges(self *selfcpu.Collector, ctr, origin *dockerx.Container, log *slog.Logger) *edges {
	e := &edges{self: self, log: log, cont: newContention(ctr, origin, log)}
	switch {
	case ctr == nil:
		log.Debug("proxy CPU not read: no container")
	case ctr.Pid <= 0:
		log.Debug("proxy CPU not read: the container has no main process", "container", ctr.Name)
	default:
		g, err := cgroup.Of(ctr.Pid)
		if err != nil {
			log.Debug("proxy CPU not read: its cgroup cannot be found", "container", ctr.Name, "pid", ctr.Pid, "err", err)
			break
		}
		e.proxy = g
	}
	return e
}

// on is the attack's Spec.OnEdge.
func (e *edges) on(end bool, _ time.Time) {
	e.once.Take(end, func(i int) {
		r := &e.read[i]
		r.self = e.self.Snapshot()
		if e.proxy != nil {
			r.proxy, r.proxyErr = e.proxy.Usage()
		}
		e.cont.start(i)
	})
}

// record puts the window's CPU use into the manifest cell: nothing when
// an edge was never reached (the cell stopped before its window).
func (e *edges) record(mc *manifest.Cell) {
	var start, end edgeRead
	both := false
	e.once.Both(func(b bool) { both, start, end = b, e.read[0], e.read[1] })
	if !both {
		return
	}
	lg := end.self.Since(start.self)
	mc.Loadgen = &lg
	e.cont.wait()
	mc.Contention = e.cont.record([2]selfcpu.Snapshot{start.self, end.self})
	if e.proxy == nil {
		return
	}
	if err := errors.Join(start.proxyErr, end.proxyErr); err != nil {
		e.log.Debug("proxy CPU not read: its cgroup is unreadable", "cell", mc.ID, "err", err)
		return
	}
	s := (end.proxy - start.proxy).Seconds()
	mc.ProxyCPUSeconds = &s
}
