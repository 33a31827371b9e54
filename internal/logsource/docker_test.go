package logsource

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"proxybench/internal/dockerx"
)

// recorder is a Sink keeping every gc line in order, and counting resets.
type recorder struct {
	mu     sync.Mutex
	events []string // "gc N"
	resets int
	other  int
	closed bool
}

var gcLine = regexp.MustCompile(`^gc (\d+) @`)

func (r *recorder) Line(_ time.Time, l []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := gcLine.FindSubmatch(l); m != nil {
		r.events = append(r.events, "gc "+string(m[1]))
		return
	}
	r.other++
}

func (r *recorder) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resets++
}

func (r *recorder) snapshot() ([]string, int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...), r.other, r.closed
}

func (r *recorder) resetCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.resets
}

// flaky wraps the real engine and cuts the first log streams short after
// a few frames, as an engine going away mid-stream would. Restarting the
// shared engine itself would disturb everything else on the host, so
// only the broken stream is simulated; the data is real.
type flaky struct {
	*dockerx.Client
	mu    sync.Mutex
	cuts  int
	bytes int
}

func (f *flaky) Logs(ctx context.Context, id string, since time.Time, follow bool) (io.ReadCloser, error) {
	rc, err := f.Client.Logs(ctx, id, since, follow)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cuts == 0 {
		return rc, nil
	}
	f.cuts--
	return &cutReader{rc: rc, left: f.bytes}, nil
}

type cutReader struct {
	rc   io.ReadCloser
	left int
}

func (c *cutReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errors.New("simulated engine outage")
	}
	if len(p) > c.left {
		p = p[:c.left]
	}
	n, err := c.rc.Read(p)
	c.left -= n
	return n, err
}

func (c *cutReader) Close() error { return c.rc.Close() }

func buildGCProg(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "gcprog")
	cmd := exec.Command("go", "build", "-o", out, "./testdata/gcprog")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build gcprog: %v\n%s", err, b)
	}
	return out
}

func debianImage(t *testing.T) string {
	t.Helper()
	b, err := exec.Command("docker", "images", "--format", "{{.Repository}}:{{.Tag}}", "proxybench/debian").Output()
	if err != nil || len(bytes.TrimSpace(b)) == 0 {
		t.Skip("no local proxybench/debian image (never pulled)")
	}
	return strings.Fields(string(b))[0]
}

// TestDockerFollowsAcrossRestartsAndBreaks runs a real Go program with
// gctrace in a real container, restarts it twice and breaks the log
// stream, then checks the sink saw exactly the gc lines `docker logs`
// holds, each once, in order, and was told of both restarts.
func TestDockerFollowsAcrossRestartsAndBreaks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cli, err := dockerx.New(ctx)
	if err != nil {
		t.Skipf("no docker engine: %v", err)
	}
	defer cli.Close()
	img := debianImage(t)
	prog := buildGCProg(t)

	project := fmt.Sprintf("proxybench-logsource-test-%d", os.Getpid())
	name := project + "-gc"
	run := exec.Command("docker", "create", "--name", name, "--network", "none",
		"--label", dockerx.LabelProject+"="+project, "--label", dockerx.LabelService+"=gc", "--label", dockerx.LabelGCTrace+"=true",
		"-e", "GODEBUG=gctrace=1", "-v", prog+":/gcprog:ro", img, "/gcprog")
	if b, err := run.CombinedOutput(); err != nil {
		t.Fatalf("docker create: %v\n%s", err, b)
	}
	t.Cleanup(func() { exec.Command("docker", "rm", "-f", name).Run() })
	ctr, err := cli.Service(ctx, project, "gc")
	if err != nil {
		t.Fatal(err)
	}

	rec := &recorder{}
	eng := &flaky{Client: cli, cuts: 3, bytes: 3000}
	stop := following(ctx, projectSource(eng, project, rec))

	for i := 0; i < 3; i++ {
		if err := cli.Start(ctx, ctr.ID); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond)
		if err := cli.Stop(ctx, ctr.ID, 0); err != nil {
			t.Fatal(err)
		}
	}

	want, runs := dockerGCLines(t, name)
	deadline := time.Now().Add(20 * time.Second)
	var got []string
	for time.Now().Before(deadline) {
		if got, _, _ = rec.snapshot(); len(got) >= len(want) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // anything extra would show up now
	got, other, _ := rec.snapshot()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("sink saw %d events, docker logs hold %d; %s", len(got), len(want), firstDiff(got, want))
	}
	t.Logf("%d gc lines over %d runs, %d other lines", len(want), runs, other)
	// Three starts (a slow one under load may print no gc line at all).
	if n := rec.resetCount(); n != 2 {
		t.Errorf("sink told of %d restarts, want 2", n)
	}
	if other == 0 {
		t.Error("no stdout lines reached the sink")
	}
	if eng.cuts != 0 {
		t.Errorf("%d simulated outages unused", eng.cuts)
	}

	// Removing the container closes its sink.
	if b, err := exec.Command("docker", "rm", "-f", name).CombinedOutput(); err != nil {
		t.Fatalf("docker rm: %v %s", err, b)
	}
	for time.Now().Before(deadline) {
		if _, _, closed := rec.snapshot(); closed {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, _, closed := rec.snapshot(); !closed {
		t.Error("sink not closed after the container was removed")
	}
	if err := stop(); err != nil {
		t.Error(err)
	}
}

// projectSource follows the gctrace containers of project into rec, and
// marks rec closed when a container is removed.
func projectSource(eng Engine, project string, rec *recorder) *Docker {
	return &Docker{
		Engine:   eng,
		Labels:   []string{dockerx.LabelProject + "=" + project, dockerx.LabelGCTrace + "=true"},
		Open:     func(dockerx.Container) Sink { return rec },
		Close:    func(dockerx.Container, Sink) { rec.mu.Lock(); rec.closed = true; rec.mu.Unlock() },
		Log:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		Interval: 200 * time.Millisecond,
	}
}

// following runs src until the returned stop is called; stop returns what
// Run returned.
func following(ctx context.Context, src *Docker) (stop func() error) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx) }()
	return func() error { cancel(); return <-done }
}

