package runner

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"proxybench/internal/cgroup"
	"proxybench/internal/dockerx"
	"proxybench/internal/manifest"
	"proxybench/internal/scenario"
	"proxybench/loadgen/internal/plan"
)

// probes are what was sampled beside a cell's attack: the ones its
// scenario asks for (scenario.Probe).
type probes struct {
	memory *manifest.ProxyMemory
	churn  *manifest.Churn
	faults *manifest.Faults
}

// procRoot is the /proc the probes read; tests point it at fixtures.
var procRoot = "/proc"

// memSampler follows the proxy container's working set while a slow cell
// holds its connections: the idle value before traffic, the peak during.
type memSampler struct {
	mem    manifest.ProxyMemory
	read   func() (int64, error)
	stop   chan struct{}
	done   sync.WaitGroup
	mu     sync.Mutex
	failed string
}

// startMemory begins sampling every 250 ms for a cell whose scenario asks
// for scenario.ProbeMemory; nil for other cells. Without a container (no
// Docker) the result says why there is no number.
func startMemory(c plan.Cell, ctr *dockerx.Container) *memSampler {
	if !wants(c, scenario.ProbeMemory) {
		return nil
	}
	s := &memSampler{stop: make(chan struct{}), mem: manifest.ProxyMemory{Held: heldConns(c)}}
	if ctr == nil {
		s.failed = "no proxy container (run with Docker to measure memory per connection)"
		return s
	}
	s.mem.Container = ctr.Name
	s.read = func() (int64, error) { return workingSet(ctr) }
	idle, err := s.read()
	if err != nil {
		s.failed = err.Error()
		return s
	}
	s.mem.IdleBytes, s.mem.PeakBytes, s.mem.Samples = idle, idle, 1
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				if v, err := s.read(); err == nil {
					s.mu.Lock()
					s.mem.PeakBytes = max(s.mem.PeakBytes, v)
					s.mem.Samples++
					s.mu.Unlock()
				}
			}
		}
	}()
	return s
}

// finish stops sampling and returns the measurement.
func (s *memSampler) finish() *manifest.ProxyMemory {
	if s == nil {
		return nil
	}
	if s.failed != "" {
		return &manifest.ProxyMemory{Container: s.mem.Container, Held: s.mem.Held, Unavailable: s.failed}
	}
	close(s.stop)
	s.done.Wait()
	m := s.mem
	if m.Held > 0 {
		m.PerConnBytes = float64(m.PeakBytes-m.IdleBytes) / float64(m.Held)
	}
	return &m
}

// heldConns is how many client connections a cell whose requests wait
// DelayS at the origin holds at once:
// every connection in a closed loop; rate x delay (at most the in-flight
// limit) in an open loop.
func heldConns(c plan.Cell) int {
	if c.Mode == "open" && c.Rate > 0 {
		return min(c.Concurrency, int(math.Ceil(c.Rate*c.DelayS)))
	}
	return c.Concurrency
}

// workingSet is the container's memory working set, as cAdvisor counts
// it, from its cgroup (internal/cgroup).
func workingSet(ctr *dockerx.Container) (int64, error) {
	if ctr.Pid <= 0 {
		return 0, fmt.Errorf("container %s: no process to find its memory cgroup by (not running, or on another machine)", ctr.Name)
	}
	g, err := cgroup.Of(ctr.Pid)
	if err != nil {
		return 0, fmt.Errorf("container %s: %w", ctr.Name, err)
	}
	return g.WorkingSet()
}

// wants says whether the cell's scenario asks for probe pr.
func wants(c plan.Cell, pr scenario.Probe) bool { return c.Def != nil && c.Def.Probes&pr != 0 }

// churnProbe reads the TIME_WAIT sockets and the ephemeral port range right
// after a cell whose scenario asks for scenario.ProbeTimeWait (churn). With
// host networking (the lab's default) the host's tables hold the proxy's
// sockets too.
func churnProbe(ctx context.Context, target string) *manifest.Churn {
	if ctx.Err() != nil {
		return nil
	}
	ch := &manifest.Churn{}
	port := 0
	if u, err := url.Parse(target); err == nil {
		port, _ = strconv.Atoi(u.Port())
	}
	for _, f := range []string{"net/tcp", "net/tcp6"} {
		all, atPort := countTimeWait(filepath.Join(procRoot, f), port)
		ch.TimeWait += all
		ch.TimeWaitProxyPort += atPort
	}
	if b, err := os.ReadFile(filepath.Join(procRoot, "sys/net/ipv4/ip_local_port_range")); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			ch.PortRangeLow, _ = strconv.Atoi(f[0])
			ch.PortRangeHigh, _ = strconv.Atoi(f[1])
		}
	}
	if b, err := os.ReadFile(filepath.Join(procRoot, "sys/net/ipv4/tcp_tw_reuse")); err == nil {
		ch.TwReuse, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	if n := ch.PortRangeHigh - ch.PortRangeLow + 1; n > 0 && ch.PortRangeHigh > 0 {
		ch.PortPressure = float64(ch.TimeWaitProxyPort) / float64(n)
	}
	return ch
}

// countTimeWait counts the sockets in state 06 (TIME_WAIT) of a
// /proc/net/tcp table, and those whose local or remote port is port.
func countTimeWait(path string, port int) (all, atPort int) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	return countTimeWaitIn(f, port)
}

func countTimeWaitIn(r io.Reader, port int) (all, atPort int) {
	hexPort := fmt.Sprintf(":%04X", port)
	sc := bufio.NewScanner(r)
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || fields[3] != "06" {
			continue
		}
		all++
		if port > 0 && (strings.HasSuffix(fields[1], hexPort) || strings.HasSuffix(fields[2], hexPort)) {
			atPort++
		}
	}
	return all, atPort
}
