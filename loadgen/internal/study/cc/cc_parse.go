package cc

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"proxybench/internal/netlab"
	"proxybench/internal/studydata"
)

// retransSegs reads the sender namespace's Tcp RetransSegs counter.
func retransSegs(ctx context.Context, lab *netlab.Lab) (float64, error) {
	out, err := lab.Run(ctx, lab.Sender, "cat", "/proc/net/snmp")
	if err != nil {
		return 0, err
	}
	return ParseSNMP(out, "Tcp", "RetransSegs")
}

// ParseSNMP reads one counter of /proc/net/snmp (a header line of names
// followed by a line of values, both starting with "Proto:").
func ParseSNMP(out, proto, name string) (float64, error) {
	var head []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != proto+":" {
			continue
		}
		if head == nil {
			head = f
			continue
		}
		if i := slices.Index(head, name); i > 0 && i < len(f) {
			return strconv.ParseFloat(f[i], 64)
		}
		break
	}
	return 0, fmt.Errorf("no %s %s in /proc/net/snmp", proto, name)
}

// Iperf3Result is what the study reads of iperf3 --json output.
type Iperf3Result struct {
	Mbps        float64 // end.sum_received.bits_per_second / 1e6
	Retransmits float64 // end.sum_sent.retransmits
	SenderCC    string  // end.sender_tcp_congestion
	SenderCPU   float64 // end.cpu_utilization_percent.host_total (the client)
	ReceiverCPU float64 // end.cpu_utilization_percent.remote_total (the server)
}

// ParseIperf3 reads iperf3 --json output.
func ParseIperf3(out string) (Iperf3Result, error) {
	var j struct {
		Error string `json:"error"`
		End   struct {
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
			SumSent struct {
				Retransmits *float64 `json:"retransmits"`
			} `json:"sum_sent"`
			SenderCC string `json:"sender_tcp_congestion"`
			CPU      struct {
				Host   float64 `json:"host_total"`
				Remote float64 `json:"remote_total"`
			} `json:"cpu_utilization_percent"`
		} `json:"end"`
	}
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		return Iperf3Result{}, fmt.Errorf("decode iperf3 json: %w", err)
	}
	if j.Error != "" {
		return Iperf3Result{}, fmt.Errorf("iperf3: %s", j.Error)
	}
	if j.End.SumReceived.BitsPerSecond <= 0 || j.End.SumSent.Retransmits == nil {
		return Iperf3Result{}, errors.New("iperf3 json has no end.sum_received throughput or end.sum_sent retransmits")
	}
	return Iperf3Result{Mbps: j.End.SumReceived.BitsPerSecond / 1e6, Retransmits: *j.End.SumSent.Retransmits, SenderCC: j.End.SenderCC,
		SenderCPU: j.End.CPU.Host, ReceiverCPU: j.End.CPU.Remote}, nil
}

// ParseSSCongestion returns the congestion control of the socket that has
// acknowledged the most bytes in `ss -tinH` output (iperf3's data stream,
// not its control connection) among those that sent within the last second
// (lastsnd): a data socket an earlier run left established has not sent
// for seconds, and acknowledged more than this run's has yet. Without
// lastsnd readings, every socket counts.
func ParseSSCongestion(out string) string {
	type sock struct {
		alg      string
		acked    int64
		lastsnd  int64
		hasLastS bool
	}
	var socks []sock
	for _, line := range strings.Split(out, "\n") {
		if line == "" || (line[0] != ' ' && line[0] != '\t') {
			continue
		}
		var so sock
		for _, f := range strings.Fields(line) {
			k, v, hasColon := strings.Cut(f, ":")
			switch {
			case !hasColon && so.alg == "" && !slices.Contains([]string{"ts", "sack", "ecn", "ecnseen", "fastopen", "noecn"}, f) && isAlgName(f):
				so.alg = f
			case k == "bytes_acked":
				so.acked, _ = strconv.ParseInt(v, 10, 64)
			case k == "lastsnd":
				so.lastsnd, _ = strconv.ParseInt(v, 10, 64)
				so.hasLastS = true
			}
		}
		if so.alg != "" {
			socks = append(socks, so)
		}
	}
	sending := func(so sock) bool { return !so.hasLastS || so.lastsnd <= 1000 }
	if !slices.ContainsFunc(socks, sending) {
		sending = func(sock) bool { return true }
	}
	best, bestAcked := "", int64(-1)
	for _, so := range socks {
		if sending(so) && so.acked > bestAcked {
			best, bestAcked = so.alg, so.acked
		}
	}
	return best
}

// isAlgName reports whether s looks like a congestion control's name.
func isAlgName(s string) bool {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return s != ""
}

