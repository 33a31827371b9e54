package gctrace

import (
	"errors"
	"time"
)

// parser is a cursor over the rest of a gc line after "gc N @".
type parser struct{ b []byte }

var errSyntax = errors.New("unexpected text")

// cycle parses `S s P%[ (checking...)]: A+B+C ms clock, a+b/c/d+e ms cpu,
// H0->H1->H2 MB, G MB goal[, K MB stacks, L MB globals], N P[ (forced)]`.
func (p *parser) cycle(c *Cycle) error {
	at, err := p.decimal(1e9)
	if err != nil {
		return err
	}
	c.At = time.Duration(at)
	if !p.lit("s ") {
		return errSyntax
	}
	pct, err := p.uint()
	if err != nil {
		return err
	}
	c.CPUPercent = int(pct)
	if !p.lit("%") {
		return errSyntax
	}
	if p.lit(string(leakCheck)) {
		c.LeakCheck = true
	}
	if !p.lit(": ") {
		return errSyntax
	}
	for i, d := range []*time.Duration{&c.SweepTerm, &c.Mark, &c.MarkTerm} {
		if i > 0 && !p.lit("+") {
			return errSyntax
		}
		if *d, err = p.ms(); err != nil {
			return err
		}
	}
	if !p.lit(" ms clock, ") {
		return errSyntax
	}
	for i, d := range []*time.Duration{&c.CPUSweepTerm, &c.CPUAssist, &c.CPUBackground, &c.CPUIdle, &c.CPUMarkTerm} {
		sep := "+"
		if i == 2 || i == 3 {
			sep = "/"
		}
		if i > 0 && !p.lit(sep) {
			return errSyntax
		}
		if *d, err = p.ms(); err != nil {
			return err
		}
	}
	if !p.lit(" ms cpu, ") {
		return errSyntax
	}
	for i, h := range []*uint64{&c.HeapStart, &c.HeapEnd, &c.HeapLive} {
		if i > 0 && !p.lit("->") {
			return errSyntax
		}
		if *h, err = p.mib(); err != nil {
			return err
		}
	}
	if !p.lit(" MB, ") {
		return errSyntax
	}
	if c.HeapGoal, err = p.mib(); err != nil {
		return err
	}
	if !p.lit(" MB goal, ") {
		return errSyntax
	}
	n, err := p.mib()
	if err != nil {
		return err
	}
	if p.lit(" MB stacks, ") {
		c.Stacks, c.HasRoots = n, true
		if c.Globals, err = p.mib(); err != nil {
			return err
		}
		if !p.lit(" MB globals, ") {
			return errSyntax
		}
		if n, err = p.mib(); err != nil {
			return err
		}
	}
	c.Procs = int(n >> 20)
	if !p.lit(" P") {
		return errSyntax
	}
	if p.lit(string(forcedMark)) {
		c.ForcedMark = true
	}
	if len(p.b) != 0 {
		return errSyntax
	}
	return nil
}

func (p *parser) lit(s string) bool {
	if len(p.b) < len(s) || string(p.b[:len(s)]) != s {
		return false
	}
	p.b = p.b[len(s):]
	return true
}

var errNumber = errors.New("expected a number")

func (p *parser) uint() (uint64, error) {
	var n uint64
	i := 0
	for ; i < len(p.b) && p.b[i] >= '0' && p.b[i] <= '9'; i++ {
		if i >= 18 {
			return 0, errNumber
		}
		n = n*10 + uint64(p.b[i]-'0')
	}
	if i == 0 {
		return 0, errNumber
	}
	p.b = p.b[i:]
	return n, nil
}

// mib reads a whole number of MiB and returns bytes.
func (p *parser) mib() (uint64, error) {
	n, err := p.uint()
	return n << 20, err
}

// ms reads a decimal number of milliseconds exactly into a Duration.
func (p *parser) ms() (time.Duration, error) {
	n, err := p.decimal(1e6)
	return time.Duration(n), err
}

// decimal reads "I[.F]" and returns it times unit (unit a power of ten of
// at least 1e3), dropping digits beyond the unit's resolution.
func (p *parser) decimal(unit int64) (int64, error) {
	ip, err := p.uint()
	if err != nil {
		return 0, err
	}
	v := int64(ip) * unit
	if len(p.b) > 0 && p.b[0] == '.' {
		p.b = p.b[1:]
		i := 0
		scale := unit / 10
		for ; i < len(p.b) && p.b[i] >= '0' && p.b[i] <= '9'; i++ {
			v += int64(p.b[i]-'0') * scale
			scale /= 10
		}
		if i == 0 {
			return 0, errNumber
		}
		p.b = p.b[i:]
	}
	return v, nil
}
