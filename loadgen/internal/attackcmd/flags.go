package attackcmd

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"proxybench/loadgen/internal/load"
)

// ParseStages reads "10s:100,20s:500": each stage ramps linearly from the
// previous target to its own over its duration.
func ParseStages(s string) ([]load.Stage, error) {
	var out []load.Stage
	for i, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		d, t, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("stage %d %q: want DURATION:TARGET, e.g. 10s:100", i+1, part)
		}
		dur, err := time.ParseDuration(strings.TrimSpace(d))
		if err != nil || dur <= 0 {
			return nil, fmt.Errorf("stage %d %q: duration %q is not a positive Go duration like 10s", i+1, part, d)
		}
		target, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
		if err != nil || target < 0 || target != target || target > 1e9 {
			return nil, fmt.Errorf("stage %d %q: target %q is not a number >= 0", i+1, part, t)
		}
		out = append(out, load.Stage{Duration: dur, Target: target})
	}
	return out, nil
}

// headerFlag collects repeated -H "Name: value".
type headerFlag struct{ h http.Header }

func (f *headerFlag) String() string { return "" }

func (f *headerFlag) Set(v string) error {
	name, val, ok := strings.Cut(v, ":")
	name = strings.TrimSpace(name)
	if !ok || name == "" || strings.ContainsAny(name, " \t") {
		return fmt.Errorf("header %q: want \"Name: value\"", v)
	}
	if f.h == nil {
		f.h = http.Header{}
	}
	f.h.Add(name, strings.TrimSpace(val))
	return nil
}
