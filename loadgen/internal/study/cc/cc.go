// Package cc is the cc study (`loadgen study -study cc`): CUBIC vs BBR vs
// Reno (set per connection with iperf3 -C) over a lab link shaped to
// 1 Gbit/s (internal/netlab), clean, with 1 % loss, and with 50 ms delay +
// 2 % loss where the kernel can delay packets (netem). It owns the link's
// profiles, the iperf3 flows and their parsing, and the checks of shape,
// congestion control and loss.
package cc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"proxybench/internal/netlab"
	"proxybench/internal/studydata"
	"proxybench/loadgen/internal/study"
)

// Study is the cc study.
var Study = study.Study{Name: "cc", Run: run}

// profile is one condition of the link.
type profile struct {
	Name, Label string
	Loss        float64
	Delay       time.Duration
}

var profiles = []profile{
	{Name: "clean", Label: "clean"},
	{Name: "loss1", Label: "1 % loss", Loss: 0.01},
	{Name: "delay50-loss2", Label: "50 ms delay + 2 % loss", Loss: 0.02, Delay: 50 * time.Millisecond},
}

var variants = []studydata.Variant{
	{Name: "cubic", Label: "CUBIC"},
	{Name: "bbr", Label: "BBR"},
	{Name: "reno", Label: "Reno"},
}

// The lab link.
const (
	prefix     = "pbcc-"
	sender     = "198.18.0.1" // RFC 2544's benchmarking range, inside the lab's namespaces only
	receiver   = "198.18.0.2"
	rateBit    = 1_000_000_000
	overhead   = 24 // Ethernet preamble 8 + FCS 4 + inter-frame gap 12
	port       = "5201"
	mss        = 1448 // 1500 MTU - 20 IP - 20 TCP - 12 timestamps
	wireFrame  = 1500 + 14 + overhead
	lineGoodMb = rateBit / 1e6 * mss / wireFrame // 941.5 Mbit/s of TCP payload
)

var metrics = []studydata.Metric{
	{Name: "throughput_mbps", Label: "receiver throughput", Unit: "Mbit/s", Better: "higher"},
	{Name: "retransmits", Label: "sender retransmits", Unit: "segments", Better: "lower"},
	{Name: "drop_pct", Label: "observed drop ratio", Unit: "%"},
	{Name: "sender_cpu_pct", Label: "iperf3 client CPU", Unit: "%"},
	{Name: "receiver_cpu_pct", Label: "iperf3 server CPU", Unit: "%"},
}

// iperfRun is what one iperf3 run measured.
type iperfRun struct {
	Iperf3Result
	SocketCC string // ss -tin in the sender namespace, mid-run
	Drops    netlab.Counters
	// NetnsRetrans is the sender namespace's TcpRetransSegs over the whole
	// run, the omitted seconds included (as the drop counters are).
	NetnsRetrans float64
}

// run is the study: the tools checked, the lab link set up, the samples,
// then the checks over them.
func run(ctx context.Context, e *study.Env) error {
	for _, tool := range []struct{ bin, pkg string }{{"iperf3", "iperf3"}, {"ip", "iproute2"}, {"tc", "iproute2"}, {"ss", "iproute2"}} {
		if _, err := exec.LookPath(tool.bin); err != nil {
			return fmt.Errorf("the cc study needs %s: apt-get install %s", tool.bin, tool.pkg)
		}
	}
	if os.Geteuid() != 0 {
		return errors.New("the cc study makes network namespaces and loads BPF: run it as root")
	}
	rg := &rig{secs: 10, omit: 2, repeats: e.RepeatsOr(3)}
	if e.Tiny() {
		// One run per congestion control and profile: the loss check pools
		// the three controls' packets, so the mechanics hold on 3 runs.
		rg.secs, rg.omit, rg.repeats = 1, 1, e.RepeatsOr(1)
	}
	describe(e)
	defer rg.close()
	if err := rg.setup(ctx, e); err != nil {
		return err
	}
	rg.describeMethod(e)
	if err := e.Save(); err != nil {
		return err
	}
	if err := rg.startServer(ctx); err != nil {
		return err
	}
	t, err := rg.samples(ctx, e)
	if err != nil {
		return err
	}
	if err := t.check(e, rg.runnable); err != nil {
		return err
	}
	return e.Save()
}

// describe fills the record's title, question, metrics, variants and the
// original's findings.
func describe(e *study.Env) {
	r := e.Record()
	r.Title = "Congestion control under impairment: CUBIC vs BBR vs Reno"
	r.Question = "How much throughput does each congestion control keep on a 1 Gbit/s link that is clean, loses 1 % of packets, or adds 50 ms of delay and loses 2 %?"
	r.Metrics = metrics
	r.Variants = variants
	r.Baseline = "cubic"
	r.Original = original()
	r.Notes = append(r.Notes, "Both iperf3 ends and the kernel's per-packet work (TSO off, no GRO: about 81,000 packets/s at the shape) share the host's CPUs with whatever else runs there; a clean throughput short of 941.5 Mbit/s with an end's CPU near 100 % is the host's CPU, not the link: see the link-shape check and the CPU metrics.",
		"A retransmit on a clean link (no BPF drop) is a packet lost in the host itself: a receive backlog overflowing while the receiver's CPU was taken by another process.")
}

// lossDispersion is the spread of the drop program's per-run drop counts
// on the real path, as a multiple of the binomial variance: over 14 runs of
// 1.5-3.4 M packets each (UDP and TCP, separate labs and one lab, on a
// 2-core host) the runs lay 2.06 binomial standard deviations from 1 %
// (RMS; from -3.3 to +2.7), while 100 ms batches within a run were binomial
// (0.8-1.2) and the program under BPF test runs too. The runs of one study
// can share such an offset (a tiny study's three runs: 0.92-0.95 %), so
// their own dispersion misses it. Its cause is not known.
const lossDispersion = 4.2

// once runs one iperf3 flow with congestion control algo and reads the
// socket's congestion control mid-run.
func once(ctx context.Context, lab *netlab.Lab, drop *netlab.Dropper, algo string, secs, omit int, pin []string) (iperfRun, error) {
	var res iperfRun
	before, err := drop.Counters()
	if err != nil {
		return res, err
	}
	retrBefore, err := retransSegs(ctx, lab)
	if err != nil {
		return res, err
	}
	rctx, cancel := context.WithTimeout(ctx, time.Duration(secs+omit+20)*time.Second)
	defer cancel()
	args := append([]string{"-c", receiver, "-p", port, "-t", strconv.Itoa(secs), "-O", strconv.Itoa(omit), "-C", algo, "--json"}, pin...)
	cmd := netlab.Exec(rctx, lab.Sender, "iperf3", args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("start iperf3: %w", err)
	}
	// Mid-run: the data socket's congestion control, from the kernel.
	select {
	case <-time.After(time.Duration(omit*1000+secs*500) * time.Millisecond):
		ssOut, err := lab.Run(rctx, lab.Sender, "ss", "-tinH", "state", "established", "dst", receiver)
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
	retrAfter, err := retransSegs(ctx, lab)
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
