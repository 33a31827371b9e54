package cc

import (
	"context"
	"fmt"
	"math"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"proxybench/internal/netlab"
	"proxybench/internal/studydata"
	"proxybench/loadgen/internal/study"
)

// rig is the study's lab link, its loss program and iperf3 server, and the
// flows' settings.
type rig struct {
	secs, omit, repeats int // a flow's seconds, the seconds omitted, the repeats
	sndCPUs, rcvCPUs    []int
	clientPin           []string // iperf3 -A of each end (nil: any CPU)
	serverPin           []string
	avail               map[string]bool // congestion controls the kernel offers
	lab                 *netlab.Lab
	drop                *netlab.Dropper
	netemErr            string    // why packets cannot be delayed ("" when they can)
	runnable            []profile // the profiles this kernel can run
	srv                 *exec.Cmd
	closers             []func()
}

// close stops the server and removes the lab, last made first.
func (rg *rig) close() {
	for i := len(rg.closers) - 1; i >= 0; i-- {
		rg.closers[i]()
	}
}

// pin is iperf3's -A for the first of cpus, nil for none.
func pin(cpus []int) []string {
	if len(cpus) == 0 {
		return nil
	}
	return []string{"-A", strconv.Itoa(cpus[0])}
}

// setup removes a crashed study's lab, finds the congestion controls, makes
// the link and its loss program and decides which profiles can run.
func (rg *rig) setup(ctx context.Context, e *study.Env) error {
	r := e.Record()
	stale, err := netlab.CleanStale(prefix)
	if err != nil {
		return fmt.Errorf("remove a crashed study's lab: %w", err)
	}
	if len(stale) > 0 {
		r.Notes = append(r.Notes, "Removed the namespaces a crashed earlier run left: "+strings.Join(stale, ", ")+".")
	}
	avail, na := available()
	rg.avail = avail
	for v, reason := range na {
		r.NA = append(r.NA, studydata.NA{Variant: v, Reason: reason})
	}
	rg.sndCPUs = []int(e.Placement.Loadgen)
	if e.Placement.Separated() {
		rg.rcvCPUs = e.Placement.Proxy
	}
	lab, err := netlab.Up(ctx, netlab.Config{Prefix: prefix, SenderAddr: sender, ReceiverAddr: receiver,
		RateBit: rateBit, Overhead: overhead, SenderCPUs: rg.sndCPUs, ReceiverCPUs: rg.rcvCPUs})
	if err != nil {
		return err
	}
	rg.lab = lab
	rg.closers = append(rg.closers, func() { lab.Close() })
	drop, err := netlab.LoadDropper()
	if err != nil {
		return err
	}
	rg.drop = drop
	rg.closers = append(rg.closers, func() { drop.Close() })
	if err := drop.AttachIngress(lab.Receiver, lab.ReceiverDev); err != nil {
		return err
	}
	rg.netemErr = lab.NetemProbe(ctx)
	groups := make([]studydata.Group, 0, len(profiles))
	for _, p := range profiles {
		g := studydata.Group{Name: p.Name, Label: p.Label, Mechanism: mechanism(p)}
		if p.Delay > 0 && rg.netemErr != "" {
			g.Mechanism = "n/a: no way to delay packets in this kernel"
			r.NA = append(r.NA, studydata.NA{Group: p.Name, Reason: noDelayReason(rg.netemErr)})
		} else {
			rg.runnable = append(rg.runnable, p)
		}
		groups = append(groups, g)
	}
	r.Groups = groups
	rg.clientPin, rg.serverPin = pin(rg.sndCPUs), pin(rg.rcvCPUs)
	return nil
}

