package dockerx

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// ErrNoVersion says the binary runs but was built without its version.
var ErrNoVersion = errors.New("binary carries no version")

// ParseVersion turns a proxy's version output into one short line. service
// selects the format; "" returns the first non-empty line as is.
func ParseVersion(service, out string) (string, error) {
	switch service {
	case "nginx": // "nginx version: nginx/1.22.1"
		for _, l := range lines(out) {
			if _, v, ok := strings.Cut(l, "nginx version: "); ok {
				return strings.Fields(v)[0], nil
			}
		}
	case "haproxy": // "HAProxy version 2.6.12-1+deb12u1 2023/12/16 - https://haproxy.org/"
		for _, l := range lines(out) {
			f := strings.Fields(l)
			if len(f) >= 3 && f[0] == "HAProxy" && f[1] == "version" {
				return "HAProxy " + f[2], nil
			}
		}
	case "traefik": // "Version:      3.6.12"
		for _, l := range lines(out) {
			if v, ok := strings.CutPrefix(l, "Version:"); ok && strings.TrimSpace(v) != "" {
				if v = strings.TrimSpace(v); v == "dev" {
					return "", fmt.Errorf("%w: traefik reports version \"dev\": build it with -ldflags '-X github.com/traefik/traefik/v3/pkg/version.Version=<version>'", ErrNoVersion)
				}
				return "traefik " + v, nil
			}
		}
	case "caddy": // "v2.11.9 h1:..."
		for _, l := range lines(out) {
			if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(f[0], "v") {
				return "caddy " + f[0], nil
			}
			if l == "unknown" {
				return "", fmt.Errorf("%w: caddy reports version \"unknown\" (built outside module mode): build it with -ldflags '-X github.com/caddyserver/caddy/v2.CustomVersion=<version>'", ErrNoVersion)
			}
		}
	default:
		if l := firstLine(out); l != "" {
			return l, nil
		}
	}
	return "", fmt.Errorf("unrecognised %s version output %q", service, firstLine(out))
}

func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func firstLine(s string) string {
	if ls := lines(s); len(ls) > 0 {
		return ls[0]
	}
	return ""
}

// gctraceLine matches what GODEBUG=gctrace=1 makes a Go program print.
var gctraceLine = regexp.MustCompile(`^(gc \d+ @|GC forced|scav |scvg)`)

func withoutGCTrace(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if !gctraceLine.MatchString(l) {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.String()
}
