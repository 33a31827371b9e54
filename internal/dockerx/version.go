package dockerx

import (
	"fmt"
	"strings"
)

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
				return "traefik " + strings.TrimSpace(v), nil
			}
		}
	case "caddy": // "v2.11.9 h1:..."
		for _, l := range lines(out) {
			if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(f[0], "v") {
				return "caddy " + f[0], nil
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
