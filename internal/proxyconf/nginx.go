package proxyconf

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"proxybench/internal/dockerx"
	"proxybench/internal/manifest"
)

// nginxArgv is the container's nginx command line with -T: nginx then
// prints the configuration that command line loads (every file) and exits.
func nginxArgv(ctr dockerx.Container) []string {
	argv := ctr.Cmd
	if i := slices.Index(argv, "--"); i >= 0 { // pbhealth render ... -- nginx ...
		argv = argv[i+1:]
	}
	if len(argv) == 0 || !strings.HasSuffix(argv[0], "nginx") {
		argv = []string{"nginx"}
	}
	return append(slices.Clone(argv), "-T")
}

func readNginx(ctx context.Context, e Engine, ctr dockerx.Container) (manifest.ProxyConfig, error) {
	argv := nginxArgv(ctr)
	pc := manifest.ProxyConfig{Source: strings.Join(argv, " ")}
	out, err := e.Exec(ctx, ctr.ID, argv...)
	if err != nil {
		return pc, err
	}
	pc.Values, err = ParseNginx(out)
	return pc, err
}

// stmt is one nginx directive with the blocks it is in, e.g. ["http",
// "upstream fast"].
type stmt struct {
	ctx  []string
	name string
	args []string
}

// nginxStatements splits nginx -T's output (comments and the "#
// configuration file" headers included) into directives.
func nginxStatements(text string) []stmt {
	var (
		out   []stmt
		stack []string
		words []string
		cur   strings.Builder
		quote byte
	)
	flush := func() {
		if cur.Len() > 0 {
			words = append(words, cur.String())
			cur.Reset()
		}
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#':
			for i < len(text) && text[i] != '\n' {
				i++
			}
			flush()
		case c == ';':
			flush()
			if len(words) > 0 {
				out = append(out, stmt{slices.Clone(stack), words[0], words[1:]})
			}
			words = nil
		case c == '{':
			flush()
			stack = append(stack, strings.Join(words, " "))
			words = nil
		case c == '}':
			flush()
			words = nil
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			flush()
		default:
			cur.WriteByte(c)
		}
	}
	return out
}

// nginxTime reads nginx's time syntax ("60s", "1m", "500ms", "60").
func nginxTime(s string) (time.Duration, error) {
	if s != "" && s[len(s)-1] >= '0' && s[len(s)-1] <= '9' {
		s += "s"
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("nginx time %q: %w", s, err)
	}
	return d, nil
}

// ParseNginx reads the parity rows from nginx -T's output; nginx's
// defaults fill what it does not set.
func ParseNginx(text string) (map[string]manifest.ConfigValue, error) {
	sts := nginxStatements(text)
	if len(sts) == 0 {
		return nil, fmt.Errorf("nginx -T printed no directive: %.200q", text)
	}
	// at is the directive in the http block itself (or at the top).
	at := func(ctx, name string) *stmt {
		for i := range sts {
			s := &sts[i]
			if s.name == name && strings.Join(s.ctx, "/") == ctx {
				return s
			}
		}
		return nil
	}
	v := map[string]manifest.ConfigValue{}
	if s := at("", "worker_processes"); s != nil && len(s.args) == 1 {
		v[Workers] = val(s.args[0], "worker_processes "+s.args[0])
	} else {
		v[Workers] = val("1", "default worker_processes")
	}
	var pools, where []string
	for _, s := range sts {
		if len(s.ctx) == 2 && s.ctx[0] == "http" && strings.HasPrefix(s.ctx[1], "upstream ") {
			up := strings.TrimPrefix(s.ctx[1], "upstream ")
			if s.name == "server" && !slices.Contains(where, up) {
				pools, where = append(pools, "none"), append(where, up)
			}
			if s.name == "keepalive" && len(s.args) == 1 {
				if i := slices.Index(where, up); i >= 0 {
					pools[i] = s.args[0]
				} else {
					pools, where = append(pools, s.args[0]), append(where, up)
				}
			}
		}
	}
	if p, from := distinct(pools, where); p != "" {
		v[UpstreamPool] = val(p, "keepalive in "+from+" upstream blocks")
	} else {
		v[UpstreamPool] = val("none", "no upstream block: a new connection per request")
	}
	timeRow := func(row, name, def string) error {
		arg, from := def, "default "+name+" "+def
		if s := at("http", name); s != nil && len(s.args) > 0 {
			arg, from = s.args[0], name+" "+s.args[0]
		}
		d, err := nginxTime(arg)
		if err != nil {
			return err
		}
		v[row] = val(fmtDur(d), from)
		return nil
	}
	for _, t := range []struct{ row, name, def string }{
		{ClientIdle, "keepalive_timeout", "75s"},
		{ConnectTimeout, "proxy_connect_timeout", "60s"},
		{ResponseTimeout, "proxy_read_timeout", "60s"},
	} {
		if err := timeRow(t.row, t.name, t.def); err != nil {
			return nil, err
		}
	}
	onOff := func(row, name string) {
		if s := at("http", name); s != nil && len(s.args) == 1 {
			v[row] = val(s.args[0], name+" "+s.args[0])
			return
		}
		v[row] = val("on", "default "+name+" on")
	}
	onOff(RequestBuffering, "proxy_request_buffering")
	onOff(ResponseBuffering, "proxy_buffering")
	v[AccessLog] = val("on", "default access_log logs/access.log")
	for _, s := range sts {
		if s.name == "access_log" && len(s.args) > 0 {
			if s.args[0] != "off" {
				v[AccessLog] = val("on", "access_log "+strings.Join(s.args, " ")+" in "+strings.Join(s.ctx, "/"))
				break
			}
			if strings.Join(s.ctx, "/") == "http" {
				v[AccessLog] = val("off", "access_log off")
			}
		}
	}
	v[TLSMin] = na("no TLS listener")
	for _, s := range sts {
		switch {
		case s.name == "ssl_conf_command" && len(s.args) == 2 && strings.EqualFold(s.args[0], "MinProtocol"):
			v[TLSMin] = val(tlsVersion(s.args[1]), "ssl_conf_command MinProtocol "+s.args[1])
		case s.name == "ssl_protocols" && len(s.args) > 0 && v[TLSMin].NA:
			lo := tlsVersion(s.args[0])
			for _, a := range s.args[1:] {
				lo = min(lo, tlsVersion(a))
			}
			v[TLSMin] = val(lo, "ssl_protocols "+strings.Join(s.args, " "))
		}
	}
	return v, nil
}
