package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// planSeeds are whole plan files: the repository's examples and the shapes
// that have hurt YAML decoders (anchors, tags, documents, odd scalars).
func planSeeds(f *testing.F) [][]byte {
	f.Helper()
	var out [][]byte
	for _, name := range []string{"testdata/good.yaml", "../../../plans/example.yaml", "testdata/unknown.yaml", "testdata/badduration.yaml"} {
		b, err := os.ReadFile(filepath.FromSlash(name))
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	for _, s := range []string{
		"", "null", "~", "[]", "5", "---\n---\n", "tier: quick\n---\ntier: soak\n",
		"stages: [{duration: 1s, target: 5}]\nmode: stages\n",
		"rate: .nan\n", "rate: .inf\nmode: open\n", "concurrency: 99999999999999999999\n",
		"repeats: 0x10\n", "warmup: -5s\n", "slo: {p99: 1h, error_ratio: 2}\n",
		"a: &x {b: *x}\n", "proxies: !!binary aGk=\n", "tier: [quick]\n", "\xef\xbb\xbftier: quick\n",
		"run: \"\\u0000\"\n", "results: \"\\t\"\nproject: ''\nisolate: false\n",
	} {
		out = append(out, []byte(s))
	}
	return out
}

// FuzzReadFile: a plan file, whole, through the entry `loadgen run -plan`
// uses. It never panics; a refusal names the file; a plan it accepts
// round-trips through YAML to the same plan.
func FuzzReadFile(f *testing.F) {
	for _, b := range planSeeds(f) {
		f.Add(b)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(dir, "plan.yaml")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := ReadFile(path)
		if err != nil {
			if msg := err.Error(); !strings.HasPrefix(msg, "plan file "+path+": ") || len(msg) == len("plan file "+path+": ") {
				t.Fatalf("error does not name the file %s and what is wrong: %q", path, msg)
			}
			return
		}
		out, err := yaml.Marshal(p)
		if err != nil {
			t.Fatalf("accepted plan does not encode: %v", err)
		}
		again, err := Parse(out)
		if err != nil {
			t.Fatalf("accepted plan does not read back: %v\n%s", err, out)
		}
		if out2, _ := yaml.Marshal(again); !bytes.Equal(out, out2) {
			t.Fatalf("plan does not round-trip through YAML:\n%s\n---\n%s", out, out2)
		}
	})
}

// FuzzLoad: the whole flag parsing of `loadgen run` (runner.Main hands its
// arguments to Load), with arbitrary argument lists (NUL-separated) and an
// optional plan file. It never panics; every refusal says where it comes
// from (a flag, the plan file, or the plan's validation); an accepted plan
// expands, and reloads to the same plan from its own flags and from its own
// YAML.
func FuzzLoad(f *testing.F) {
	for _, a := range []string{
		"", "-h", "-tier\x00medium", "-rate\x00500", "-rate=NaN", "-stages\x0010s:100,20s:300\x00-stage-kind\x00concurrency",
		"-isolate=false\x00-project=", "-isolate\x00false", "--proxies=nginx,,caddy\x00-origins\x00fast",
		"-concurrency\x00many", "-run\x00../etc", "-repeats\x000", "quick", "-slow-delay\x001.5ms", "-warmup=-1s",
		"-scenarios\x00all\x00-tier\x00all", "-results\x00 ", "-slo-error-ratio\x00NaN", "---x", "-\x00x", "--",
	} {
		f.Add(a, []byte(nil))
	}
	for _, b := range planSeeds(f) {
		f.Add("", b)
		f.Add("-repeats\x002\x00-proxies\x00caddy", b)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, argStr string, file []byte) {
		var args []string
		if argStr != "" {
			args = strings.Split(argStr, "\x00")
		}
		for _, a := range args {
			if name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "="); strings.HasPrefix(a, "-") && name == "plan" {
				return // -plan is the fuzzed file below, never a path of the fuzzer's choosing (/dev/zero)
			}
		}
		if len(file) > 0 {
			path := filepath.Join(dir, "plan.yaml")
			if err := os.WriteFile(path, file, 0o644); err != nil {
				t.Fatal(err)
			}
			args = append([]string{"-plan", path}, args...)
		}
		p, err := Load(args, now, io.Discard)
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		if err != nil {
			checkLoadError(t, args, err)
			return
		}
		x, err := p.Expand()
		if err != nil {
			t.Fatalf("valid plan %q does not expand: %v", args, err)
		}
		if e := x.Estimate(); e < 0 || len(x.Cells) == 0 {
			t.Fatalf("plan %q: %d cells, estimate %s", args, len(x.Cells), e)
		}
		if math.IsNaN(p.Rate) || math.IsInf(p.Rate, 0) || p.Rate < 0 {
			t.Fatalf("plan %q accepted rate %g", args, p.Rate)
		}

		// Round trip 1: the plan's own flags give the same plan.
		var flags []string
		for _, fl := range fields {
			flags = append(flags, "-"+fl.name+"="+fl.get(p))
		}
		fromFlags, err := Load(flags, now, io.Discard)
		if err != nil {
			t.Fatalf("plan %q: its own flags %q are refused: %v", args, flags, err)
		}
		samePlan(t, "its flags", p, fromFlags)

		// Round trip 2: the plan's own YAML gives the same plan.
		y, err := yaml.Marshal(p)
		if err != nil {
			t.Fatalf("plan %q does not encode: %v", args, err)
		}
		path := filepath.Join(dir, "again.yaml")
		if err := os.WriteFile(path, y, 0o644); err != nil {
			t.Fatal(err)
		}
		fromYAML, err := Load([]string{"-plan", path}, now, io.Discard)
		if err != nil {
			t.Fatalf("plan %q: its own YAML is refused: %v\n%s", args, err, y)
		}
		samePlan(t, "its YAML", p, fromYAML)
	})
}

// checkLoadError: a refusal of Load says where it comes from, so the user
// knows what to change.
func checkLoadError(t *testing.T, args []string, err error) {
	t.Helper()
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "plan file "): // ReadFile: names the file
	case strings.HasPrefix(msg, "flag -"): // a plan field's value, named with the flag
	case strings.HasPrefix(msg, "invalid plan:\n  "): // Validate: one line per field
	case strings.HasPrefix(msg, "unexpected argument "):
	case strings.HasPrefix(msg, "flag provided but not defined: -"),
		strings.HasPrefix(msg, "flag needs an argument: -"),
		strings.HasPrefix(msg, "bad flag syntax: "),
		strings.HasPrefix(msg, "invalid boolean value "),
		strings.HasPrefix(msg, "invalid value "): // package flag's own
	default:
		t.Fatalf("Load(%q): error %q does not say which flag, file or field is wrong", args, msg)
	}
}

// samePlan compares plans as the run records them (plan.json is JSON).
func samePlan(t *testing.T, how string, want, got *Plan) {
	t.Helper()
	a, err1 := json.Marshal(want)
	b, err2 := json.Marshal(got)
	if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
		t.Fatalf("plan does not round-trip through %s (%v %v):\n%s\n%s", how, err1, err2, a, b)
	}
}