// describeMethod writes the record's method.
func (rg *rig) describeMethod(e *study.Env) {
	e.Record().Method = []string{
		fmt.Sprintf("Link: network namespaces %s (sender, %s) and %s (receiver, %s) joined by a veth pair; nothing leaves them.", rg.lab.Sender, sender, rg.lab.Receiver, receiver),
		fmt.Sprintf("Shape: tbf on the sender's egress, %s (the 24 bytes of overhead are Ethernet's preamble, FCS and inter-frame gap, so the payload ceiling is %.1f Mbit/s as on Gigabit Ethernet: 1e9 × %d / %d).", strings.Join(netlab.TBFArgs(rateBit, overhead), " "), lineGoodMb, mss, wireFrame),
		"Packets leave one per segment: TSO off on the sender's veth, so the loss program judges every packet on its own; RPS steers each end's receive processing to one CPU set, so a flow's packets are never reordered between CPU backlogs.",
		"Loss: a TCX eBPF program (cilium/ebpf asm) on the receiver's veth ingress drops a packet when bpf_get_prandom_u32() < round(p × 2^32) and counts every packet it sees and drops in a per-CPU map; it sits at the far end of the wire, so the sender learns of a loss only from the missing ACKs, as on a real link (a drop on the sender's own egress is returned to TCP as a local congestion signal instead).",
		fmt.Sprintf("Flow: one TCP stream, `iperf3 -c %s -t %d -O %d -C <algo> --json` in the sender namespace against `iperf3 -s` in the receiver's; the first %d s (slow start) are omitted from the result.", receiver, rg.secs, rg.omit, rg.omit),
		fmt.Sprintf("Placement: iperf3 client %s, server %s; RPS sender %s, receiver %s.", pinText(rg.clientPin), pinText(rg.serverPin), cpuText(rg.sndCPUs), cpuText(rg.rcvCPUs)),
		fmt.Sprintf("Order: %d repeats, repeat-major (each repeat runs every profile, and within it every congestion control in turn), so slow drifts of the host hit every variant alike.", rg.repeats),
		"Metrics: receiver throughput from iperf3's end.sum_received, the sender's retransmits from end.sum_sent, the drop ratio the BPF program counted over the run, and each iperf3 end's CPU (end.cpu_utilization_percent, of one CPU, kernel time included): near 100 % means the flow was bound by that CPU, not by the link.",
		"Congestion control in effect: read back from the data socket mid-run with `ss -tin` in the sender namespace, and from iperf3's end.sender_tcp_congestion.",
	}
}

