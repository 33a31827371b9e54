package report

// Classify and the breakdowns the flags' reasons give: how a cell's
// responses and errors, in the window and late, divide into classes,
// expected and unexpected statuses, wrong answers and errors.

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"proxybench/internal/scenario"
)

func errorBreakdown(c *Cell) string {
	return fmt.Sprintf("5xx %d, 4xx %d, transport %d", c.Classes.S5xx, c.Classes.S4xx, c.Classes.Transport)
}

// dominantUnexpected returns the most frequent status outside exp.
func dominantUnexpected(codes map[string]int64, exp []string) (string, int64) {
	var best string
	var n int64
	for _, k := range slices.Sorted(maps.Keys(codes)) {
		if scenario.Matches(k, exp) {
			continue
		}
		if codes[k] > n {
			best, n = k, codes[k]
		}
	}
	return best, n
}

type unexpectedList struct {
	n    int64
	list string // "404: 3120, 301: 2"
}

// unexpectedNon5xx lists the in-window statuses outside c.Expected other
// than 5xx (failures, which the errors flag judges), most common first.
func unexpectedNon5xx(c *Cell) unexpectedList {
	var out unexpectedList
	var ks []string
	for _, k := range slices.Sorted(maps.Keys(c.Codes)) {
		if !scenario.Matches(k, c.Expected) && !strings.HasPrefix(k, "5") && c.Codes[k] > 0 {
			ks = append(ks, k)
			out.n += c.Codes[k]
		}
	}
	sort.SliceStable(ks, func(i, j int) bool { return c.Codes[ks[i]] > c.Codes[ks[j]] })
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = fmt.Sprintf("%s: %d", k, c.Codes[k])
	}
	out.list = strings.Join(parts, ", ")
	return out
}

// failedStatus says whether a status is a failure as the error ratio
// counts one: a 5xx, or no 2xx, 3xx or 4xx status at all (Classes.Other).
func failedStatus(code string) bool {
	if len(code) != 3 {
		return true
	}
	switch code[0] {
	case '2', '3', '4':
		return false
	}
	return true
}

// lateBreakdown names the late errors by reason and status, most first.
func lateBreakdown(c *Cell) string {
	type kv struct {
		k string
		n int64
	}
	var all []kv
	for k, n := range c.LateReasons {
		all = append(all, kv{k, n})
	}
	for k, n := range c.LateCodes {
		if failedStatus(k) {
			all = append(all, kv{"status " + k, n})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].n > all[j].n || all[i].n == all[j].n && all[i].k < all[j].k })
	parts := make([]string, len(all))
	for i, x := range all {
		parts[i] = fmt.Sprintf("%s %d", x.k, x.n)
	}
	return strings.Join(parts, ", ")
}

// Classify fills the outcome classes and the derived ratios and rates from
// the in-window Codes and ErrorReasons, and the late share and late errors
// from Late, LateCodes and LateReasons.
func Classify(c *Cell) {
	var cl Classes
	var total, good int64
	c.Expected = scenario.Expected(c.Scenario)
	for code, n := range c.Codes {
		total += n
		if scenario.Matches(code, c.Expected) {
			good += n
		}
		switch {
		case code == "429":
			cl.S429 += n
		case strings.HasPrefix(code, "2") && len(code) == 3:
			cl.S2xx += n
		case strings.HasPrefix(code, "3") && len(code) == 3:
			cl.S3xx += n
		case strings.HasPrefix(code, "4") && len(code) == 3:
			cl.S4xx += n
		case strings.HasPrefix(code, "5") && len(code) == 3:
			cl.S5xx += n
		default:
			cl.Other += n
		}
	}
	for _, n := range c.ErrorReasons {
		cl.Transport += n
	}
	// Expected statuses that answered the wrong request are not goodput.
	good = max(0, good-c.WrongAnswers)
	c.Requests, c.TransportErrors, c.Classes, c.Unexpected = total, cl.Transport, cl, total-good
	attempts := total + cl.Transport
	c.ErrorRatio, c.RateLimitedRatio, c.RPS, c.GoodputRPS, c.OKRPS, c.LateShare = NaN(), NaN(), NaN(), NaN(), NaN(), NaN()
	if attempts > 0 {
		// The same failures as the recording rules (prometheus/README.md): 4xx
		// are counted by class, not as failures, since scenarios ask for 401,
		// 404 and 429 on purpose; a proxy answering a status its scenario does
		// not expect is flagged unexpected_status or misrouted instead.
		c.ErrorRatio = Num(float64(cl.Transport+cl.S5xx+cl.Other) / float64(attempts))
		c.RateLimitedRatio = Num(float64(cl.S429) / float64(attempts))
	}
	c.LateErrors, c.LateErrorRatio = 0, NaN()
	for code, n := range c.LateCodes {
		if failedStatus(code) {
			c.LateErrors += n
		}
	}
	for _, n := range c.LateReasons {
		c.LateErrors += n
	}
	if attempts+c.Late > 0 {
		c.LateShare = Num(float64(c.Late) / float64(attempts+c.Late))
		c.LateErrorRatio = Num(float64(c.LateErrors) / float64(attempts+c.Late))
	}
	if c.DurationS.Known() && c.DurationS > 0 {
		c.RPS = Num(float64(total) / float64(c.DurationS))
		c.GoodputRPS = Num(float64(good) / float64(c.DurationS))
		c.OKRPS = Num(float64(cl.S2xx) / float64(c.DurationS))
	}
}
