package attackcmd

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"proxybench/internal/manifest"
	"proxybench/loadgen/internal/attack"
	"proxybench/loadgen/internal/load"
)

// Summary is the JSON form of one attack (-json).
type Summary struct {
	URL          string           `json:"url"`
	Protocol     string           `json:"protocol"`          // h1, tls, h2, h3
	Streams      int              `json:"streams,omitempty"` // h2, h3: requests in flight per connection
	TLS          *manifest.TLS    `json:"tls,omitempty"`     // what the handshakes negotiated and counted
	Mode         string           `json:"mode"`
	Concurrency  int              `json:"concurrency"`
	Rate         float64          `json:"rate_rps,omitempty"`
	Interrupted  bool             `json:"interrupted,omitempty"`
	WarmupStart  time.Time        `json:"warmup_start"`
	Start        time.Time        `json:"start"`
	End          time.Time        `json:"end"`
	WindowS      float64          `json:"window_seconds"`
	Requests     int64            `json:"requests"`
	Errors       int64            `json:"errors"`
	RPS          float64          `json:"rps"`
	Bytes        int64            `json:"bytes"`
	Scheduled    int64            `json:"scheduled,omitempty"`
	Sent         int64            `json:"sent,omitempty"`
	Missed       int64            `json:"missed,omitempty"`   // open loop: due in the window, never sent
	Capped       int64            `json:"capped,omitempty"`   // open loop: sends that waited because max in flight was reached
	MaxRate      float64          `json:"max_rate,omitempty"` // -max-rate: the cap on the send rate, requests/s
	Held         int64            `json:"held,omitempty"`     // sends the -max-rate cap held
	LagP99S      float64          `json:"lag_p99_seconds,omitempty"`
	WrongOrigin  int64            `json:"wrong_origin,omitempty"`
	Codes        map[string]int64 `json:"codes"`
	ErrorReasons map[string]int64 `json:"error_reasons,omitempty"`
	Late         int64            `json:"late,omitempty"` // completed after the planned end: not in requests, errors or rps
	LateCodes    map[string]int64 `json:"late_codes,omitempty"`
	LateReasons  map[string]int64 `json:"late_reasons,omitempty"`
	DrainEnd     *time.Time       `json:"drain_end,omitempty"`
	Latency      manifest.Latency `json:"latency"` // the window's responses, late ones included
}

// summarize is the JSON form of r, the window of o's attack; warmStart is
// when its warm-up began, zero without one.
func summarize(o *options, r *attack.Result, warmStart time.Time, interrupted bool) Summary {
	if warmStart.IsZero() {
		warmStart = r.Start
	}
	s := Summary{
		URL: o.spec.URL, Mode: o.spec.Load.Name(), Concurrency: o.conc, Rate: o.rate,
		Interrupted: interrupted, WarmupStart: warmStart, Start: r.Start, End: r.End, WindowS: r.Window(),
		Requests: r.Requests, Errors: r.Errors, RPS: r.RPS(), Bytes: r.Bytes, Scheduled: r.Scheduled, Sent: r.Sent,
		WrongOrigin: r.WrongOrigin, Codes: map[string]int64{}, ErrorReasons: r.ErrorReasons, Latency: manifest.LatencyOf(r.Hist),
		Missed: r.Missed, Capped: r.Capped, MaxRate: o.spec.MaxRate, Held: r.Held, LagP99S: r.LagP99.Seconds(), Late: r.Late,
		Protocol: string(r.Protocol), TLS: r.TLS,
	}
	if o.spec.Streams > 1 {
		s.Streams = o.spec.Streams
	}
	for c, n := range r.Codes {
		s.Codes[strconv.Itoa(c)] = n
	}
	if len(r.LateCodes) > 0 {
		s.LateCodes = map[string]int64{}
		for c, n := range r.LateCodes {
			s.LateCodes[strconv.Itoa(c)] = n
		}
	}
	if len(r.LateReasons) > 0 {
		s.LateReasons = r.LateReasons
	}
	if !r.DrainEnd.IsZero() {
		de := r.DrainEnd
		s.DrainEnd = &de
	}
	return s
}