// firstDiff describes where got and want part, with a few events of
// context, so a failure names the line lost or doubled.
func firstDiff(got, want []string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	lo := max(i-3, 0)
	return fmt.Sprintf("first difference at event %d: got %v, want %v",
		i, got[lo:min(i+4, len(got))], want[lo:min(i+4, len(want))])
}

// logTimestamp starts each message `docker logs --timestamps` prints.
var logTimestamp = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z `)

// dockerGCLines is the oracle: the gc lines of every run in `docker logs`,
// in order, and how many runs (processes) they came from. A process
// killed mid-line leaves a message without a newline, which the CLI
// prints glued to the next run's first line ("gc 40<ts> gc 1 @..."), so
// the output is split at each message's timestamp, not at newlines.
func dockerGCLines(t *testing.T, name string) ([]string, int) {
	t.Helper()
	b, err := exec.Command("docker", "logs", "--timestamps", name).CombinedOutput()
	if err != nil {
		t.Fatalf("docker logs: %v", err)
	}
	var out []string
	runs := 0
	torn := 0
	for _, msg := range logTimestamp.Split(string(b), -1) {
		m := gcLine.FindStringSubmatch(strings.TrimSpace(msg))
		if m == nil {
			if strings.HasPrefix(msg, "gc ") && !strings.HasSuffix(msg, "\n") {
				torn++
			}
			continue
		}
		if m[1] == "1" {
			runs++
		}
		out = append(out, "gc "+m[1])
	}
	if torn > 0 {
		t.Logf("%d gc lines torn by a kill in docker logs", torn)
	}
	if len(out) < 10 {
		t.Fatalf("only %d gc lines in docker logs; the program did not run as expected", len(out))
	}
	return out, runs
}

// TestDockerTornLastLine runs a real container twice whose process dies
// with a gc line half printed, as SIGKILL leaves it. Each torn line must
// reach the sink on its own, not glued to the next run's first line.
func TestDockerTornLastLine(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cli, err := dockerx.New(ctx)
	if err != nil {
		t.Skipf("no docker engine: %v", err)
	}
	defer cli.Close()
	img := debianImage(t)

	project := fmt.Sprintf("proxybench-torn-test-%d", os.Getpid())
	name := project + "-gc"
	script := `printf 'gc 1 @0.001s 0%%: 0.010+0.1+0.002 ms clock\n' >&2; printf 'gc 2 @0.002s 0%%: 0.0' >&2`
	if b, err := exec.Command("docker", "create", "--name", name, "--network", "none",
		"--label", dockerx.LabelProject+"="+project, "--label", dockerx.LabelGCTrace+"=true",
		img, "sh", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("docker create: %v\n%s", err, b)
	}
	t.Cleanup(func() { exec.Command("docker", "rm", "-f", name).Run() })

	rec := &recorder{}
	stop := following(ctx, projectSource(cli, project, rec))
	time.Sleep(500 * time.Millisecond) // following the created container
	for range 2 {
		if b, err := exec.Command("docker", "start", "-a", name).CombinedOutput(); err != nil {
			t.Fatalf("docker start: %v\n%s", err, b)
		}
		time.Sleep(1500 * time.Millisecond) // seen stopped before the next start
	}
	want := []string{"gc 1", "gc 2", "gc 1", "gc 2"}
	var got []string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if got, _, _ = rec.snapshot(); len(got) >= len(want) {
			break
		}
	}
	if err := stop(); err != nil {
		t.Error(err)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("sink saw %v, want %v (each torn line on its own)", got, want)
	}
}
