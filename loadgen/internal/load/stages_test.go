package load

import (
	"strings"
	"testing"
	"time"
)

func TestParseStages(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []Stage
		err  string
	}{
		{"10s:100,20s:500", []Stage{{Duration: 10 * time.Second, Target: 100}, {Duration: 20 * time.Second, Target: 500}}, ""},
		{" 1m : 0.5 ", []Stage{{Duration: time.Minute, Target: 0.5}}, ""},
		{"10s", nil, "want DURATION:TARGET"},
		{"10:100", nil, "not a positive Go duration"},
		{"-1s:100", nil, "not a positive Go duration"},
		{"1s:-3", nil, "not a number >= 0"},
		{"1s:NaN", nil, "not a number >= 0"},
		{"1s:1,", nil, "stage 2"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseStages(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || len(got) != len(tc.want) {
				t.Fatalf("%v %v", got, err)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("stage %d: %v, want %v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func FuzzParseStages(f *testing.F) {
	for _, s := range []string{"10s:100,20s:500", "1m:0", "", ",", "1s:1e9", "1h:1:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		st, err := ParseStages(s)
		if err != nil {
			return
		}
		for _, x := range st {
			if x.Duration <= 0 || x.Target < 0 || x.Target != x.Target {
				t.Fatalf("accepted %q as %v", s, x)
			}
		}
		if again, err := ParseStages(FormatStages(st)); err != nil || len(again) != len(st) {
			t.Fatalf("%q does not round-trip: %v", s, err)
		}
	})
}
