package runner

import (
	"bufio"
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/client"
	"golang.org/x/sys/unix"

	"proxybench/internal/manifest"
)

// HostInfo describes the machine the run happens on. Each part that cannot
// be read is left empty rather than failing the run.
func HostInfo(ctx context.Context) manifest.Host {
	h := manifest.Host{OS: runtime.GOOS, CPUs: runtime.NumCPU(), Loadgen: loadgenVersion()}
	h.Hostname, _ = os.Hostname()
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		h.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	if v := field("/etc/os-release", "PRETTY_NAME="); v != "" {
		h.OS = runtime.GOOS + " (" + strings.Trim(v, `"`) + ")"
	}
	h.CPUModel = field("/proc/cpuinfo", "model name")
	if kb := field("/proc/meminfo", "MemTotal:"); kb != "" {
		n, _ := strconv.ParseUint(strings.TrimSuffix(kb, " kB"), 10, 64)
		h.MemBytes = n * 1024
	}
	h.Docker = dockerVersion(ctx)
	return h
}

// field returns the value after prefix (and an optional ':') on the first
// matching line of a /proc style file.
func field(path, prefix string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), prefix); ok {
			v = strings.TrimSpace(v)
			return strings.TrimSpace(strings.TrimPrefix(v, ":"))
		}
	}
	return ""
}

func loadgenVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	v := bi.Main.Version
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v += " " + s.Value
		case "vcs.modified":
			if s.Value == "true" {
				v += "+dirty"
			}
		}
	}
	return strings.TrimSpace(v + " " + bi.GoVersion)
}

// exitInfo says how a container's process ended, e.g. "code 137, OOM
// killed"; "" when the engine cannot tell. dockerx.Container carries no
// exit code, so this asks the engine directly.
func exitInfo(ctx context.Context, id string) string {
	return askEngine(ctx, func(ctx context.Context, c *client.Client) string {
		r, err := c.ContainerInspect(ctx, id)
		if err != nil || r.State == nil {
			return ""
		}
		s := "code " + strconv.Itoa(r.State.ExitCode)
		if r.State.OOMKilled {
			s += ", OOM killed"
		}
		return s
	})
}

// dockerVersion asks the engine for its version; "" when there is none.
func dockerVersion(ctx context.Context) string {
	return askEngine(ctx, func(ctx context.Context, c *client.Client) string {
		v, err := c.ServerVersion(ctx)
		if err != nil {
			return ""
		}
		return v.Version + " (API " + v.APIVersion + ")"
	})
}

// askEngine runs one question to the engine within 3 s; "" when the
// engine cannot be reached.
func askEngine(ctx context.Context, ask func(context.Context, *client.Client) string) string {
	c, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return ""
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	return ask(ctx, c)
}
