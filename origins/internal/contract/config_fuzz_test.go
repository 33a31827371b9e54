package contract

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"proxybench/internal/stack"
)

// FuzzLoadConfig: the environment an origin starts with (ORIGIN_NAME,
// LISTEN_ADDR, PORT), any strings. A refusal names the variable and what it
// wants, never a panic; an accepted name is a plain token, and the address
// splits back into the host and port it was given.
func FuzzLoadConfig(f *testing.F) {
	for _, s := range [][3]string{
		{"", "", ""}, {"fast-2", "127.0.0.1", "8080"}, {"", "::1", ""}, {"a b", "", ""}, {"", "", "http"}, {"", "", "70000"},
		{"", "", "-1"}, {"", "", "+80"}, {"", "", "0080"}, {"", "", " 80"}, {"x\n", "", ""}, {strings.Repeat("a", 65), "", ""},
		{"", "[::1]", ""}, {"", "a:b:c", "1"}, {"", "host\x00", "99999999999999999999"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	def, err := stack.LookupOrigin("go")
	if err != nil {
		f.Fatal(err)
	}
	defaults, err := LoadConfig(func(string) string { return "" }, "go")
	if err != nil {
		f.Fatal(err)
	}
	defHost, _, err := net.SplitHostPort(defaults.Addr)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, name, listen, port string) {
		env := map[string]string{"ORIGIN_NAME": name, "LISTEN_ADDR": listen, "PORT": port}
		c, err := LoadConfig(func(k string) string { return env[k] }, "go")
		if err != nil {
			msg := err.Error()
			switch {
			case strings.HasPrefix(msg, "ORIGIN_NAME "+strconv.Quote(name)+": want "):
			case strings.HasPrefix(msg, "PORT "+strconv.Quote(port)+": want "):
			case strings.HasPrefix(msg, "LISTEN_ADDR "+strconv.Quote(listen)+": want "):
			default:
				t.Fatalf("error %q does not name the variable at fault and what it wants", msg)
			}
			return
		}
		wantName := name
		if name == "" {
			wantName = def.Name
		}
		if c.Name != wantName || !validName(c.Name) {
			t.Fatalf("ORIGIN_NAME %q gave name %q", name, c.Name)
		}
		host, p, err := net.SplitHostPort(c.Addr)
		if err != nil {
			t.Fatalf("address %q does not split: %v", c.Addr, err)
		}
		wantHost := strings.TrimSuffix(strings.TrimPrefix(listen, "["), "]")
		if listen == "" {
			wantHost = defHost
		}
		n, err := strconv.Atoi(p)
		wantPort, _ := strconv.Atoi(port)
		if port == "" {
			wantPort = def.Port
		}
		if host != wantHost || err != nil || n != wantPort || n < 0 || n > 65535 {
			t.Fatalf("LISTEN_ADDR %q PORT %q gave address %q", listen, port, c.Addr)
		}
	})
}

// TestLoadConfigListenAddr: LISTEN_ADDR is a host; the URL spelling of an
// IPv6 address is taken, a host with a port is refused by name (FuzzLoadConfig
// found "[::1]" turning into the unusable address "[[::1]]:9103").
func TestLoadConfigListenAddr(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want, err string }{
		{"[::1]", "[::1]:9103", ""},
		{"fe80::1%eth0", "[fe80::1%eth0]:9103", ""},
		{"localhost", "localhost:9103", ""},
		{"127.0.0.1:80", "", `LISTEN_ADDR "127.0.0.1:80": want a host or IP address without a port`},
		{"[]", "", `LISTEN_ADDR "[]"`},
		{"a b", "", `LISTEN_ADDR "a b"`},
	} {
		c, err := LoadConfig(func(k string) string { return map[string]string{"LISTEN_ADDR": tc.in}[k] }, "go")
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("LISTEN_ADDR %q: %+v, %v; want an error with %q", tc.in, c, err, tc.err)
			}
			continue
		}
		if err != nil || c.Addr != tc.want {
			t.Errorf("LISTEN_ADDR %q: %+v, %v; want address %s", tc.in, c, err, tc.want)
		}
	}
}
