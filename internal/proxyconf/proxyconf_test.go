package proxyconf

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"proxybench/internal/manifest"
)

func want(t *testing.T, proxy string, got map[string]manifest.ConfigValue, rows map[string]string) {
	t.Helper()
	for row, w := range rows {
		if g := got[row]; g.Value != w {
			t.Errorf("%s %s = %q (%s), want %q", proxy, row, g.Value, g.From, w)
		}
	}
}

// The repository's configurations, as the running proxies would report
// them with PROXY_WORKERS=1 and TLS_MIN_VERSION=1.3 (nginx -T prints the
// rendered file after a header line).
var repoRows = map[string]string{
	Workers: "1", UpstreamPool: "256", ClientIdle: "60s", ConnectTimeout: "5s", ResponseTimeout: "60s",
	RequestBuffering: "off", AccessLog: "off", TLSMin: "1.3",
}

func TestParseNginx(t *testing.T) {
	b, err := os.ReadFile("../../compose/nginx/nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	conf := strings.NewReplacer("${PROXY_WORKERS}", "1", "${TLS_MIN_VERSION}", "1.3", "${LISTEN_ADDR}", "127.0.0.1").Replace(string(b))
	got, err := ParseNginx("nginx: the configuration file /tmp/nginx.conf syntax is ok\n# configuration file /tmp/nginx.conf:\n" + conf)
	if err != nil {
		t.Fatal(err)
	}
	want(t, "nginx", got, repoRows)
	want(t, "nginx", got, map[string]string{ResponseBuffering: "on"})

	// One upstream with another pool, and nginx's defaults.
	got, err = ParseNginx(`http { upstream a { server x:1; keepalive 16; } upstream b { server y:2; keepalive 256; } upstream c { server z:3; } server { listen 80; } }`)
	if err != nil {
		t.Fatal(err)
	}
	want(t, "nginx", got, map[string]string{Workers: "1", UpstreamPool: "mixed: 16 (a), 256 (b), none (c)", ClientIdle: "75s",
		ConnectTimeout: "60s", ResponseBuffering: "on", AccessLog: "on"})
	if !got[TLSMin].NA {
		t.Errorf("no TLS: %+v", got[TLSMin])
	}
	if _, err := ParseNginx("nginx: [emerg] unknown directive"); err == nil {
		t.Error("no directive: no error")
	}
}

func TestParseHAProxy(t *testing.T) {
	b, err := os.ReadFile("../../compose/haproxy/haproxy.cfg")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PROXY_WORKERS": "1", "TLS_MIN_VERSION": "1.3", "LISTEN_ADDR": "127.0.0.1"}
	got, err := ParseHAProxy(string(b), func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	want(t, "haproxy", got, repoRows)
	want(t, "haproxy", got, map[string]string{ResponseBuffering: "off"})
	got, err = ParseHAProxy("defaults\n  timeout connect 5000\n  log global\nbackend b\n  server s x:1\n", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	want(t, "haproxy", got, map[string]string{ConnectTimeout: "5s", UpstreamPool: "unlimited", AccessLog: "on", ClientIdle: "none"})
}

func TestParseTraefik(t *testing.T) {
	// The shapes of Traefik 3.6's API answers for the repository's files.
	var a TraefikAnswers
	for _, x := range []struct {
		js   string
		into any
	}{
		{`[{"name":"traffic","transport":{"respondingTimeouts":{"readTimeout":"1m0s","idleTimeout":"1m0s"}}},{"name":"metrics","transport":{"respondingTimeouts":{"idleTimeout":"3m0s"}}}]`, &a.EntryPoints},
		{`{"features":{"tracing":"","metrics":"Prometheus","accessLog":false}}`, &a.Overview},
		{`[{"name":"strip-origin@file","type":"stripprefixregex","status":"enabled"}]`, &a.Middlewares},
	} {
		if err := json.Unmarshal([]byte(x.js), x.into); err != nil {
			t.Fatal(err)
		}
	}
	got := ParseTraefik(&a, val("1", "GOMAXPROCS"))
	rows := map[string]string{}
	for k, v := range repoRows {
		rows[k] = v
	}
	for _, row := range []string{TLSMin, UpstreamPool, ConnectTimeout, ResponseTimeout} {
		rows[row] = "n/a"
	}
	want(t, "traefik", got, rows)
}

func TestParseCaddy(t *testing.T) {
	// The shape of `caddy adapt` for the repository's Caddyfile: two
	// proxying servers, durations in nanoseconds.
	js := `{"apps":{"http":{"servers":{
	  "srv0":{"listen":["127.0.0.1:8884"],"idle_timeout":60000000000,"routes":[{"handle":[{"handler":"subroute","routes":[{"handle":[{"handler":"reverse_proxy","transport":{"protocol":"http","keep_alive":{"max_idle_conns_per_host":256,"probe_interval":60000000000},"dial_timeout":5000000000,"response_header_timeout":60000000000},"upstreams":[{"dial":"origin-fast:9104"}]}]}]}]}]},
	  "srv1":{"listen":["127.0.0.1:9884"],"idle_timeout":60000000000,"tls_connection_policies":[{"protocol_min":"tls1.3"}],"routes":[{"handle":[{"handler":"reverse_proxy","transport":{"protocol":"http","keep_alive":{"max_idle_conns_per_host":256},"dial_timeout":5000000000,"response_header_timeout":60000000000}}]}]},
	  "srv2":{"listen":[":8984"],"routes":[{"handle":[{"handler":"metrics"}]}]}}}}}`
	var cfg CaddyConfig
	if err := json.Unmarshal([]byte(js), &cfg); err != nil {
		t.Fatal(err)
	}
	got, err := ParseCaddy(&cfg, val("1", "GOMAXPROCS"))
	if err != nil {
		t.Fatal(err)
	}
	want(t, "caddy", got, repoRows)
}

func TestDifferences(t *testing.T) {
	cfgs := map[string]manifest.ProxyConfig{
		"nginx":   {Values: map[string]manifest.ConfigValue{UpstreamPool: val("16", ""), AccessLog: val("off", ""), TLSMin: val("1.3", "")}},
		"haproxy": {Values: map[string]manifest.ConfigValue{UpstreamPool: val("256", ""), AccessLog: val("off", ""), TLSMin: na("")}},
		"caddy":   {Error: "not read"},
	}
	got := Differences(cfgs)
	if len(got) != 1 || got[0] != "upstream idle connections per origin differs: haproxy 256, nginx 16" {
		t.Fatalf("differences %q", got)
	}
}