func writeResult(w io.Writer, o *options, r *attack.Result, warmStart time.Time, interrupted bool) error {
	s := summarize(o, r, warmStart, interrupted)
	if o.json {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	var b strings.Builder
	what := o.spec.Load.String()
	conn := "keep-alive"
	if o.spec.NewConnPerRequest {
		conn = "new connection per request"
	}
	if s.Streams > 1 {
		conn += fmt.Sprintf(", %d streams per connection", s.Streams)
	}
	fmt.Fprintf(&b, "%s %s: %s, %s, %s\n", o.spec.Method, s.URL, what, s.Protocol, conn)
	if interrupted {
		b.WriteString("INTERRUPTED: the numbers cover the part that ran\n")
	}
	if t := s.TLS; t != nil {
		fmt.Fprintf(&b, "  tls          %s, %s, ALPN %q; handshakes: %d full, %d resumed, %d certificate errors",
			t.Version, t.Cipher, t.ALPN, t.HandshakesFull, t.HandshakesResumed, t.CertErrors)
		for _, x := range []struct {
			n    int64
			what string
		}{{t.ALPNMismatches, "ALPN mismatches (another protocol than asked)"}, {t.VersionRefused, "refused versions"}, {t.HandshakeErrors, "other failures"}} {
			if x.n > 0 {
				fmt.Fprintf(&b, ", %d %s", x.n, x.what)
			}
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "  window       %.3fs (after %.3fs warm-up)\n", s.WindowS, s.Start.Sub(s.WarmupStart).Seconds())
	fmt.Fprintf(&b, "  requests     %d  (%.1f/s)\n", s.Requests, s.RPS)
	fmt.Fprintf(&b, "  errors       %d%s\n", s.Errors, reasons(s.ErrorReasons))
	fmt.Fprintf(&b, "  body bytes   %d\n", s.Bytes)
	if s.Late > 0 {
		fmt.Fprintf(&b, "  late         %d completed after the window (drained by +%.3fs), not counted above:", s.Late, s.DrainEnd.Sub(s.End).Seconds())
		if len(s.LateCodes) > 0 {
			fmt.Fprintf(&b, " status codes%s", codes(s.LateCodes))
		}
		if len(s.LateReasons) > 0 {
			if len(s.LateCodes) > 0 {
				b.WriteString(";")
			}
			fmt.Fprintf(&b, " errors%s", reasons(s.LateReasons))
		}
		b.WriteString("\n")
	}
	if s.Scheduled > 0 {
		pct := 100 * float64(s.Sent) / float64(s.Scheduled)
		fmt.Fprintf(&b, "  open loop    scheduled %d, sent %d (%.2f%%), missed %d, capped %d (max in flight reached), lag p99 %s\n",
			s.Scheduled, s.Sent, pct, s.Missed, s.Capped, d(s.LagP99S))
	}
	if o.spec.ExpectOrigin != "" {
		fmt.Fprintf(&b, "  wrong origin %d\n", s.WrongOrigin)
	}
	fmt.Fprintf(&b, "  status codes%s\n", codes(s.Codes))
	l := s.Latency
	latency := "from the actual send"
	if o.spec.Load.Pacer() != nil { // an open loop
		latency = "from the intended send: coordinated omission corrected"
	}
	if s.Late > 0 {
		latency += ", late ones included"
	}
	fmt.Fprintf(&b, "Latency (HdrHistogram, %d responses, %s)\n", l.Count, latency)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  min\tp50\tp90\tp95\tp99\tp99.9\tp99.99\tmax\tmean\tstddev\t")
	fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", d(l.Min), d(l.P50), d(l.P90), d(l.P95), d(l.P99),
		d(l.P999), d(l.P9999), d(l.Max), d(l.Mean), d(l.Stddev))
	tw.Flush()
	_, err := io.WriteString(w, b.String())
	return err
}

func d(sec float64) string {
	return time.Duration(sec * float64(time.Second)).Round(time.Microsecond).String()
}

func reasons(m map[string]int64) string { return kv(m, " (", ")") }
func codes(m map[string]int64) string   { return kv(m, " ", "") }

func kv(m map[string]int64, open, close string) string {
	if len(m) == 0 {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, m[k])
	}
	return open + strings.Join(parts, ", ") + close
}

type kneeJSON struct {
	LastHeld float64 `json:"last_held_rps"`
	// With -ceiling: the instrument's ceiling. Invalid: the knee is at or
	// above manifest.CeilingFraction of it, or its last step broke for
	// the loadgen (then it is not the target's).
	Ceiling       float64    `json:"ceiling_rps,omitempty"`
	Invalid       bool       `json:"invalid,omitempty"`
	InvalidReason string     `json:"invalid_reason,omitempty"`
	Steps         []kneeStep `json:"steps"`
}

type kneeStep struct {
	Rate    float64 `json:"rate_rps"`
	Held    bool    `json:"held"`
	Retried bool    `json:"retried,omitempty"` // the loadgen alone broke it: the next step is another run at this rate
	Why     string  `json:"why,omitempty"`
	// StallS is the longest the loadgen's process could not run during
	// the step, in seconds.
	StallS  float64 `json:"stall_seconds"`
	Summary Summary `json:"result"`
}

func writeKnee(w io.Writer, o *options, last float64, steps []attack.KneeStep) error {
	if o.json {
		out := kneeJSON{LastHeld: last, Ceiling: o.ceiling}
		out.InvalidReason, out.Invalid = attack.KneeValidity(o.ceiling, last, steps)
		for _, s := range steps {
			oo := *o
			oo.rate = s.Rate
			oo.spec.Load = load.Open{Rate: s.Rate, MaxInFlight: o.kneeOpts.MaxInFlight, Duration: o.kneeOpts.StepDuration}
			out.Steps = append(out.Steps, kneeStep{s.Rate, s.Held, s.Retried, s.Why, s.Stall.Seconds(), summarize(&oo, s.Result, s.WarmupStart, false)})
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "rate/s\tachieved/s\tp50\tp99\terrors\tmissed\tcapped\theld\t")
	for _, s := range steps {
		l := manifest.LatencyOf(s.Result.Hist)
		held := "yes"
		if !s.Held {
			held = "no: " + s.Why
		}
		if s.Retried {
			held = "run again: " + s.Why
		}
		fmt.Fprintf(tw, "%g\t%.1f\t%s\t%s\t%d\t%d\t%d\t%s\t\n", s.Rate, s.Result.RPS(), d(l.P50), d(l.P99), s.Result.Errors,
			s.Result.Missed, s.Result.Capped, held)
	}
	tw.Flush()
	if _, err := fmt.Fprintf(w, "breaking point: last rate that held %g requests/s\n", last); err != nil {
		return err
	}
	if why, bad := attack.KneeValidity(o.ceiling, last, steps); bad {
		_, err := fmt.Fprintf(w, "invalid: %s\n", why)
		return err
	}
	return nil
}
