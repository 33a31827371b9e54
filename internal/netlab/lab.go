package netlab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"proxybench/internal/placement"
)

// Config describes a lab link.
type Config struct {
	// Prefix starts every name the lab makes (namespaces, devices), e.g.
	// "pbcc-": CleanStale removes whatever carries it.
	Prefix string
	// SenderAddr and ReceiverAddr are the two ends' IPv4 addresses, in a
	// /30 of their own (e.g. 198.18.0.1 and 198.18.0.2, the benchmarking
	// range of RFC 2544).
	SenderAddr, ReceiverAddr string
	// RateBit is tbf's rate on the sender's egress in bit/s (0 = no shaping).
	RateBit uint64
	// Overhead is the bytes tbf adds to every packet's length, e.g. 24 for
	// Ethernet's preamble, frame check sequence and inter-frame gap, so
	// that a 1 Gbit/s shape carries what a Gigabit Ethernet link does.
	Overhead int
	// SenderCPUs and ReceiverCPUs steer each end's receive processing
	// (RPS) to those CPUs (none = every online CPU): one flow then always lands on
	// one CPU's backlog and its packets are never reordered.
	SenderCPUs, ReceiverCPUs []int
}

// Lab is a made link: namespaces Sender and Receiver joined by the veth
// pair SenderDev (in Sender) and ReceiverDev (in Receiver).
type Lab struct {
	Config
	Sender, Receiver       string
	SenderDev, ReceiverDev string
	// Commands lists every command that made the lab, in order.
	Commands []string
}

// tbf's bucket: 10 full-size packets, and at most 10 ms of queue.
const (
	tbfBurst   = 15000
	tbfLatency = "10ms"
)

// run runs a command and wraps its stderr into the error.
func run(ctx context.Context, name string, args ...string) (string, error) {
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// Names returns the sender and receiver namespace names for prefix.
func Names(prefix string) (sender, receiver string) { return prefix + "snd", prefix + "rcv" }

// Up makes the lab: namespaces, veth pair, addresses, RPS, tbf, and TSO off
// on the sender's device (so the segments tbf lets through leave one per
// packet, as on a wire). On error it removes what it made.
func Up(ctx context.Context, cfg Config) (*Lab, error) {
	if cfg.Prefix == "" || cfg.SenderAddr == "" || cfg.ReceiverAddr == "" {
		return nil, errors.New("netlab: prefix and both addresses are required")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, fmt.Errorf("netlab needs iproute2's ip and tc (apt-get install iproute2): %w", err)
	}
	online, err := placement.Online()
	if err != nil {
		return nil, fmt.Errorf("netlab: %w", err)
	}
	if len(cfg.SenderCPUs) == 0 {
		cfg.SenderCPUs = online
	}
	if len(cfg.ReceiverCPUs) == 0 {
		cfg.ReceiverCPUs = online
	}
	snd, rcv := Names(cfg.Prefix)
	l := &Lab{Config: cfg, Sender: snd, Receiver: rcv, SenderDev: cfg.Prefix + "s", ReceiverDev: cfg.Prefix + "r"}
	steps := [][]string{
		{"ip", "netns", "add", snd},
		{"ip", "netns", "add", rcv},
		{"ip", "link", "add", l.SenderDev, "netns", snd, "type", "veth", "peer", "name", l.ReceiverDev, "netns", rcv},
	}
	for _, e := range []struct{ ns, dev, addr string }{{snd, l.SenderDev, cfg.SenderAddr}, {rcv, l.ReceiverDev, cfg.ReceiverAddr}} {
		steps = append(steps,
			[]string{"ip", "netns", "exec", e.ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"},
			[]string{"ip", "-n", e.ns, "link", "set", "lo", "up"},
			[]string{"ip", "-n", e.ns, "addr", "add", e.addr + "/30", "dev", e.dev},
			[]string{"ip", "-n", e.ns, "link", "set", e.dev, "up"},
		)
	}
	steps = append(steps,
		rpsStep(snd, l.SenderDev, cfg.SenderCPUs),
		rpsStep(rcv, l.ReceiverDev, cfg.ReceiverCPUs),
	)
	if cfg.RateBit > 0 {
		steps = append(steps, append([]string{"tc", "-n", snd, "qdisc", "add", "dev", l.SenderDev, "root", "handle", "1:"}, TBFArgs(cfg.RateBit, cfg.Overhead)...))
	}
	for _, s := range steps {
		l.Commands = append(l.Commands, strings.Join(s, " "))
		if _, err := run(ctx, s[0], s[1:]...); err != nil {
			l.Close()
			return nil, fmt.Errorf("netlab up: %w", err)
		}
	}
	l.Commands = append(l.Commands, "ethtool -K "+l.SenderDev+" tso off (in "+snd+", SIOCETHTOOL)")
	if err := inNetns(snd, func() error { return setTSO(l.SenderDev, false) }); err != nil {
		l.Close()
		return nil, fmt.Errorf("netlab up: %w", err)
	}
	return l, nil
}

// TBFArgs are tc's arguments for the lab's tbf shape.
func TBFArgs(rateBit uint64, overhead int) []string {
	a := []string{"tbf", "rate", strconv.FormatUint(rateBit, 10) + "bit", "burst", strconv.Itoa(tbfBurst), "latency", tbfLatency}
	if overhead > 0 {
		a = append(a, "overhead", strconv.Itoa(overhead))
	}
	return a
}

// rpsStep writes the RPS CPU mask of dev's receive queue inside ns.
func rpsStep(ns, dev string, cpus []int) []string {
	return []string{"ip", "netns", "exec", ns, "sh", "-c", "echo " + CPUMask(cpus) + " > /sys/class/net/" + dev + "/queues/rx-0/rps_cpus"}
}

// CPUMask is the hexadecimal CPU mask sysfs takes for cpus (of the first
// 64).
func CPUMask(cpus []int) string {
	var m uint64
	for _, c := range cpus {
		if c >= 0 && c < 64 {
			m |= 1 << c
		}
	}
	return strconv.FormatUint(m, 16)
}

// Exec returns a command that runs name inside namespace ns.
func Exec(ctx context.Context, ns, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns, name}, args...)...)
}

