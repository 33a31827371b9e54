package netlab

import (
	"errors"
	"fmt"
	"math"
	"net"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
)

// Offsets into struct __sk_buff (include/uapi/linux/bpf.h).
const (
	skbLen     = 0
	skbGSOSegs = 164
)

// TCX verdicts (include/uapi/linux/bpf.h).
const (
	tcxNext = -1 // hand the packet on (pass)
	tcxDrop = 2
)

// The counters' slots in the per-CPU stats map's one value.
const (
	cSeenSkbs = iota
	cSeenSegs
	cSeenBytes
	cDropSkbs
	cDropSegs
	cDropBytes
	nCounters
)

// Threshold is the drop program's threshold for loss probability p: the
// program drops a packet when bpf_get_prandom_u32() < Threshold(p), so the
// probability is exactly Threshold(p)/2^32. p <= 0 never drops; p >= 1
// always drops (2^32 is above every 32-bit random number).
func Threshold(p float64) uint64 {
	switch {
	case p <= 0 || math.IsNaN(p):
		return 0
	case p >= 1:
		return 1 << 32
	}
	return uint64(math.Round(p * (1 << 32)))
}

// ThresholdProb is the exact drop probability a threshold gives.
func ThresholdProb(t uint64) float64 { return float64(t) / (1 << 32) }

// Counters are what the drop program saw and dropped. A "skb" is one
// socket buffer the program was handed; "segs" counts the TCP segments in
// it (gso_segs, 1 for a plain packet), so Segs == Skbs means every packet
// was judged on its own.
type Counters struct {
	SeenSkbs, SeenSegs, SeenBytes uint64
	DropSkbs, DropSegs, DropBytes uint64
}

// Sub returns c - o (the counts between two reads).
func (c Counters) Sub(o Counters) Counters {
	return Counters{c.SeenSkbs - o.SeenSkbs, c.SeenSegs - o.SeenSegs, c.SeenBytes - o.SeenBytes,
		c.DropSkbs - o.DropSkbs, c.DropSegs - o.DropSegs, c.DropBytes - o.DropBytes}
}

// DropRatio is dropped / seen packets (0 when none were seen).
func (c Counters) DropRatio() float64 {
	if c.SeenSkbs == 0 {
		return 0
	}
	return float64(c.DropSkbs) / float64(c.SeenSkbs)
}

// Dropper is the loaded drop program, its maps and (once attached) its TCX
// link.
type Dropper struct {
	prog  *ebpf.Program
	cfg   *ebpf.Map // array[1] of u64: the threshold
	stats *ebpf.Map // per-CPU array[1] of nCounters u64
	link  link.Link
}

// dropInstructions is the program: count the packet, then drop it when
// bpf_get_prandom_u32() < the configured threshold (64-bit compare, so a
// threshold of 2^32 drops all).
func dropInstructions(cfgFD, statsFD int) asm.Instructions {
	add := func(slot int, src asm.Register) asm.Instructions {
		return asm.Instructions{
			asm.LoadMem(asm.R1, asm.R8, int16(8*slot), asm.DWord),
			asm.Add.Reg(asm.R1, src),
			asm.StoreMem(asm.R8, int16(8*slot), asm.R1, asm.DWord),
		}
	}
	lookup := func(fd int) asm.Instructions {
		return asm.Instructions{
			asm.LoadMapPtr(asm.R1, fd),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, -4),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "pass"),
		}
	}
	ins := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1), // r6 = skb
		asm.StoreImm(asm.RFP, -4, 0, asm.Word),
	}
	ins = append(ins, lookup(cfgFD)...)
	ins = append(ins, asm.LoadMem(asm.R7, asm.R0, 0, asm.DWord)) // r7 = threshold
	ins = append(ins, lookup(statsFD)...)
	ins = append(ins,
		asm.Mov.Reg(asm.R8, asm.R0),                       // r8 = counters
		asm.LoadMem(asm.R9, asm.R6, skbGSOSegs, asm.Word), // r9 = segments
		asm.JNE.Imm(asm.R9, 0, "counted"),
		asm.Mov.Imm(asm.R9, 1),
		asm.Mov.Imm(asm.R2, 1).WithSymbol("counted"),
		asm.LoadMem(asm.R3, asm.R6, skbLen, asm.Word),
	)
	ins = append(ins, add(cSeenSkbs, asm.R2)...)
	ins = append(ins, add(cSeenSegs, asm.R9)...)
	ins = append(ins, add(cSeenBytes, asm.R3)...)
	ins = append(ins,
		asm.JEq.Imm(asm.R7, 0, "pass"),
		asm.FnGetPrandomU32.Call(),
		asm.JGE.Reg(asm.R0, asm.R7, "pass"),
		asm.Mov.Imm(asm.R2, 1),
		asm.LoadMem(asm.R3, asm.R6, skbLen, asm.Word),
	)
	ins = append(ins, add(cDropSkbs, asm.R2)...)
	ins = append(ins, add(cDropSegs, asm.R9)...)
	ins = append(ins, add(cDropBytes, asm.R3)...)
	ins = append(ins,
		asm.Mov.Imm(asm.R0, tcxDrop),
		asm.Return(),
		asm.Mov.Imm(asm.R0, tcxNext).WithSymbol("pass"),
		asm.Return(),
	)
	return ins
}