// startServer starts iperf3 -s in the receiver namespace and waits until it
// listens.
func (rg *rig) startServer(ctx context.Context) error {
	srv := netlab.Exec(ctx, rg.lab.Receiver, "iperf3", append([]string{"-s", "-B", receiver, "-p", port}, rg.serverPin...)...)
	if err := srv.Start(); err != nil {
		return fmt.Errorf("start iperf3 server: %w", err)
	}
	rg.closers = append(rg.closers, func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	return waitListen(ctx, rg.lab)
}

// readback counts the runs whose socket reported the congestion control
// asked for.
type readback struct {
	ok, n int
	bad   []string
}

// tally is what the checks need from the samples.
type tally struct {
	byGroup   map[string][]netlab.Counters // each run's counts, by profile
	netnsRetr map[string]float64           // the sender namespace's retransmits, by profile
	back      map[string]*readback         // by congestion control
}

// samples runs the repeats, repeat-major: every profile, and within it
// every congestion control in turn.
func (rg *rig) samples(ctx context.Context, e *study.Env) (*tally, error) {
	t := &tally{byGroup: map[string][]netlab.Counters{}, netnsRetr: map[string]float64{}, back: map[string]*readback{}}
	for rep := 1; rep <= rg.repeats; rep++ {
		for _, p := range rg.runnable {
			if _, err := rg.drop.SetLoss(p.Loss); err != nil {
				return nil, err
			}
			if rg.netemErr == "" {
				if err := rg.lab.SetDelay(ctx, p.Delay); err != nil {
					return nil, fmt.Errorf("netem delay: %w", err)
				}
			}
			for _, v := range variants {
				if !rg.avail[v.Name] {
					continue
				}
				if err := rg.sample(ctx, e, t, p, v.Name, rep); err != nil {
					return nil, err
				}
			}
		}
	}
	return t, nil
}

// sample runs one flow of congestion control algo on profile p and adds it.
func (rg *rig) sample(ctx context.Context, e *study.Env, t *tally, p profile, algo string, rep int) error {
	start := time.Now().UTC()
	res, err := once(ctx, rg.lab, rg.drop, algo, rg.secs, rg.omit, rg.clientPin)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	s := studydata.Sample{Group: p.Name, Variant: algo, Repeat: rep, Start: start, End: time.Now().UTC()}
	if err != nil {
		s.Error = err.Error()
	} else {
		s.Values = map[string]float64{"throughput_mbps": res.Mbps, "retransmits": res.Retransmits, "drop_pct": 100 * res.Drops.DropRatio(),
			"sender_cpu_pct": res.SenderCPU, "receiver_cpu_pct": res.ReceiverCPU}
		t.netnsRetr[p.Name] += res.NetnsRetrans
		t.byGroup[p.Name] = append(t.byGroup[p.Name], res.Drops)
		rb := t.back[algo]
		if rb == nil {
			rb = &readback{}
			t.back[algo] = rb
		}
		rb.n++
		if res.SocketCC == algo && res.SenderCC == algo {
			rb.ok++
		} else {
			rb.bad = append(rb.bad, fmt.Sprintf("%s r%d: ss %q, iperf3 %q", p.Name, rep, res.SocketCC, res.SenderCC))
		}
	}
	e.Log.Info("cc sample", "group", p.Name, "variant", algo, "repeat", rep, "mbps", s.Values["throughput_mbps"], "retransmits", s.Values["retransmits"], "drop_pct", s.Values["drop_pct"], "error", s.Error)
	return e.Add(s)
}

// check records the checks: the shape, the congestion control, the loss.
func (t *tally) check(e *study.Env, runnable []profile) error {
	if err := checkShape(e); err != nil {
		return err
	}
	for _, v := range variants {
		rb := t.back[v.Name]
		if rb == nil {
			continue
		}
		detail := fmt.Sprintf("asked %s with iperf3 -C; the data socket reported %s in %d of %d runs (ss -tin in the sender namespace mid-run, and iperf3's end.sender_tcp_congestion)", v.Name, v.Name, rb.ok, rb.n)
		if len(rb.bad) > 0 {
			detail += "; mismatches: " + strings.Join(rb.bad, "; ")
		}
		if err := e.AddCheck("congestion control in effect: "+v.Name, rb.ok == rb.n && rb.n > 0, "%s", detail); err != nil {
			return err
		}
	}
	for _, p := range runnable {
		if err := t.checkLoss(e, p); err != nil {
			return err
		}
	}
	var all netlab.Counters
	for _, runs := range t.byGroup {
		for _, c := range runs {
			all = all.Add(c)
		}
	}
	if all.SeenSkbs > 0 {
		return e.AddCheck("one packet per segment", all.SeenSegs == all.SeenSkbs, "the loss program saw %d buffers holding %d segments (mean %.0f bytes): each drop removes one packet, as a wire loses one frame",
			all.SeenSkbs, all.SeenSegs, float64(all.SeenBytes)/float64(all.SeenSkbs))
	}
	return nil
}

// checkShape records that the clean link carried what a 1 Gbit/s Ethernet
// link carries, no more.
func checkShape(e *study.Env) error {
	r := e.Record()
	var clean []float64
	for _, v := range variants {
		clean = append(clean, r.Values("clean", v.Name, "throughput_mbps")...)
	}
	if len(clean) == 0 {
		return nil
	}
	best := 0.0
	for _, v := range variants {
		if m := mean(r.Values("clean", v.Name, "throughput_mbps")); m > best {
			best = m
		}
	}
	mx := slices.Max(clean)
	ok := mx <= 1000 && best >= 0.85*lineGoodMb
	return e.AddCheck("link shaped to 1 Gbit/s", ok, "clean throughput of every sample <= 1000 Mbit/s (max %.1f) and the best variant's mean %.1f Mbit/s is %.1f %% of the %.1f Mbit/s a 1 Gbit/s Ethernet link carries (want >= 85 %%); %d samples",
		mx, best, 100*best/lineGoodMb, lineGoodMb, len(clean))
}

// checkLoss records that profile p's drop rate is the one asked for and
// that TCP saw every drop as a wire loss.
func (t *tally) checkLoss(e *study.Env, p profile) error {
	runs, ok := t.byGroup[p.Name]
	if !ok {
		return nil
	}
	want := netlab.ThresholdProb(netlab.Threshold(p.Loss))
	est := netlab.EstimateLoss(runs, netlab.Z99, lossDispersion)
	c := est.Total
	pass := est.Lo <= want && want <= est.Hi
	if p.Loss == 0 {
		pass = c.DropSkbs == 0
	}
	if err := e.AddCheck("loss rate: "+p.Name, pass, "the BPF program dropped %d of %d packets = %.4f %% over %d runs (99 %% interval %.4f–%.4f %%: Wilson's, widened by a dispersion of %.2f, the larger of the runs' own and the %.1f measured across separate runs of the program on the real path); the profile's rate is %.4f %%",
		c.DropSkbs, c.SeenSkbs, 100*est.Rate, est.Runs, 100*est.Lo, 100*est.Hi, est.Dispersion, lossDispersion, 100*want); err != nil {
		return err
	}
	if p.Loss == 0 {
		return nil
	}
	retr := t.netnsRetr[p.Name]
	ratio := retr / math.Max(1, float64(c.DropSegs))
	return e.AddCheck("loss seen by TCP as wire loss: "+p.Name, ratio >= 0.9, "the sender namespace's TCP retransmitted %.0f segments (Tcp RetransSegs over whole runs, omitted seconds included) for the %d the program dropped (ratio %.2f, want >= 0.9: every dropped segment must be sent again)",
		retr, c.DropSegs, ratio)
}
