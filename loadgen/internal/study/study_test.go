package study

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"proxybench/internal/studydata"
)

// TestCommandRunsAStudyByName runs a study through the command and reads
// back the record it wrote: the samples and checks the study added, its
// status, and the run id on stdout.
func TestCommandRunsAStudyByName(t *testing.T) {
	results := t.TempDir()
	ran := Study{Name: "two", Run: func(ctx context.Context, e *Env) error {
		e.Record().Title = "two samples"
		for i := 0; i < 2; i++ {
			if err := e.Add(studydata.Sample{Variant: "v", Repeat: i + 1, Values: map[string]float64{"x": float64(i)}}); err != nil {
				return err
			}
		}
		return e.AddCheck("ran", true, "%d samples", len(e.Record().Samples))
	}}
	failed := Study{Name: "broken", Run: func(context.Context, *Env) error { return errors.New("no tool") }}
	cmd := Command(ran, failed)
	log := slog.New(slog.DiscardHandler)
	var out, errOut bytes.Buffer
	if code := cmd(context.Background(), []string{"-study", "two", "-run", "r1", "-results", results, "-placement", "none", "-scale", "tiny"}, &out, &errOut, log); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if strings.TrimSpace(out.String()) != "r1" {
		t.Errorf("stdout %q, want the run id", out.String())
	}
	r, err := studydata.Read(filepath.Join(results, "r1", studydata.File))
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != studydata.StatusDone || r.Study != "two" || r.Scale != ScaleTiny || r.Title != "two samples" || len(r.Samples) != 2 ||
		r.Samples[1].Order != 2 || len(r.Checks) != 1 || !r.Checks[0].OK {
		t.Errorf("record %+v", r)
	}
	out.Reset()
	errOut.Reset()
	if code := cmd(context.Background(), []string{"-study", "broken", "-run", "r2", "-results", results, "-placement", "none"}, &out, &errOut, log); code != 1 ||
		!strings.Contains(errOut.String(), "no tool") {
		t.Errorf("a failing study: exit %d, %q", code, errOut.String())
	}
	if r, err := studydata.Read(filepath.Join(results, "r2", studydata.File)); err != nil || r.Status != studydata.StatusFailed || r.Error != "no tool" {
		t.Errorf("a failing study's record: %+v, %v", r, err)
	}
}

// TestCommandRefusesBadInput: every bad flag ends with exit 2 and a line
// naming the flag and what to do, before anything runs.
func TestCommandRefusesBadInput(t *testing.T) {
	t.Parallel()
	cmd := Command(Study{Name: "one", Run: func(context.Context, *Env) error { t.Error("the study ran"); return nil }})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-study", "nope"}, `-study "nope": choose one of one`},
		{[]string{"-study", "one", "-scale", "huge"}, `-scale "huge": use tiny or full`},
		{[]string{"-study", "one", "-repeats", "-1"}, "-repeats -1"},
		{[]string{"-study", "one", "extra"}, `unexpected argument "extra"`},
		{[]string{"-study", "one", "-placement", "none", "-run", "a/b", "-results", t.TempDir()}, "one path element"},
	} {
		var errOut bytes.Buffer
		if code := cmd(context.Background(), tc.args, io.Discard, &errOut, slog.New(slog.DiscardHandler)); code != 2 || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tc.args, code, errOut.String(), tc.want)
		}
	}
}
