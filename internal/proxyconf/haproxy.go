package proxyconf

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"proxybench/internal/dockerx"
	"proxybench/internal/manifest"
	"proxybench/internal/stack"
)

// haproxyFile is the configuration file the container's haproxy was
// started with (-f).
func haproxyFile(ctr dockerx.Container) (string, error) {
	for i, a := range ctr.Cmd {
		if a == "-f" && i+1 < len(ctr.Cmd) {
			return ctr.Cmd[i+1], nil
		}
	}
	return "", fmt.Errorf("container %s's command %q has no -f: which configuration haproxy loaded is unknown", ctr.Name, strings.Join(ctr.Cmd, " "))
}

func readHAProxy(ctx context.Context, e Engine, ctr dockerx.Container) (manifest.ProxyConfig, error) {
	file, err := haproxyFile(ctr)
	if err != nil {
		return manifest.ProxyConfig{}, err
	}
	pc := manifest.ProxyConfig{Source: "the file haproxy was started with (" + file + "), read in its container, its ${VARIABLES} from the process's environment"}
	out, err := e.Exec(ctx, ctr.ID, "cat", file)
	if err != nil {
		return pc, err
	}
	pc.Values, err = ParseHAProxy(out, func(k string) string { return envOf(ctr, k) })
	return pc, err
}

// hline is one line of an HAProxy configuration in its section.
type hline struct {
	section string // "global", "defaults", "frontend traffic", "backend fast"
	words   []string
}

// haproxyLines splits a configuration into its lines' words: comments
// dropped, quotes removed, ${VAR} expanded by getenv as HAProxy does.
func haproxyLines(text string, getenv func(string) string) []hline {
	var out []hline
	section := ""
	for _, raw := range strings.Split(text, "\n") {
		line := os.Expand(raw, func(k string) string { return getenv(strings.Trim(k, "{}")) })
		var words []string
		var cur strings.Builder
		inQuote := false
		for i := 0; i < len(line); i++ {
			c := line[i]
			switch {
			case c == '"':
				inQuote = !inQuote
			case c == '#' && !inQuote:
				i = len(line)
			case (c == ' ' || c == '\t') && !inQuote:
				if cur.Len() > 0 {
					words = append(words, cur.String())
					cur.Reset()
				}
			default:
				cur.WriteByte(c)
			}
		}
		if cur.Len() > 0 {
			words = append(words, cur.String())
		}
		if len(words) == 0 {
			continue
		}
		switch words[0] {
		case "global", "defaults", "frontend", "backend", "listen", "resolvers", "peers", "userlist", "program", "http-errors", "ring", "cache", "mailers":
			section = strings.Join(words, " ")
			continue
		}
		out = append(out, hline{section, words})
	}
	return out
}

// ParseHAProxy reads the parity rows from an HAProxy configuration, its
// variables expanded by getenv.
func ParseHAProxy(text string, getenv func(string) string) (map[string]manifest.ConfigValue, error) {
	lines := haproxyLines(text, getenv)
	if len(lines) == 0 {
		return nil, fmt.Errorf("the haproxy configuration has no directive: %.200q", text)
	}
	// The faults scenario's pool has timeouts of its own (docs/faults.md):
	// the parity rows are every other route's.
	lines = slices.DeleteFunc(lines, func(l hline) bool { return l.section == "backend "+stack.FaultsPool })
	find := func(sectionPrefix string, words ...string) *hline {
		for i := range lines {
			l := &lines[i]
			if strings.HasPrefix(l.section, sectionPrefix) && len(l.words) > len(words) && slices.Equal(l.words[:len(words)], words) {
				return l
			}
		}
		return nil
	}
	v := map[string]manifest.ConfigValue{}
	if l := find("global", "nbthread"); l != nil {
		v[Workers] = val(l.words[1], "nbthread "+l.words[1])
	} else {
		v[Workers] = val("all CPUs", "no nbthread: one thread per CPU it may use")
	}
	var pools, where []string
	for _, l := range lines {
		if !strings.HasPrefix(l.section, "backend ") && !strings.HasPrefix(l.section, "listen ") || l.words[0] != "server" {
			continue
		}
		p := "unlimited"
		if i := slices.Index(l.words, "pool-max-conn"); i >= 0 && i+1 < len(l.words) {
			p = l.words[i+1]
		}
		pools, where = append(pools, p), append(where, strings.Fields(l.section)[1])
	}
	reuse := "http-reuse safe (default)"
	if l := find("defaults", "http-reuse"); l != nil {
		reuse = "http-reuse " + l.words[1]
	}
	if p, from := distinct(pools, where); p != "" {
		v[UpstreamPool] = val(p, "pool-max-conn of "+from+" servers, "+reuse)
	} else {
		v[UpstreamPool] = na("no backend server")
	}
	timeout := func(row string, names ...string) error {
		for _, n := range names {
			for _, sec := range []string{"frontend", "backend", "defaults"} {
				if l := find(sec, "timeout", n); l != nil {
					d, err := haproxyTime(l.words[2])
					if err != nil {
						return err
					}
					v[row] = val(fmtDur(d), "timeout "+n+" "+l.words[2]+" ("+l.section+")")
					return nil
				}
			}
		}
		v[row] = val("none", "no timeout "+names[0])
		return nil
	}
	for _, t := range []struct {
		row   string
		names []string
	}{{ClientIdle, []string{"http-keep-alive", "http-request", "client"}}, {ConnectTimeout, []string{"connect"}}, {ResponseTimeout, []string{"server"}}} {
		if err := timeout(t.row, t.names...); err != nil {
			return nil, err
		}
	}
	v[RequestBuffering] = val("off", "no option http-buffer-request")
	if l := find("", "option", "http-buffer-request"); l != nil {
		v[RequestBuffering] = val("on", "option http-buffer-request ("+l.section+")")
	}
	v[ResponseBuffering] = val("off", "HAProxy forwards responses as they come (no setting)")
	v[AccessLog] = val("off", "no log line outside global: requests are not logged")
	for _, l := range lines {
		if l.section != "global" && l.words[0] == "log" {
			v[AccessLog] = val("on", strings.Join(l.words, " ")+" ("+l.section+")")
			break
		}
	}
	v[TLSMin] = na("no ssl bind")
	for _, l := range lines {
		if i := slices.Index(l.words, "ssl-min-ver"); i >= 0 && i+1 < len(l.words) {
			v[TLSMin] = val(tlsVersion(l.words[i+1]), "ssl-min-ver "+l.words[i+1]+" ("+l.section+")")
		}
	}
	return v, nil
}

// haproxyTime reads HAProxy's time syntax: a number of milliseconds, or
// with a unit (us, ms, s, m, h, d).
func haproxyTime(s string) (time.Duration, error) {
	if s != "" && s[len(s)-1] >= '0' && s[len(s)-1] <= '9' {
		s += "ms"
	}
	if strings.HasSuffix(s, "d") {
		d, err := time.ParseDuration(strings.TrimSuffix(s, "d") + "h")
		return d * 24, err
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("haproxy time %q: %w", s, err)
	}
	return d, nil
}
