package perfcmd

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// A tool is one load tool as `loadgen perf` runs it: its command line for
// a round and the reader of its request count from its output. Tools are
// rows of one table (tools), found by name.
type tool struct {
	// argv is the command line (after the taskset prefix) for c.
	argv func(c config) []string
	// stdin, when set, is written to the tool's standard input.
	stdin func(c config) string
	// requests reads how many requests completed from the tool's output.
	requests func(out string) (int64, error)
	// tls is true for the TLS table's tools (they load TLSURL).
	tls bool
	// baseline is the loadgen engine the tool is compared with ("" for a
	// loadgen engine itself), want the ratio of requests per CPU-second
	// the loadgen must reach against it (0: none set).
	baseline string
	want     float64
}

// loadgenAttack is `loadgen attack` with the extra flags.
func loadgenAttack(url func(c config) string, extra ...string) func(c config) []string {
	return func(c config) []string {
		return append(append([]string{c.Self, "attack"}, extra...),
			"-url", url(c), "-c", strconv.Itoa(c.Conns), "-d", c.Duration.String(), "-json", "-quiet")
	}
}

func plainURL(c config) string { return c.URL }
func tlsURL(c config) string   { return c.TLSURL }

// tools is every load tool `loadgen perf` knows, by name.
var tools = map[string]tool{
	"loadgen":         {argv: loadgenAttack(plainURL), requests: loadgenRequests},
	"loadgen-netpoll": {argv: loadgenAttack(plainURL, "-engine", "netpoll"), requests: loadgenRequests, baseline: "loadgen"},
	"loadgen-nethttp": {argv: loadgenAttack(plainURL, "-engine", "net-http"), requests: loadgenRequests, baseline: "loadgen"},
	"wrk": {argv: func(c config) []string {
		return []string{"wrk", "-t1", "-c", strconv.Itoa(c.Conns), "-d", seconds(c), c.URL}
	}, requests: wrkRequests, baseline: "loadgen", want: 0.8},
	"hey": {argv: func(c config) []string {
		return []string{"hey", "-c", strconv.Itoa(c.Conns), "-z", seconds(c), "-disable-compression", c.URL}
	}, requests: heyRequests, baseline: "loadgen", want: 1.5},
	"vegeta": {argv: func(c config) []string {
		n := strconv.Itoa(c.Conns)
		return []string{"sh", "-c", `"$0" attack -rate=0 -workers "$1" -max-workers "$1" -connections "$1" -duration "$2" | "$0" report`,
			c.Vegeta, n, seconds(c)}
	}, stdin: func(c config) string { return "GET " + c.URL + "\n" }, requests: vegetaRequests, baseline: "loadgen", want: 2},
	"loadgen-tls": {argv: func(c config) []string {
		return loadgenAttack(tlsURL, "-proto", "tls", "-ca", filepath.Join(c.CertDir, "ca.crt"))(c)
	}, requests: loadgenRequests, tls: true},
	"loadgen-h2": {argv: func(c config) []string {
		return loadgenAttack(tlsURL, "-proto", "h2", "-streams", strconv.Itoa(c.Streams), "-ca", filepath.Join(c.CertDir, "ca.crt"))(c)
	}, requests: loadgenRequests, tls: true},
	"wrk-tls": {argv: func(c config) []string {
		return []string{"wrk", "-t1", "-c", strconv.Itoa(c.Conns), "-d", seconds(c), c.TLSURL}
	}, requests: wrkRequests, tls: true, baseline: "loadgen-tls", want: 0.8},
	"h2load": {argv: func(c config) []string {
		return []string{"h2load", "-t1", "-c", strconv.Itoa(c.Conns), "-m", strconv.Itoa(c.Streams), "-D", strconv.Itoa(int(c.Duration.Seconds())), c.TLSURL}
	}, requests: h2loadRequests, tls: true, baseline: "loadgen-h2", want: 0.8},
}

// seconds is the duration as the other tools take it ("10s").
func seconds(c config) string { return strconv.Itoa(int(c.Duration.Seconds())) + "s" }

func loadgenRequests(out string) (int64, error) {
	// -json prints one JSON object; log lines may come before it.
	i := strings.Index(out, "{")
	if i < 0 {
		return 0, fmt.Errorf("no JSON summary")
	}
	var s struct {
		Requests *int64 `json:"requests"`
	}
	if err := json.NewDecoder(strings.NewReader(out[i:])).Decode(&s); err != nil || s.Requests == nil {
		return 0, fmt.Errorf("no \"requests\" in the JSON summary (%v)", err)
	}
	return *s.Requests, nil
}

var (
	wrkRE    = regexp.MustCompile(`(?m)^\s*(\d+) requests in `)
	heyRE    = regexp.MustCompile(`(?m)^\s*\[\d+\]\s+(\d+) responses\s*$`)
	vegetaRE = regexp.MustCompile(`(?m)^Requests\s+\[total, rate, throughput\]\s+(\d+),`)
	h2loadRE = regexp.MustCompile(`(?m)^requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded`)
)

// wrkRequests: "  170030 requests in 10.00s, 24.16MB read".
func wrkRequests(out string) (int64, error) { return one(wrkRE, out) }

// h2loadRequests: the succeeded of "requests: 100 total, 100 started,
// 100 done, 100 succeeded, 0 failed, 0 errored, 0 timeout".
func h2loadRequests(out string) (int64, error) { return one(h2loadRE, out) }

// vegetaRequests: the total of "Requests [total, rate, throughput] 62370,
// 6236.97, 6236.80" (vegeta report).
func vegetaRequests(out string) (int64, error) { return one(vegetaRE, out) }

// heyRequests: the sum of the status code distribution's "[200] 9126
// responses" lines.
func heyRequests(out string) (int64, error) {
	ms := heyRE.FindAllStringSubmatch(out, -1)
	if len(ms) == 0 {
		return 0, fmt.Errorf("no %q lines", "[code] N responses")
	}
	var n int64
	for _, m := range ms {
		v, _ := strconv.ParseInt(m[1], 10, 64)
		n += v
	}
	return n, nil
}

func one(re *regexp.Regexp, out string) (int64, error) {
	m := re.FindStringSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("no line matching %s", re)
	}
	return strconv.ParseInt(m[1], 10, 64)
}
