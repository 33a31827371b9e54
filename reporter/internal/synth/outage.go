package synth

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"time"
)

// Outage is a stretch in which Prometheus stored no sample: the scrapes at
// times in [From, To) are missing, as when Prometheus is stopped or cannot
// reach the targets. Only, when set, limits it to the series whose sample
// line holds it: `job="exporter"` for one target, `cell="<id>"` for one
// cell's window series (a loadgen that never got them scraped).
type Outage struct {
	From, To time.Time
	Only     string
}

// dropOutages removes from OpenMetrics text every sample an outage covers.
func (r *Run) dropOutages(om []byte) []byte {
	if len(r.Outages) == 0 {
		return om
	}
	var out bytes.Buffer
	out.Grow(len(om))
	for _, line := range bytes.SplitAfter(om, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		if line[0] != '#' && r.dropped(string(line)) {
			continue
		}
		out.Write(line)
	}
	return out.Bytes()
}

func (r *Run) dropped(line string) bool {
	line = strings.TrimSpace(line)
	i := strings.LastIndexByte(line, ' ')
	if i < 0 {
		return false
	}
	sec, err := strconv.ParseFloat(line[i+1:], 64)
	if err != nil {
		return false
	}
	t := time.UnixMilli(int64(math.Round(sec * 1000)))
	for _, o := range r.Outages {
		if !t.Before(o.From) && t.Before(o.To) && (o.Only == "" || strings.Contains(line, o.Only)) {
			return true
		}
	}
	return false
}
