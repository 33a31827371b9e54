package study

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"proxybench/internal/netlab"
	"proxybench/internal/studydata"
)

// The cc study: CUBIC vs BBR vs Reno (set per connection with iperf3 -C)
// over a lab link shaped to 1 Gbit/s, clean, with 1 % loss, and with 50 ms
// delay + 2 % loss where the kernel can delay packets (netem).

func init() { register("cc", runCC) }

// ccProfile is one condition of the link.
type ccProfile struct {
	Name, Label string
	Loss        float64
	Delay       time.Duration
}

var ccProfiles = []ccProfile{
	{Name: "clean", Label: "clean"},
	{Name: "loss1", Label: "1 % loss", Loss: 0.01},
	{Name: "delay50-loss2", Label: "50 ms delay + 2 % loss", Loss: 0.02, Delay: 50 * time.Millisecond},
}

var ccVariants = []studydata.Variant{
	{Name: "cubic", Label: "CUBIC"},
	{Name: "bbr", Label: "BBR"},
	{Name: "reno", Label: "Reno"},
}

// The lab link.
const (
	ccPrefix     = "pbcc-"
	ccSender     = "198.18.0.1" // RFC 2544's benchmarking range, inside the lab's namespaces only
	ccReceiver   = "198.18.0.2"
	ccRateBit    = 1_000_000_000
	ccOverhead   = 24 // Ethernet preamble 8 + FCS 4 + inter-frame gap 12
	ccPort       = "5201"
	ccMSS        = 1448 // 1500 MTU - 20 IP - 20 TCP - 12 timestamps
	ccWireFrame  = 1500 + 14 + ccOverhead
	ccLineGoodMb = ccRateBit / 1e6 * ccMSS / ccWireFrame // 941.5 Mbit/s of TCP payload
)

var ccMetrics = []studydata.Metric{
	{Name: "throughput_mbps", Label: "receiver throughput", Unit: "Mbit/s", Better: "higher"},
	{Name: "retransmits", Label: "sender retransmits", Unit: "segments", Better: "lower"},
	{Name: "drop_pct", Label: "observed drop ratio", Unit: "%"},
	{Name: "sender_cpu_pct", Label: "iperf3 client CPU", Unit: "%"},
	{Name: "receiver_cpu_pct", Label: "iperf3 server CPU", Unit: "%"},
}

// ccRun is what one iperf3 run measured.
type ccRun struct {
	Iperf3Result
	SocketCC string // ss -tin in the sender namespace, mid-run
	Drops    netlab.Counters
	// NetnsRetrans is the sender namespace's TcpRetransSegs over the whole
	// run, the omitted seconds included (as the drop counters are).
	NetnsRetrans float64
}

