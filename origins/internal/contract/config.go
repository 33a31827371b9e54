package contract

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"proxybench/internal/stack"
)

// Config is how an origin is told where to listen and what to call itself.
type Config struct {
	Name string // X-Origin value
	Addr string // host:port to listen on
}

// LoadConfig reads ORIGIN_NAME, LISTEN_ADDR and PORT through getenv. The
// defaults are the origin's own: defaultName, 127.0.0.1 (loopback unless
// asked, e.g. LISTEN_ADDR=0.0.0.0 inside a bridge container) and the port the stack
// table (internal/stack) gives defaultName.
func LoadConfig(getenv func(string) string, defaultName string) (Config, error) {
	o, err := stack.LookupOrigin(defaultName)
	if err != nil {
		return Config{}, fmt.Errorf("default origin: %w", err)
	}
	c := Config{Name: o.Name}
	if v := getenv("ORIGIN_NAME"); v != "" {
		if !validName(v) {
			return Config{}, fmt.Errorf("ORIGIN_NAME %q: want 1..64 characters of [A-Za-z0-9._-]", v)
		}
		c.Name = v
	}
	host := "127.0.0.1"
	if v := getenv("LISTEN_ADDR"); v != "" {
		// A host alone: [::1] is written the URL way, and a value with a
		// port or a stray colon would make an address nothing can listen on.
		host = strings.TrimSuffix(strings.TrimPrefix(v, "["), "]")
		if _, err := netip.ParseAddr(host); host == "" || strings.ContainsAny(host, "[]/ \t\r\n") || strings.Contains(host, ":") && err != nil {
			return Config{}, fmt.Errorf("LISTEN_ADDR %q: want a host or IP address without a port, e.g. 127.0.0.1, 0.0.0.0 or ::1", v)
		}
	}
	port := o.Port
	if v := getenv("PORT"); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p < 0 || p > 65535 {
			return Config{}, fmt.Errorf("PORT %q: want a port number 0..65535", v)
		}
		port = p
	}
	c.Addr = net.JoinHostPort(host, strconv.Itoa(port))
	return c, nil
}

// validName keeps X-Origin a plain token that needs no escaping anywhere.
func validName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}
