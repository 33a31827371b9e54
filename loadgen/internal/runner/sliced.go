package runner

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	"proxybench/internal/cellid"
	"proxybench/internal/cgroup"
	"proxybench/internal/dockerx"
	"proxybench/internal/manifest"
	"proxybench/internal/scenario"
	"proxybench/loadgen/internal/attack"
	"proxybench/loadgen/internal/plan"
)

// A sliced duet (plan duet_slice) measures a pair's two arms in one
// window of both cells' length: the proxy's CPU quota switches between the
// baseline's and the candidate's every slice, in ABBA order (the pair's
// first cell's arm first), so that both arms see the same seconds of the
// host. The host's slow swings of speed, which make a proxy's CPU per
// request wander by tens of percent over tens of seconds on a shared VM,
// then fall on both arms alike, and a pair's difference is left with the
// noise of a second rather than of the pair's whole span. After each
// slice's switch (one Docker API call) a guard of plan.SliceGuard is left
// out; a request counts for its slice only when it was sent after the
// guard and answered before the slice ends (attack.Splitter), and the
// proxy's cgroup CPU is read at the same two moments. Each arm's manifest
// cell holds its own slices' counts, latencies and CPU (manifest.Slices);
// the window, its contention and the loadgen's CPU are the pair's.
type slicer struct {
	slice, guard time.Duration
	n            int      // slices in the window
	first        int      // the part (0 baseline, 1 candidate) of slice 0
	quotas       [2]int64 // each part's CPU quota, nano-CPUs
	q            Quota
	ctr          *dockerx.Container
	cpu          *cgroup.Group // nil: the proxy's CPU is not read

	start atomic.Int64   // the window's start, unix ns; 0 until it began
	from  []atomic.Int64 // slice k's counted part begins, unix ns; 0 until then
	done  chan struct{}

	// Written by run, read after done: each slice's counted part (its
	// start and length; zero length when it was not counted) and the
	// proxy's CPU over it.
	at        []time.Time
	measured  []time.Duration
	cpuUsed   []time.Duration
	switchMax time.Duration
	cpuErr    error
	setErr    error
	res       *attack.Result // the window's, with its parts (runCell)
}

// part is the arm of slice k: ABBA from first.
func (s *slicer) part(k int) int {
	if p := k % 4; p == 0 || p == 3 {
		return s.first
	}
	return 1 - s.first
}

// Parts implements attack.Splitter: the slices.
func (s *slicer) Parts() int { return s.n }

// Groups implements attack.Splitter: the arms.
func (s *slicer) Groups() int { return 2 }

// Group implements attack.Splitter.
func (s *slicer) Group(k int) int { return s.part(k) }

// Part implements attack.Splitter.
func (s *slicer) Part(sent, done time.Time) int {
	st := s.start.Load()
	if st == 0 {
		return -1
	}
	k := int(sent.UnixNano()-st) / int(s.slice)
	if sent.UnixNano() < st || k >= s.n {
		return -1
	}
	if f := s.from[k].Load(); f == 0 || sent.UnixNano() < f {
		return -1
	}
	if done.UnixNano() >= st+int64(k+1)*int64(s.slice) {
		return -1
	}
	return k
}

// begin is called at the window's start edge: it starts switching.
func (s *slicer) begin(ctx context.Context, at time.Time) {
	if !s.start.CompareAndSwap(0, at.UnixNano()) {
		return
	}
	go s.run(ctx, at)
}

// run switches the quota at every slice's start and reads the proxy's CPU
// at each counted part's two ends.
func (s *slicer) run(ctx context.Context, st time.Time) {
	defer close(s.done)
	usage := func() time.Duration {
		if s.cpu == nil {
			return 0
		}
		u, err := s.cpu.Usage()
		if err != nil && s.cpuErr == nil {
			s.cpuErr = err
		}
		return u
	}
	cur := -1
	for k := range s.n {
		sleepUntil(ctx, st.Add(time.Duration(k)*s.slice))
		if ctx.Err() != nil {
			return
		}
		p := s.part(k)
		t0 := time.Now()
		if p != cur {
			if err := s.q.SetNanoCPUs(ctx, s.ctr.ID, s.quotas[p]); err != nil {
				s.setErr = err
				return
			}
			cur = p
		}
		s.switchMax = max(s.switchMax, time.Since(t0))
		sleepUntil(ctx, time.Now().Add(s.guard))
		u0, f := usage(), time.Now()
		s.from[k].Store(f.UnixNano())
		end := st.Add(time.Duration(k+1) * s.slice)
		sleepUntil(ctx, end)
		if ctx.Err() != nil {
			return
		}
		u1 := usage()
		if f.Before(end) {
			s.at[k], s.measured[k], s.cpuUsed[k] = f, end.Sub(f), u1-u0
		}
	}
}

func sleepUntil(ctx context.Context, t time.Time) {
	d := time.Until(t)
	if d <= 0 {
		return
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
	case <-tm.C:
	}
}