func runCC(ctx context.Context, e *Env) error {
	for _, tool := range []struct{ bin, pkg string }{{"iperf3", "iperf3"}, {"ip", "iproute2"}, {"tc", "iproute2"}, {"ss", "iproute2"}} {
		if _, err := exec.LookPath(tool.bin); err != nil {
			return fmt.Errorf("the cc study needs %s: apt-get install %s", tool.bin, tool.pkg)
		}
	}
	if os.Geteuid() != 0 {
		return errors.New("the cc study makes network namespaces and loads BPF: run it as root")
	}
	secs, omit, repeats := 10, 2, e.RepeatsOr(3)
	if e.Tiny() {
		// One run per congestion control and profile: the loss check pools
		// the three controls' packets, so the mechanics hold on 3 runs.
		secs, omit, repeats = 1, 1, e.RepeatsOr(1)
	}
	r := e.Record()
	r.Title = "Congestion control under impairment: CUBIC vs BBR vs Reno"
	r.Question = "How much throughput does each congestion control keep on a 1 Gbit/s link that is clean, loses 1 % of packets, or adds 50 ms of delay and loses 2 %?"
	r.Metrics = ccMetrics
	r.Variants = ccVariants
	r.Baseline = "cubic"
	r.Original = ccOriginal()
	r.Notes = append(r.Notes, "Both iperf3 ends and the kernel's per-packet work (TSO off, no GRO: about 81,000 packets/s at the shape) share the host's CPUs with whatever else runs there; a clean throughput short of 941.5 Mbit/s with an end's CPU near 100 % is the host's CPU, not the link: see the link-shape check and the CPU metrics.",
		"A retransmit on a clean link (no BPF drop) is a packet lost in the host itself: a receive backlog overflowing while the receiver's CPU was taken by another process.")

	stale, err := netlab.CleanStale(ccPrefix)
	if err != nil {
		return fmt.Errorf("remove a crashed study's lab: %w", err)
	}
	if len(stale) > 0 {
		r.Notes = append(r.Notes, "Removed the namespaces a crashed earlier run left: "+strings.Join(stale, ", ")+".")
	}
	avail, na := ccAvailable()
	for v, reason := range na {
		r.NA = append(r.NA, studydata.NA{Variant: v, Reason: reason})
	}
	sndCPUs, rcvCPUs := []int(e.Placement.Loadgen), []int(nil)
	if e.Placement.Separated() {
		rcvCPUs = e.Placement.Proxy
	}
	lab, err := netlab.Up(ctx, netlab.Config{Prefix: ccPrefix, SenderAddr: ccSender, ReceiverAddr: ccReceiver,
		RateBit: ccRateBit, Overhead: ccOverhead, SenderCPUs: sndCPUs, ReceiverCPUs: rcvCPUs})
	if err != nil {
		return err
	}
	defer lab.Close()
	drop, err := netlab.LoadDropper()
	if err != nil {
		return err
	}
	defer drop.Close()
	if err := drop.AttachIngress(lab.Receiver, lab.ReceiverDev); err != nil {
		return err
	}
	netemErr := lab.NetemProbe(ctx)
	groups := make([]studydata.Group, 0, len(ccProfiles))
	var runnable []ccProfile
	for _, p := range ccProfiles {
		g := studydata.Group{Name: p.Name, Label: p.Label, Mechanism: ccMechanism(p)}
		if p.Delay > 0 && netemErr != "" {
			g.Mechanism = "n/a: no way to delay packets in this kernel"
			r.NA = append(r.NA, studydata.NA{Group: p.Name, Reason: ccNoDelayReason(netemErr)})
		} else {
			runnable = append(runnable, p)
		}
		groups = append(groups, g)
	}
	r.Groups = groups
	pin := func(cpus []int) []string {
		if len(cpus) == 0 {
			return nil
		}
		return []string{"-A", strconv.Itoa(cpus[0])}
	}
	clientPin, serverPin := pin(sndCPUs), pin(rcvCPUs)
	r.Method = []string{
		fmt.Sprintf("Link: network namespaces %s (sender, %s) and %s (receiver, %s) joined by a veth pair; nothing leaves them.", lab.Sender, ccSender, lab.Receiver, ccReceiver),
		fmt.Sprintf("Shape: tbf on the sender's egress, %s (the 24 bytes of overhead are Ethernet's preamble, FCS and inter-frame gap, so the payload ceiling is %.1f Mbit/s as on Gigabit Ethernet: 1e9 × %d / %d).", strings.Join(netlab.TBFArgs(ccRateBit, ccOverhead), " "), ccLineGoodMb, ccMSS, ccWireFrame),
		"Packets leave one per segment: TSO off on the sender's veth, so the loss program judges every packet on its own; RPS steers each end's receive processing to one CPU set, so a flow's packets are never reordered between CPU backlogs.",
		"Loss: a TCX eBPF program (cilium/ebpf asm) on the receiver's veth ingress drops a packet when bpf_get_prandom_u32() < round(p × 2^32) and counts every packet it sees and drops in a per-CPU map; it sits at the far end of the wire, so the sender learns of a loss only from the missing ACKs, as on a real link (a drop on the sender's own egress is returned to TCP as a local congestion signal instead).",
		fmt.Sprintf("Flow: one TCP stream, `iperf3 -c %s -t %d -O %d -C <algo> --json` in the sender namespace against `iperf3 -s` in the receiver's; the first %d s (slow start) are omitted from the result.", ccReceiver, secs, omit, omit),
		fmt.Sprintf("Placement: iperf3 client %s, server %s; RPS sender %s, receiver %s.", ccPinText(clientPin), ccPinText(serverPin), ccCPUText(sndCPUs), ccCPUText(rcvCPUs)),
		fmt.Sprintf("Order: %d repeats, repeat-major (each repeat runs every profile, and within it every congestion control in turn), so slow drifts of the host hit every variant alike.", repeats),
		"Metrics: receiver throughput from iperf3's end.sum_received, the sender's retransmits from end.sum_sent, the drop ratio the BPF program counted over the run, and each iperf3 end's CPU (end.cpu_utilization_percent, of one CPU, kernel time included): near 100 % means the flow was bound by that CPU, not by the link.",
		"Congestion control in effect: read back from the data socket mid-run with `ss -tin` in the sender namespace, and from iperf3's end.sender_tcp_congestion.",
	}
	if err := e.Save(); err != nil {
		return err
	}

	srv := netlab.Exec(ctx, lab.Receiver, "iperf3", append([]string{"-s", "-B", ccReceiver, "-p", ccPort}, serverPin...)...)
	if err := srv.Start(); err != nil {
		return fmt.Errorf("start iperf3 server: %w", err)
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	if err := ccWaitListen(ctx, lab); err != nil {
		return err
	}

	byGroup := map[string][]netlab.Counters{} // each run's counts, by profile
	netnsRetr := map[string]float64{}
	type readback struct {
		ok, n int
		bad   []string
	}
	ccBack := map[string]*readback{}
	for rep := 1; rep <= repeats; rep++ {
		for _, p := range runnable {
			exact, err := drop.SetLoss(p.Loss)
			if err != nil {
				return err
			}
			_ = exact
			if netemErr == "" {
				if err := lab.SetDelay(ctx, p.Delay); err != nil {
					return fmt.Errorf("netem delay: %w", err)
				}
			}
			for _, v := range ccVariants {
				if !avail[v.Name] {
					continue
				}
				start := time.Now().UTC()
				res, err := ccOnce(ctx, lab, drop, v.Name, secs, omit, clientPin)
				if ctx.Err() != nil {
					return ctx.Err()
				}
				s := studydata.Sample{Group: p.Name, Variant: v.Name, Repeat: rep, Start: start, End: time.Now().UTC()}
				if err != nil {
					s.Error = err.Error()
				} else {
					s.Values = map[string]float64{"throughput_mbps": res.Mbps, "retransmits": res.Retransmits, "drop_pct": 100 * res.Drops.DropRatio(),
						"sender_cpu_pct": res.SenderCPU, "receiver_cpu_pct": res.ReceiverCPU}
					netnsRetr[p.Name] += res.NetnsRetrans
					byGroup[p.Name] = append(byGroup[p.Name], res.Drops)
					rb := ccBack[v.Name]
					if rb == nil {
						rb = &readback{}
						ccBack[v.Name] = rb
					}
					rb.n++
					if res.SocketCC == v.Name && res.SenderCC == v.Name {
						rb.ok++
					} else {
						rb.bad = append(rb.bad, fmt.Sprintf("%s r%d: ss %q, iperf3 %q", p.Name, rep, res.SocketCC, res.SenderCC))
					}
				}
				e.Log.Info("cc sample", "group", p.Name, "variant", v.Name, "repeat", rep, "mbps", s.Values["throughput_mbps"], "retransmits", s.Values["retransmits"], "drop_pct", s.Values["drop_pct"], "error", s.Error)
				if err := e.Add(s); err != nil {
					return err
				}
			}
		}
	}

	// Checks: the shape, the congestion control, the loss.
	var clean []float64
	for _, v := range ccVariants {
		clean = append(clean, r.Values("clean", v.Name, "throughput_mbps")...)
	}
	if len(clean) > 0 {
		best := 0.0
		for _, v := range ccVariants {
			if m := ccMean(r.Values("clean", v.Name, "throughput_mbps")); m > best {
				best = m
			}
		}
		mx := slices.Max(clean)
		ok := mx <= 1000 && best >= 0.85*ccLineGoodMb
		if err := e.AddCheck("link shaped to 1 Gbit/s", ok, "clean throughput of every sample <= 1000 Mbit/s (max %.1f) and the best variant's mean %.1f Mbit/s is %.1f %% of the %.1f Mbit/s a 1 Gbit/s Ethernet link carries (want >= 85 %%); %d samples",
			mx, best, 100*best/ccLineGoodMb, ccLineGoodMb, len(clean)); err != nil {
			return err
		}
	}
	for _, v := range ccVariants {
		rb := ccBack[v.Name]
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
		runs, ok := byGroup[p.Name]
		if !ok {
			continue
		}
		want := netlab.ThresholdProb(netlab.Threshold(p.Loss))
		est := netlab.EstimateLoss(runs, netlab.Z99, ccLossDispersion)
		c := est.Total
		pass := est.Lo <= want && want <= est.Hi
		if p.Loss == 0 {
			pass = c.DropSkbs == 0
		}
		if err := e.AddCheck("loss rate: "+p.Name, pass, "the BPF program dropped %d of %d packets = %.4f %% over %d runs (99 %% interval %.4f–%.4f %%: Wilson's, widened by a dispersion of %.2f, the larger of the runs' own and the %.1f measured across separate runs of the program on the real path); the profile's rate is %.4f %%",
			c.DropSkbs, c.SeenSkbs, 100*est.Rate, est.Runs, 100*est.Lo, 100*est.Hi, est.Dispersion, ccLossDispersion, 100*want); err != nil {
			return err
		}
		if p.Loss > 0 {
			retr := netnsRetr[p.Name]
			ratio := retr / math.Max(1, float64(c.DropSegs))
			if err := e.AddCheck("loss seen by TCP as wire loss: "+p.Name, ratio >= 0.9, "the sender namespace's TCP retransmitted %.0f segments (Tcp RetransSegs over whole runs, omitted seconds included) for the %d the program dropped (ratio %.2f, want >= 0.9: every dropped segment must be sent again)",
				retr, c.DropSegs, ratio); err != nil {
				return err
			}
		}
	}
	var all netlab.Counters
	for _, runs := range byGroup {
		for _, c := range runs {
			all = all.Add(c)
		}
	}
	if all.SeenSkbs > 0 {
		if err := e.AddCheck("one packet per segment", all.SeenSegs == all.SeenSkbs, "the loss program saw %d buffers holding %d segments (mean %.0f bytes): each drop removes one packet, as a wire loses one frame",
			all.SeenSkbs, all.SeenSegs, float64(all.SeenBytes)/float64(all.SeenSkbs)); err != nil {
			return err
		}
	}
	return e.Save()
}

// ccLossDispersion is the spread of the drop program's per-run drop counts
// on the real path, as a multiple of the binomial variance: over 14 runs of
// 1.5-3.4 M packets each (UDP and TCP, separate labs and one lab, on a
// 2-core host) the runs lay 2.06 binomial standard deviations from 1 %
// (RMS; from -3.3 to +2.7), while 100 ms batches within a run were binomial
// (0.8-1.2) and the program under BPF test runs too. The runs of one study
// can share such an offset (a tiny study's three runs: 0.92-0.95 %), so
// their own dispersion misses it. Its cause is not known.
const ccLossDispersion = 4.2

// ccOnce runs one iperf3 flow with congestion control algo and reads the
// socket's congestion control mid-run.
func ccOnce(ctx context.Context, lab *netlab.Lab, drop *netlab.Dropper, algo string, secs, omit int, pin []string) (ccRun, error) {
	var res ccRun
	before, err := drop.Counters()
	if err != nil {
		return res, err
	}
	retrBefore, err := ccRetransSegs(ctx, lab)
	if err != nil {
		return res, err
	}
	rctx, cancel := context.WithTimeout(ctx, time.Duration(secs+omit+20)*time.Second)
	defer cancel()
	args := append([]string{"-c", ccReceiver, "-p", ccPort, "-t", strconv.Itoa(secs), "-O", strconv.Itoa(omit), "-C", algo, "--json"}, pin...)
	cmd := netlab.Exec(rctx, lab.Sender, "iperf3", args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("start iperf3: %w", err)
	}
	// Mid-run: the data socket's congestion control, from the kernel.
	select {
	case <-time.After(time.Duration(omit*1000+secs*500) * time.Millisecond):
		ssOut, err := lab.Run(rctx, lab.Sender, "ss", "-tinH", "state", "established", "dst", ccReceiver)
		if err == nil {
			res.SocketCC = ParseSSCongestion(ssOut)
		}
	case <-rctx.Done():
	}
	werr := cmd.Wait()
	after, err := drop.Counters()
	if err != nil {
		return res, err
	}
	res.Drops = after.Sub(before)
	retrAfter, err := ccRetransSegs(ctx, lab)
	if err != nil {
		return res, err
	}
	res.NetnsRetrans = retrAfter - retrBefore
	ir, perr := ParseIperf3(out.String())
	if werr != nil || perr != nil {
		return res, fmt.Errorf("iperf3 -C %s: %v %v: %s", algo, werr, perr, strings.TrimSpace(errb.String()))
	}
	res.Iperf3Result = ir
	return res, nil
}
