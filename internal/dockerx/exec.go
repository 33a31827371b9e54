package dockerx

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
)

// versionCmds is how each proxy prints its version when the container has
// no proxybench.version-cmd label.
var versionCmds = map[string][]string{
	"nginx":   {"nginx", "-v"},
	"haproxy": {"haproxy", "-v"},
	"traefik": {"traefik", "version"},
	"caddy":   {"caddy", "version"},
}

// Version runs the proxy's own version command inside the running
// container and returns one short line such as "nginx/1.22.1",
// "HAProxy 2.6.12-1+deb12u1", "traefik 3.6.12" or "caddy v2.11.9". The
// label proxybench.version-cmd (argv joined by spaces, no shell) overrides
// the command chosen by service name; its output's first line is returned.
func (c *Client) Version(ctx context.Context, ctr Container) (string, error) {
	argv := versionCmds[ctr.Service]
	custom := false
	if cmd := strings.Fields(ctr.Labels[LabelVersionCmd]); len(cmd) > 0 {
		argv, custom = cmd, true
	}
	if len(argv) == 0 {
		return "", fmt.Errorf("no version command for container %s (service %q): set label %s", ctr.Name, ctr.Service, LabelVersionCmd)
	}
	out, err := c.exec(ctx, ctr.ID, argv)
	if err != nil {
		return "", fmt.Errorf("version of %s: %w", ctr.Name, err)
	}
	v, err := ParseVersion(ctr.Service, out)
	if err != nil && custom && !errors.Is(err, ErrNoVersion) {
		// A command of the user's choosing: its first line is the version.
		v, err = ParseVersion("", out)
	}
	if err != nil {
		return "", fmt.Errorf("version of %s from %q: %w", ctr.Name, strings.Join(argv, " "), err)
	}
	return v, nil
}

// exec runs argv in the container and returns its output.
func (c *Client) exec(ctx context.Context, id string, argv []string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ex, err := c.on(id).ContainerExecCreate(ctx, id, container.ExecOptions{Cmd: argv, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return "", fmt.Errorf("exec %q: %w", strings.Join(argv, " "), err)
	}
	hj, err := c.on(id).ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	if err != nil {
		return "", fmt.Errorf("exec %q: attach: %w", strings.Join(argv, " "), err)
	}
	defer hj.Close()
	stdout, stderr, err := demuxAll(hj.Reader)
	if err != nil {
		return "", fmt.Errorf("exec %q: read output: %w", strings.Join(argv, " "), err)
	}
	st, err := c.on(id).ContainerExecInspect(ctx, ex.ID)
	if err != nil {
		return "", fmt.Errorf("exec %q: %w", strings.Join(argv, " "), err)
	}
	// stdout first; stderr (where nginx -v writes) without the runtime's
	// gctrace, which an exec inherits from a Go proxy's environment.
	out := stdout + "\n" + withoutGCTrace(stderr)
	if st.ExitCode != 0 {
		return "", fmt.Errorf("exec %q exited %d: %s", strings.Join(argv, " "), st.ExitCode, firstLine(out))
	}
	return out, nil
}