// LoadDropper creates the maps and loads the drop program (not attached),
// dropping nothing until SetLoss.
func LoadDropper() (*Dropper, error) {
	cfg, err := ebpf.NewMap(&ebpf.MapSpec{Name: "pb_drop_cfg", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	if err != nil {
		return nil, fmt.Errorf("create drop config map: %w", err)
	}
	stats, err := ebpf.NewMap(&ebpf.MapSpec{Name: "pb_drop_stats", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8 * nCounters, MaxEntries: 1})
	if err != nil {
		cfg.Close()
		return nil, fmt.Errorf("create drop stats map: %w", err)
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:         "pb_drop",
		Type:         ebpf.SchedCLS,
		License:      "GPL",
		Instructions: dropInstructions(cfg.FD(), stats.FD()),
	})
	if err != nil {
		cfg.Close()
		stats.Close()
		return nil, fmt.Errorf("load drop program: %w", err)
	}
	return &Dropper{prog: prog, cfg: cfg, stats: stats}, nil
}

// SetLoss sets the drop probability; it takes effect at once, attached or
// not. It returns the exact probability the threshold gives.
func (d *Dropper) SetLoss(p float64) (float64, error) {
	t := Threshold(p)
	if err := d.cfg.Put(uint32(0), t); err != nil {
		return 0, fmt.Errorf("set drop threshold: %w", err)
	}
	return ThresholdProb(t), nil
}

// Counters sums the per-CPU counters.
func (d *Dropper) Counters() (Counters, error) {
	var per [][nCounters]uint64
	if err := d.stats.Lookup(uint32(0), &per); err != nil {
		return Counters{}, fmt.Errorf("read drop counters: %w", err)
	}
	var s [nCounters]uint64
	for _, c := range per {
		for i := range s {
			s[i] += c[i]
		}
	}
	return Counters{s[cSeenSkbs], s[cSeenSegs], s[cSeenBytes], s[cDropSkbs], s[cDropSegs], s[cDropBytes]}, nil
}

// AttachIngress attaches the program with TCX to the ingress of dev inside
// network namespace ns ("" = the caller's).
func (d *Dropper) AttachIngress(ns, dev string) error {
	if d.link != nil {
		return errors.New("drop program already attached")
	}
	attach := func() error {
		ifc, err := net.InterfaceByName(dev)
		if err != nil {
			return fmt.Errorf("find %s: %w", dev, err)
		}
		l, err := link.AttachTCX(link.TCXOptions{Interface: ifc.Index, Program: d.prog, Attach: ebpf.AttachTCXIngress})
		if err != nil {
			return fmt.Errorf("attach drop program to %s ingress (tcx): %w", dev, err)
		}
		d.link = l
		return nil
	}
	if ns == "" {
		return attach()
	}
	return inNetns(ns, attach)
}

// Close detaches the program and frees it and its maps.
func (d *Dropper) Close() error {
	var errs []error
	if d.link != nil {
		errs = append(errs, d.link.Close())
		d.link = nil
	}
	errs = append(errs, d.prog.Close(), d.cfg.Close(), d.stats.Close())
	return errors.Join(errs...)
}

// TestRun runs the program once on a minimal packet (BPF_PROG_TEST_RUN)
// and reports whether it dropped it: a test of the threshold in the kernel
// without a link.
func (d *Dropper) TestRun() (dropped bool, err error) {
	pkt := make([]byte, 64) // ethernet header + zeros
	ret, err := d.prog.Run(&ebpf.RunOptions{Data: pkt})
	if err != nil {
		return false, fmt.Errorf("test-run drop program: %w", err)
	}
	return int32(ret) == tcxDrop, nil
}

// Z99 is the standard normal quantile of a two-sided 99 % interval.
const Z99 = 2.5758293035489

// WilsonInterval is the Wilson score interval of a binomial proportion:
// k successes in n trials at normal quantile z (Z99 for 99 %).
func WilsonInterval(k, n uint64, z float64) (lo, hi float64) {
	e := EstimateLoss([]Counters{{SeenSkbs: n, DropSkbs: k}}, z, 1)
	return e.Lo, e.Hi
}

// Add returns c + o (the counts of two runs together).
func (c Counters) Add(o Counters) Counters {
	return Counters{c.SeenSkbs + o.SeenSkbs, c.SeenSegs + o.SeenSegs, c.SeenBytes + o.SeenBytes,
		c.DropSkbs + o.DropSkbs, c.DropSegs + o.DropSegs, c.DropBytes + o.DropBytes}
}

// LossEstimate is a loss rate measured over several runs, with a sampling
// interval that holds when the runs' rates vary more than independent drops
// would.
type LossEstimate struct {
	Runs       int
	Total      Counters // the runs together
	Rate       float64  // Total's drop ratio
	Lo, Hi     float64  // the interval
	Dispersion float64  // phi: >= 1; 1 when the runs agree as binomial counts do
}

// EstimateLoss pools runs (each a run's counter delta) into one rate and a
// quasi-binomial interval at normal quantile z (Z99 for 99 %): the binomial
// (Wilson) interval of the pooled count, widened by the dispersion phi =
// max(minPhi, 1, Pearson's chi-squared of the runs' drop counts / (runs -
// 1)). minPhi is what is known of the spread beyond the runs at hand (1:
// nothing). With one run, or runs that agree as binomial counts do, and
// minPhi 1, the interval is the plain Wilson one. The estimate of phi is
// itself uncertain (few runs); that uncertainty is not in the interval.
func EstimateLoss(runs []Counters, z, minPhi float64) LossEstimate {
	var e LossEstimate
	for _, r := range runs {
		if r.SeenSkbs == 0 {
			continue
		}
		e.Runs++
		e.Total = e.Total.Add(r)
	}
	e.Rate = e.Total.DropRatio()
	e.Dispersion = max(1, minPhi)
	if e.Runs > 1 && e.Rate > 0 && e.Rate < 1 {
		var chi2 float64
		for _, r := range runs {
			if r.SeenSkbs == 0 {
				continue
			}
			want := float64(r.SeenSkbs) * e.Rate
			d := float64(r.DropSkbs) - want
			chi2 += d * d / (want * (1 - e.Rate))
		}
		e.Dispersion = max(e.Dispersion, chi2/float64(e.Runs-1))
	}
	// Wilson's interval of the pooled proportion at the effective sample
	// size n/phi.
	n := float64(e.Total.SeenSkbs) / e.Dispersion
	if n == 0 {
		e.Lo, e.Hi = 0, 1
		return e
	}
	p := e.Rate
	z2 := z * z
	den := 1 + z2/n
	mid := (p + z2/(2*n)) / den
	half := z * math.Sqrt(p*(1-p)/n+z2/(4*n*n)) / den
	e.Lo, e.Hi = math.Max(0, mid-half), math.Min(1, mid+half)
	return e
}
