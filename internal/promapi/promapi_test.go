package promapi

import (
	"encoding/json"
	"math"
	"testing"
	"time"
)

func TestDecodePair(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in    string
		t     time.Time
		v     float64
		isErr bool
	}{
		{`[1700000000.25, "3.5"]`, time.UnixMilli(1700000000250), 3.5, false},
		{`[1700000000, "+Inf"]`, time.Unix(1700000000, 0), math.Inf(1), false},
		{`[1700000000, "NaN"]`, time.Unix(1700000000, 0), math.NaN(), false},
		{`[1700000000, {"count":"3","sum":"1"}]`, time.Unix(1700000000, 0), math.NaN(), false},
		{`[1700000000, "x"]`, time.Time{}, 0, true},
		{`[1700000000]`, time.Time{}, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			var pair []json.RawMessage
			if err := json.Unmarshal([]byte(tc.in), &pair); err != nil {
				t.Fatal(err)
			}
			ts, v, err := decodePair(pair)
			if (err != nil) != tc.isErr {
				t.Fatalf("err = %v, want error %v", err, tc.isErr)
			}
			if tc.isErr {
				return
			}
			if !ts.Equal(tc.t) || !(v == tc.v || (math.IsNaN(v) && math.IsNaN(tc.v))) {
				t.Fatalf("got %v %v, want %v %v", ts, v, tc.t, tc.v)
			}
		})
	}
}

func TestNewRejectsBadURL(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"", "127.0.0.1:9090", "ftp://x", "http://"} {
		if _, err := New(u, nil); err == nil {
			t.Errorf("New(%q) accepted a bad url", u)
		}
	}
}

func TestFormat(t *testing.T) {
	t.Parallel()
	if got := FormatTime(time.UnixMilli(1700000000250)); got != "1700000000.250" {
		t.Errorf("FormatTime = %s", got)
	}
	if got := Duration(6500 * time.Millisecond); got != "6500ms" {
		t.Errorf("Duration = %s", got)
	}
}

func FuzzDecodePair(f *testing.F) {
	f.Add([]byte(`[1700000000.25, "3.5"]`))
	f.Add([]byte(`[1, {"count":"1"}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var pair []json.RawMessage
		if json.Unmarshal(b, &pair) != nil {
			return
		}
		_, _, _ = decodePair(pair) // must not panic
	})
}
