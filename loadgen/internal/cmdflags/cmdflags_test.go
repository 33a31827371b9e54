package cmdflags

import (
	"bytes"
	"flag"
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		args   []string
		rc     int
		ok     bool
		stderr string
	}{
		{nil, 0, true, ""},
		{[]string{"-n", "3"}, 0, true, ""},
		{[]string{"-h"}, 0, false, "Usage"},
		{[]string{"-bogus"}, 2, false, "bogus"},
		{[]string{"-n", "3", "extra"}, 2, false, `loadgen x: unexpected argument "extra"`},
	} {
		var stderr bytes.Buffer
		fs := flag.NewFlagSet("loadgen x", flag.ContinueOnError)
		fs.SetOutput(&stderr)
		fs.Int("n", 1, "")
		rc, ok := Parse(fs, c.args, &stderr)
		if rc != c.rc || ok != c.ok || !strings.Contains(stderr.String(), c.stderr) {
			t.Errorf("%q: rc %d ok %v stderr %q; want %d %v and %q", c.args, rc, ok, stderr.String(), c.rc, c.ok, c.stderr)
		}
	}
}

func TestList(t *testing.T) {
	for in, want := range map[string][]string{
		"": nil, ",": nil, "nginx": {"nginx"}, " nginx, caddy ,": {"nginx", "caddy"}, "a,,b": {"a", "b"},
	} {
		if got := List(in); !slices.Equal(got, want) {
			t.Errorf("List(%q) = %q, want %q", in, got, want)
		}
	}
}
