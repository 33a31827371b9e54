package manifest

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestSkipText(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		skip *Skip
		want string
	}{
		{&Skip{Kind: SkipNotApplicable, Reason: "no plugin"}, "n/a: no plugin"},
		{&Skip{Kind: SkipPreflight, Reason: "preflight: refused"}, "preflight: refused"},
		{nil, ""},
	} {
		if got := tt.skip.Text(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.skip, got, tt.want)
		}
	}
}

// TestReadOlderSkips: a manifest written before cells carried skip says n/a
// only in the reason's text; Read gives its skipped cells their Skip and
// leaves those that carry one as they are.
func TestReadOlderSkips(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "manifest.json")
	old := `{"schema":1,"run":"r","status":"done","cells":[
{"id":"a","status":"skipped","reason":"n/a: no native rate limit"},
{"id":"b","status":"skipped","reason":"preflight: refused"},
{"id":"c","status":"skipped","reason":"n/a: kept","skip":{"kind":"not_ready","reason":"kept"}},
{"id":"d","status":"ok"}]}`
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []*Skip{{Kind: SkipNotApplicable, Reason: "no native rate limit"}, {Kind: SkipUnspecified, Reason: "preflight: refused"},
		{Kind: SkipNotReady, Reason: "kept"}, nil}
	for i, c := range m.Cells {
		if !reflect.DeepEqual(c.Skip, want[i]) {
			t.Errorf("cell %s: skip %+v, want %+v", c.ID, c.Skip, want[i])
		}
	}
}