// Run runs name inside ns and returns its stdout.
func (l *Lab) Run(ctx context.Context, ns, name string, args ...string) (string, error) {
	return run(ctx, "ip", append([]string{"netns", "exec", ns, name}, args...)...)
}

// QdiscStats is tc's view of the sender's root qdisc: packets sent and
// dropped.
type QdiscStats struct{ Sent, Dropped, Overlimits uint64 }

// SenderQdisc reads the sender device's root qdisc counters.
func (l *Lab) SenderQdisc(ctx context.Context) (QdiscStats, error) {
	out, err := run(ctx, "tc", "-n", l.Sender, "-s", "qdisc", "show", "dev", l.SenderDev)
	if err != nil {
		return QdiscStats{}, err
	}
	return ParseQdiscStats(out)
}

// ParseQdiscStats reads the first " Sent B bytes P pkt (dropped D,
// overlimits O ...)" line of `tc -s qdisc show`.
func ParseQdiscStats(out string) (QdiscStats, error) {
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "Sent ") {
			continue
		}
		var s QdiscStats
		var bytes uint64
		if _, err := fmt.Sscanf(line, "Sent %d bytes %d pkt (dropped %d, overlimits %d", &bytes, &s.Sent, &s.Dropped, &s.Overlimits); err != nil {
			return QdiscStats{}, fmt.Errorf("parse tc stats %q: %w", line, err)
		}
		return s, nil
	}
	return QdiscStats{}, fmt.Errorf("no Sent line in tc output %q", strings.TrimSpace(out))
}

// NetemProbe tries to add a netem qdisc on the receiver's device and
// removes it again: "" when netem works, else the kernel's answer.
func (l *Lab) NetemProbe(ctx context.Context) string {
	_, err := run(ctx, "tc", "-n", l.Receiver, "qdisc", "add", "dev", l.ReceiverDev, "root", "handle", "9:", "netem", "delay", "1ms")
	if err != nil {
		return err.Error()
	}
	_, _ = run(ctx, "tc", "-n", l.Receiver, "qdisc", "del", "dev", l.ReceiverDev, "root")
	return ""
}

// SetDelay puts netem delay d on the sender's egress under tbf (a child of
// tbf's class), or removes it when d is 0. Only for kernels where
// NetemProbe succeeded.
func (l *Lab) SetDelay(ctx context.Context, d time.Duration) error {
	if d == 0 {
		_, err := run(ctx, "tc", "-n", l.Sender, "qdisc", "del", "dev", l.SenderDev, "parent", "1:1")
		if err != nil && strings.Contains(err.Error(), "Cannot find") {
			return nil
		}
		return err
	}
	// limit: more than the bytes in flight at the rate over the delay.
	limit := 100000
	_, err := run(ctx, "tc", "-n", l.Sender, "qdisc", "replace", "dev", l.SenderDev, "parent", "1:1", "handle", "10:",
		"netem", "delay", fmt.Sprintf("%dus", d.Microseconds()), "limit", strconv.Itoa(limit))
	return err
}

// Close stops every process left in the lab's namespaces and deletes them
// (which deletes the veth pair and detaches what was attached to it). It
// uses a fresh context, so it works after a Ctrl-C.
func (l *Lab) Close() error {
	return removeNS(l.Sender, l.Receiver)
}

// removeNS kills the processes in each named namespace and deletes it.
func removeNS(names ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var errs []error
	for _, ns := range names {
		if _, err := os.Stat(nsDir + "/" + ns); err != nil {
			continue
		}
		if out, err := run(ctx, "ip", "netns", "pids", ns); err == nil {
			for _, f := range strings.Fields(out) {
				if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		if _, err := run(ctx, "ip", "netns", "del", ns); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// CleanStale removes every namespace whose name starts with prefix (a
// crashed earlier lab's leftovers) and returns their names.
func CleanStale(prefix string) ([]string, error) {
	ents, err := os.ReadDir(nsDir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("list network namespaces: %w", err)
	}
	var stale []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) {
			stale = append(stale, e.Name())
		}
	}
	return stale, removeNS(stale...)
}
