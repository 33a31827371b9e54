// Package hostinfo owns describing the machine a run happens on, for the
// manifest and the study records: OS and kernel, CPU model and count,
// memory, the loadgen's own build and the Docker engine's version. Each
// part that cannot be read is left empty rather than failing the caller.
package hostinfo

import (
	"bufio"
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"proxybench/internal/dockerx"
	"proxybench/internal/manifest"
)

// Describe reads the host; the engine's version is asked of the engine
// named by the environment, within 3 s ("" when there is none).
func Describe(ctx context.Context) manifest.Host {
	h := manifest.Host{OS: runtime.GOOS, CPUs: runtime.NumCPU(), Loadgen: buildVersion()}
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
	h.Docker = engineVersion(ctx)
	return h
}

// engineVersion asks the engine for its version; "" when it cannot be
// reached within 3 s.
func engineVersion(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	c, err := dockerx.New(ctx)
	if err != nil {
		return ""
	}
	defer c.Close()
	v, _ := c.EngineVersion(ctx)
	return v
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

// buildVersion is this binary's module version, VCS revision and Go
// version.
func buildVersion() string {
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
