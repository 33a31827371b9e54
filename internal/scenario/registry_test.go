package scenario

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"proxybench/internal/stack"
)

var defaults = Settings{AuthInvalid: 0.1, RateLimitOffered: 1500, SlowDelay: 2 * time.Second}

func TestRegistry(t *testing.T) {
	t.Parallel()
	if got := strings.Join(Names(), ","); got != "simple,auth,ratelimit,slow,payload-1k,payload-64k,payload-1m,upload-64k,churn,"+
		"tls,h2,tls-handshake-full,tls-handshake-resumed,h2-payload-64k,h2-payload-1m,h3,faults" {
		t.Errorf("registry order %s", got)
	}
	for _, sc := range List() {
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			if sc.NotReady != "" {
				t.Errorf("scenario %s is still not ready: %s", sc.Name, sc.NotReady)
			}
			if path := sc.Path("fast", defaults); !strings.HasPrefix(path, "/") || !strings.Contains(path, "fast") {
				t.Errorf("path %q does not route to origin fast", path)
			}
			for proxy, why := range sc.NA {
				if _, err := stack.LookupProxy(proxy); err != nil || why == "" {
					t.Errorf("n/a entry %q: %v (reason %q)", proxy, err, why)
				}
			}
			var share float64
			for _, v := range sc.VariantsFor(defaults) {
				share += v.Share
			}
			if math.Abs(share-1) > 1e-9 {
				t.Errorf("variant shares add up to %g, want 1", share)
			}
			if sh := sc.Resolve(defaults); sh.Def != sc {
				t.Errorf("resolved shape does not point back at its scenario")
			}
			if sc.About == "" {
				t.Error("no About")
			}
		})
	}
}

func TestGroups(t *testing.T) {
	t.Parallel()
	if got := strings.Join(GroupNames(), ","); got != "payload,tls-handshake,h2-payload,all" {
		t.Errorf("groups %s", got)
	}
	if got := strings.Join(Group(PayloadGroup), ","); got != "payload-1k,payload-64k,payload-1m,upload-64k" {
		t.Errorf("payload group %s", got)
	}
	got := strings.Join(ExpandGroups([]string{"churn", "payload", "payload-64k", "simple"}), ",")
	if want := "churn,payload-1k,payload-64k,payload-1m,upload-64k,payload-64k,simple"; got != want {
		t.Errorf("expanded %s, want %s", got, want)
	}
	if got := len(ExpandGroups([]string{All})); got != len(List()) {
		t.Errorf("all is %d scenarios, want %d", got, len(List()))
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	if sc, err := Lookup("auth"); err != nil || sc.Name != "auth" {
		t.Errorf("auth: %v %v", sc, err)
	}
	_, err := Lookup("nope")
	want := `unknown scenario "nope" (known: simple, auth, ratelimit, slow, payload-1k, payload-64k, payload-1m, upload-64k, churn, tls, h2, tls-handshake-full, tls-handshake-resumed, h2-payload-64k, h2-payload-1m, h3, faults, all (group), h2-payload (group), payload (group), tls-handshake (group))`
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
	if Get("nope") != nil || Expected("nope")[0] != "2xx" {
		t.Error("an unknown scenario is not nil or does not expect 2xx")
	}
}

func TestRegisterRejectsClashes(t *testing.T) {
	t.Parallel()
	for _, sc := range []Scenario{
		{Name: "simple", Rank: 1, Path: simple.Path},
		{Name: "other", Rank: simple.Rank, Path: simple.Path},
		{Name: "other", Rank: 1, Path: simple.Path, Groups: []string{"simple"}},
		{Name: "other", Rank: 1},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("register(%s, rank %d, groups %v) did not panic", sc.Name, sc.Rank, sc.Groups)
				}
			}()
			register(&sc)
		}()
	}
}

// testFormat formats plainly, so row tests read their numbers.
type testFormat struct{}

func (testFormat) Int(n int64) string { return strconv.FormatInt(n, 10) }
func (testFormat) Num(v float64, digits int) string {
	if math.IsNaN(v) {
		return "–"
	}
	return strconv.FormatFloat(v, 'f', digits, 64)
}
func (testFormat) Pct(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return strconv.FormatFloat(v*100, 'f', 1, 64) + " %"
}
func (f testFormat) Dur(s float64) string { return f.Num(s, 3) + " s" }
func (f testFormat) MB(b float64) string  { return f.Num(b/1e6, 1) }

func texts(fs []Field) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Text
	}
	return out
}

// row checks a table's row has a field per header.
func row(t *testing.T, tb *Table, c ReportCell) ([]Field, bool) {
	t.Helper()
	fs, ok := tb.Row(c, testFormat{})
	if ok && len(fs) != len(tb.Header) {
		t.Errorf("%s: %d fields for %d columns", tb.Caption, len(fs), len(tb.Header))
	}
	return fs, ok
}
