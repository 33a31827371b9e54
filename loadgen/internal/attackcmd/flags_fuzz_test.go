package attackcmd

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"proxybench/loadgen/internal/load"
)

// FuzzFlags: the whole flag parsing of `loadgen attack` with an arbitrary
// argument list (NUL-separated). Bad input is an error that names the flag
// or argument at fault, never a panic; what is accepted is what the flags
// document (mode, stages, headers, the in-flight default), and parsing is
// deterministic.
func FuzzFlags(f *testing.F) {
	body := filepath.Join(f.TempDir(), "body")
	if err := os.WriteFile(body, []byte("hello"), 0o644); err != nil {
		f.Fatal(err)
	}
	for _, a := range []string{
		"", "-h", "-url\x00http://127.0.0.1:1/\x00-c\x005", "-rate\x00100", "-rate=NaN", "-rate=-1",
		"-stages\x0010s:100,20s:500\x00-stage-kind\x00concurrency", "-stages\x0010s", "-stages=1s:1,",
		"-mode\x00open", "-mode\x00turbo", "-H\x00X-Api-Key: k1\x00-H\x00Accept:", "-H\x00novalue", "-H\x00a b: c", "-H\x00: v",
		"-knee\x00-knee-start\x000", "-c\x0099999999999999999999", "-d\x00-1s", "-timeout\x00forever", "-new-conn=maybe",
		"extra", "-url\x00http://x/\x00--\x00-c", "---c", "-", "-c", "-json\x00-quiet\x00-engine\x00netpoll",
		"-body-file\x00" + body + "\x00-method\x00POST",
	} {
		f.Add(a)
	}
	f.Fuzz(func(t *testing.T, argStr string) {
		var args []string
		if argStr != "" {
			args = strings.Split(argStr, "\x00")
		}
		for i, a := range args {
			// -body-file reads a path: only the seed's file, never one of the
			// fuzzer's choosing (/dev/zero, /dev/stdin).
			name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if !strings.HasPrefix(a, "-") || name != "body-file" {
				continue
			}
			if !hasVal && i+1 < len(args) {
				val = args[i+1]
			}
			if val != body {
				return
			}
		}
		o, err := parse(args, io.Discard)
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		if err != nil {
			msg := err.Error()
			switch {
			case strings.HasPrefix(msg, "unexpected argument "), strings.HasPrefix(msg, "-stages: stage "),
				strings.HasPrefix(msg, "-body-file: "), strings.HasPrefix(msg, "-mode "), strings.HasPrefix(msg, "-stage-kind "),
				strings.HasPrefix(msg, "-warmup "),
				strings.HasPrefix(msg, "flag provided but not defined: -"), strings.HasPrefix(msg, "flag needs an argument: -"),
				strings.HasPrefix(msg, "bad flag syntax: "), strings.HasPrefix(msg, "invalid value "),
				strings.HasPrefix(msg, "invalid boolean value "):
			default:
				t.Fatalf("parse(%q): error %q does not name the flag or argument at fault", args, msg)
			}
			return
		}
		s := o.spec
		mode := s.Load.Name()
		switch {
		case o.mode != "" && mode != o.mode,
			o.mode == "" && o.stages != "" && mode != load.NameStages,
			o.mode == "" && o.stages == "" && o.rate > 0 && mode != load.NameOpen,
			o.mode == "" && o.stages == "" && !(o.rate > 0) && mode != load.NameClosed:
			t.Fatalf("parse(%q): mode %q with -mode %q -stages %q -rate %g", args, mode, o.mode, o.stages, o.rate)
		}
		var stages []load.Stage
		inFlight := 0
		switch m := s.Load.(type) {
		case load.Closed:
			if m.Connections != o.conc || m.Duration != o.duration {
				t.Fatalf("parse(%q): %+v, want -c %d -d %v", args, m, o.conc, o.duration)
			}
		case load.Open:
			if m.Rate != o.rate && !math.IsNaN(o.rate) || m.Duration != o.duration {
				t.Fatalf("parse(%q): %+v, want -rate %g -d %v", args, m, o.rate, o.duration)
			}
			inFlight = m.MaxInFlight
		case load.RateStages:
			stages, inFlight = m.Stages, m.MaxInFlight
		case load.ConcurrencyStages:
			stages = m.Stages
		default:
			t.Fatalf("parse(%q): load %T", args, s.Load)
		}
		if o.stages != "" && mode == load.NameStages && len(stages) == 0 {
			t.Fatalf("parse(%q): -stages %q gave no stage", args, o.stages)
		}
		for _, st := range stages {
			if st.Duration <= 0 || !(st.Target >= 0) || st.Target > 1e9 {
				t.Fatalf("parse(%q): accepted stage %+v", args, st)
			}
		}
		for name := range s.Header {
			if name == "" || strings.ContainsAny(name, " \t") {
				t.Fatalf("parse(%q): accepted header name %q", args, name)
			}
		}
		cSet := false // over-approximated: any argument spelled like -c
		for _, a := range args {
			if name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "="); strings.HasPrefix(a, "-") && name == "c" {
				cSet = true
			}
		}
		if !cSet && s.Load.Pacer() != nil && inFlight != load.DefaultMaxInFlight || !cSet && o.knee && o.kneeOpts.MaxInFlight != load.DefaultMaxInFlight {
			t.Fatalf("parse(%q): open loop without -c caps in-flight at %d (knee %d), want %d", args, inFlight, o.kneeOpts.MaxInFlight, load.DefaultMaxInFlight)
		}
		again, err := parse(args, io.Discard)
		if err != nil || fmt.Sprintf("%+v", o) != fmt.Sprintf("%+v", again) { // %v: NaN equals itself
			t.Fatalf("parse(%q) is not deterministic: %+v then %+v (%v)", args, o, again, err)
		}
	})
}
