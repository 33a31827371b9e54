package attack

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"proxybench/internal/manifest"
	"proxybench/loadgen/internal/wire/wiretest"
)

// counted is a real HTTP server that counts the requests it handled and
// the connections it accepted.
type counted = wiretest.Counted

func newCounted(t testing.TB, h http.HandlerFunc) *counted { return wiretest.NewCounted(t, h) }

var hello = wiretest.Hello

func newAttacker(t testing.TB, opts ...Option) (*Attacker, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	return New(NewMetrics(reg), opts...), reg
}

func mustRun(t testing.TB, a *Attacker, s Spec) *Result {
	t.Helper()
	res, err := a.Run(context.Background(), s, nil)
	if err != nil {
		t.Fatalf("run %+v: %v", s, err)
	}
	return res
}

// latency is the manifest's percentiles of res, as the runner records them.
func latency(res *Result) manifest.Latency { return manifest.LatencyOf(res.Hist) }

// gather renders reg in the text format.
func gather(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	return buf.String()
}

// grep keeps the lines of text that contain sub.
func grep(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