// waitListen waits for the iperf3 server to listen.
func waitListen(ctx context.Context, lab *netlab.Lab) error {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		out, err := lab.Run(ctx, lab.Receiver, "ss", "-Hltn", "sport", "=", ":"+port)
		if err == nil && strings.TrimSpace(out) != "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return errors.New("iperf3 server did not listen within 5 s")
}

// available reports which variants the kernel offers (loading tcp_<name>
// with modprobe when it is missing) and why the others cannot run.
func available() (map[string]bool, map[string]string) {
	const f = "/proc/sys/net/ipv4/tcp_available_congestion_control"
	read := func() []string { b, _ := os.ReadFile(f); return strings.Fields(string(b)) }
	have := read()
	avail, na := map[string]bool{}, map[string]string{}
	for _, v := range variants {
		if !slices.Contains(have, v.Name) {
			_ = exec.Command("modprobe", "tcp_"+v.Name).Run()
			have = read()
		}
		if slices.Contains(have, v.Name) {
			avail[v.Name] = true
		} else {
			na[v.Name] = fmt.Sprintf("the kernel offers no %s congestion control (%s: %s; modprobe tcp_%s failed)", v.Name, f, strings.Join(have, " "), v.Name)
		}
	}
	return avail, na
}

// mechanism says what makes a profile.
func mechanism(p profile) string {
	m := "tbf 1 Gbit/s (overhead 24)"
	if p.Delay > 0 {
		m += fmt.Sprintf(" + netem delay %s", p.Delay)
	}
	if p.Loss > 0 {
		m += fmt.Sprintf(" + TCX eBPF drop %g %% (receiver ingress)", 100*p.Loss)
	}
	return m
}

// noDelayReason says why no profile with delay can run: what the kernel
// lacks, from its own configuration.
func noDelayReason(netemErr string) string {
	cfg := kernelConfig("CONFIG_NET_SCH_NETEM", "CONFIG_NET_SCH_FQ", "CONFIG_NET_SCH_ETF")
	return "the kernel has no netem (" + cfg["CONFIG_NET_SCH_NETEM"] + "; tc qdisc add … netem answers: " + lastLine(netemErr) + "), " +
		"and no qdisc that holds a packet until a time: fq (" + cfg["CONFIG_NET_SCH_FQ"] + ") and etf (" + cfg["CONFIG_NET_SCH_ETF"] + ") are absent, so an eBPF program setting skb->tstamp (earliest departure time) is ignored; " +
		"tbf's and htb's latency is queueing behind the rate, not a fixed delay, and a tc eBPF program can drop or redirect a packet but not hold it. " +
		"Only a userspace delay line (TUN or AF_XDP, forwarding every packet through a process) could delay here, which is not a kernel link emulation comparable with netem, so the profile is not run."
}

// lastLine is the last line of a command's error (tc's own message).
func lastLine(s string) string {
	if i := strings.LastIndex(s, ": "); i >= 0 {
		return strings.TrimSpace(s[i+2:])
	}
	return s
}

// kernelConfig reads the given options from /proc/config.gz: "CONFIG_X=y"
// or "CONFIG_X is not set" (or "CONFIG_X unknown" without the file).
func kernelConfig(keys ...string) map[string]string {
	out := map[string]string{}
	for _, k := range keys {
		out[k] = k + " unknown (no /proc/config.gz)"
	}
	f, err := os.Open("/proc/config.gz")
	if err != nil {
		return out
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return out
	}
	for k := range out {
		out[k] = k + " is not set"
	}
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		line := sc.Text()
		for _, k := range keys {
			if strings.HasPrefix(line, k+"=") {
				out[k] = line
			}
		}
	}
	return out
}

func pinText(a []string) string {
	if len(a) == 0 {
		return "not pinned"
	}
	return "on CPU " + a[1] + " (iperf3 -A)"
}

func cpuText(c []int) string {
	if len(c) == 0 {
		return "every CPU"
	}
	s := make([]string, len(c))
	for i, x := range c {
		s[i] = strconv.Itoa(x)
	}
	return "CPU " + strings.Join(s, ",")
}

func mean(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// original are the findings of the study this one reproduces: 3 runs
// each on a clean Gigabit link.
func original() []studydata.Reference {
	ref := func(g, v string, x float64, note string) studydata.Reference {
		return studydata.Reference{Group: g, Variant: v, Metric: "throughput_mbps", Value: x, Unit: "Mbit/s", Note: note}
	}
	const n = "3 runs, Gigabit link"
	return []studydata.Reference{
		ref("clean", "cubic", 941.41, n), ref("clean", "bbr", 940.09, n),
		ref("loss1", "cubic", 941.09, n), ref("loss1", "bbr", 929.60, n),
		ref("delay50-loss2", "cubic", 4.99, n), ref("delay50-loss2", "bbr", 439.26, n+", CV 47 %"),
	}
}