// armCell is the manifest cell of part p of a sliced pair: the window's
// record mc with this arm's identity and its own slices' account.
func (s *slicer) armCell(mc manifest.Cell, c plan.Cell, res *attack.Result, p int) manifest.Cell {
	out := mc
	out.Key, out.DurationS = c.Key, time.Duration(c.Duration).Seconds()
	out.Requests, out.Errors = 0, 0
	out.Codes, out.ErrorReasons = map[string]int64{}, map[string]int64{}
	sl := &manifest.Slices{SliceS: s.slice.Seconds(), GuardS: s.guard.Seconds(), SwitchMaxS: s.switchMax.Seconds()}
	var cpu time.Duration
	for k := range s.n {
		if s.part(k) != p || s.measured[k] <= 0 || k >= len(res.Parts) {
			continue
		}
		part := res.Parts[k]
		e := manifest.Slice{At: s.at[k], MeasuredS: s.measured[k].Seconds(), Requests: part.Requests, Errors: part.Errors}
		for code, n := range part.Codes {
			out.Codes[strconv.Itoa(code)] += n
			if scenario.Matches(strconv.Itoa(code), out.Expected) {
				e.Good += n
			}
		}
		for r, n := range part.ErrorReasons {
			out.ErrorReasons[r] += n
		}
		if s.cpu != nil && s.cpuErr == nil {
			v := s.cpuUsed[k].Seconds()
			e.CPUS = &v
		}
		out.Requests += part.Requests
		out.Errors += part.Errors
		cpu += s.cpuUsed[k]
		sl.MeasuredS += e.MeasuredS
		sl.Count++
		sl.Each = append(sl.Each, e)
	}
	if p < len(res.GroupHists) {
		out.Latency = manifest.LatencyOf(res.GroupHists[p])
	}
	out.ProxyCPUSeconds = nil
	if s.cpu != nil && s.cpuErr == nil {
		v := cpu.Seconds()
		out.ProxyCPUSeconds = &v
	}
	out.Slices = sl
	return out
}

// partOf is the part of a pair's cell: 0 the baseline, 1 the candidate.
func partOf(c plan.Cell) int {
	if c.Arm == cellid.ArmCandidate {
		return 1
	}
	return 0
}

// runPair measures a sliced duet's pair a, b (adjacent cells of one key
// and repeat, a first) in one window on the proxy's container ctr, and
// puts the baseline's quota back after it.
func (r *Runner) runPair(ctx context.Context, n int, a, b plan.Cell, ctr *dockerx.Container) (ma, mb manifest.Cell, died string) {
	skip := func(reason string) (manifest.Cell, manifest.Cell, string) {
		s := &manifest.Skip{Kind: manifest.SkipArm, Reason: "not run: " + reason}
		return r.skipped(a, s), r.skipped(b, s), ""
	}
	q, ok := r.Docker.(Quota)
	if r.Docker == nil || ctr == nil || !ok {
		return skip("a sliced duet sets the proxy's CPU quota: run with Docker")
	}
	was, err := q.NanoCPUs(ctx, ctr.ID)
	if err != nil {
		return skip("read the proxy's CPU quota: " + err.Error())
	}
	n2 := int(2 * time.Duration(a.Duration) / time.Duration(r.Plan.DuetSlice))
	sl := &slicer{slice: time.Duration(r.Plan.DuetSlice), guard: plan.SliceGuard, n: n2, first: partOf(a),
		q: q, ctr: ctr, from: make([]atomic.Int64, n2), done: make(chan struct{}),
		at: make([]time.Time, n2), measured: make([]time.Duration, n2), cpuUsed: make([]time.Duration, n2)}
	sl.quotas[0], sl.quotas[1] = was, dockerx.Cores(r.Plan.DuetCPUs)
	if ctr.Pid > 0 {
		if g, err := cgroup.Of(ctr.Pid); err == nil {
			sl.cpu = g
		}
	}
	lb := r.labels(b)
	r.Cells.Begin(lb, r.Clock.Now(), b.Concurrency, b.Rate)
	mc, died := r.runCell(ctx, n, a, ctr, sl)
	if sl.start.Load() != 0 {
		<-sl.done
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := q.SetNanoCPUs(rctx, ctr.ID, was); err != nil {
		r.Log.Error("sliced duet: the baseline's quota could not be put back", "container", ctr.Name, "err", err)
	}
	if mc.Status == manifest.CellOK && sl.setErr != nil {
		mc.Status, mc.Reason = manifest.CellFailed, "sliced duet: set the quota: "+sl.setErr.Error()
	}
	ma, mb = mc, mc
	mb.Key = b.Key
	if mc.Status == manifest.CellOK && sl.res != nil {
		ma = sl.armCell(mc, a, sl.res, partOf(a))
		mb = sl.armCell(mc, b, sl.res, partOf(b))
	}
	r.Cells.End(lb, mb.Start, mb.End, mb.Status != manifest.CellOK)
	for _, x := range []manifest.Cell{ma, mb} {
		r.Cells.Used(r.labels(plan.Cell{Key: x.Key}), x.End, cellUsage(&x))
	}
	return ma, mb, died
}
