package study

import (
	"context"
	"fmt"
	"os"
	"time"

	"proxybench/internal/cputime"
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
		m.cpu0, _ = cputime.TreeCPU("/proc", pid)
		m.rx0, _ = nsRxPackets(pid, "eth0")
		m.dp0, m.dperr = cputime.TreeCPU("/proc", dockerProxy)
		m.start = time.Now().UTC()
		var err error
		m.res, err = Measure(ctx, l)
		m.end = time.Now().UTC()
		return err
	})
	return m, err
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
