package study

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"proxybench/loadgen/internal/attack"
)

// nsMeasured is one netstack sample: the counters read before it, its
// window and its result.
type nsMeasured struct {
	cpu0, dp0  time.Duration
	rx0        int64
	dperr      error
	start, end time.Time
	res        *attack.Result
}

// nsSample measures l against the server pid (and docker-proxy), taken
// again when the hypervisor stole a second of it (retakeOnSteal): its
// latency would be the host's.
func nsSample(ctx context.Context, e *Env, what string, pid, dockerProxy int, gap time.Duration, l Load) (nsMeasured, error) {
	var m nsMeasured
	_, err := retakeOnSteal(ctx, e, what, nil, gap, func() error {
		m.cpu0, _ = nsProcCPU(pid)
		m.rx0, _ = nsRxPackets(pid, "eth0")
		m.dp0, m.dperr = nsProcCPU(dockerProxy)
		m.start = time.Now().UTC()
		var err error
		m.res, err = Measure(ctx, l)
		m.end = time.Now().UTC()
		return err
	})
	return m, err
}

// nsProcCPU is the CPU time of process pid and its children (an nginx
// master and its workers).
func nsProcCPU(pid int) (time.Duration, error) {
	if pid <= 0 {
		return 0, fmt.Errorf("no process (pid %d)", pid)
	}
	var ticks int64
	for _, p := range append([]int{pid}, nsChildren(pid)...) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			return 0, err
		}
		f := nsStatFields(string(b))
		if len(f) < 13 {
			return 0, fmt.Errorf("/proc/%d/stat: %d fields", p, len(f))
		}
		u, err1 := strconv.ParseInt(f[11], 10, 64)
		s, err2 := strconv.ParseInt(f[12], 10, 64)
		if err1 != nil || err2 != nil {
			return 0, fmt.Errorf("/proc/%d/stat: utime %q stime %q", p, f[11], f[12])
		}
		ticks += u + s
	}
	return time.Duration(ticks) * time.Second / clockTick, nil
}

// nsRxPackets is the received packets of iface in pid's network namespace
// (/proc/<pid>/net/dev); 0 when it has none.
func nsRxPackets(pid int, iface string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/dev", pid))
	if err != nil {
		return 0, err
	}
	return parseNetDevRx(string(b), iface)
}
