//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"proxybench/internal/dockerx"
	"proxybench/internal/manifest"
	"proxybench/internal/proxyconf"
)

// TestParityReadFromRunningProxy changes a setting of the running nginx
// (its upstreams' idle pool, 256 in compose/nginx/nginx.conf, becomes 16 in
// the rendered copy it loaded, by exec and a reload), runs a quick cell of
// nginx and HAProxy and finds the report's parity table showing 16, not the
// repository file's 256, with a warning that the proxies differ on that
// row. The setting is put back afterwards.
func TestParityReadFromRunningProxy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli, err := dockerx.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ngx, err := cli.Service(ctx, "proxybench", "nginx")
	if err != nil {
		t.Fatal(err)
	}
	repo, err := os.ReadFile(filepath.Join("..", "compose", "nginx", "nginx.conf"))
	if err != nil || !strings.Contains(string(repo), "keepalive 256;") {
		t.Fatalf("the repository's nginx.conf no longer sets keepalive 256: %v", err)
	}
	conf := "/tmp/nginx.conf" // pbhealth render's copy, which nginx runs on
	set := func(from, to string) {
		t.Helper()
		if _, err := cli.Exec(context.WithoutCancel(ctx), ngx.ID, "sh", "-c", "sed -i 's/keepalive "+from+";/keepalive "+to+";/' "+conf+" && nginx -t -c "+conf+" && kill -HUP 1"); err != nil {
			t.Fatalf("keepalive %s -> %s in the running nginx: %v", from, to, err)
		}
		time.Sleep(time.Second) // the master re-reads its configuration
	}
	set("256", "16")
	t.Cleanup(func() { set("16", "256") })

	results := t.TempDir()
	runCells(t, results, "parity", nil, "-tier", "2s", "-proxies", "nginx,haproxy", "-origins", "fast", "-concurrency", "8", "-isolate=false")
	b, err := os.ReadFile(filepath.Join(results, "parity", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	type value struct {
		Value string `json:"value"`
		From  string `json:"from"`
	}
	var r struct {
		Environment struct {
			Parity *struct {
				Configs map[string]struct {
					Source string           `json:"source"`
					Values map[string]value `json:"values"`
					Error  string           `json:"error"`
				} `json:"configs"`
				Warnings []string `json:"warnings"`
			} `json:"parity"`
		} `json:"environment"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	p := r.Environment.Parity
	if p == nil {
		t.Fatal("report.json has no parity read from the running proxies")
	}
	for px, pc := range p.Configs {
		if pc.Error != "" {
			t.Errorf("%s's configuration not read: %s", px, pc.Error)
		}
		t.Logf("%s (%s): %v", px, pc.Source, pc.Values)
	}
	const row = "upstream idle connections per origin"
	if v := p.Configs["nginx"].Values[row]; v.Value != "16" {
		t.Errorf("nginx %s = %q (%s), want 16 as the running nginx has it (the repository's file says 256)", row, v.Value, v.From)
	}
	if v := p.Configs["haproxy"].Values[row]; v.Value != "256" {
		t.Errorf("haproxy %s = %q (%s), want 256", row, v.Value, v.From)
	}
	warned := false
	for _, w := range p.Warnings {
		warned = warned || strings.HasPrefix(w, row+" differs:") && strings.Contains(w, "nginx 16") && strings.Contains(w, "haproxy 256")
	}
	if !warned {
		t.Errorf("no parity warning for %s: %q", row, p.Warnings)
	}
	md, err := os.ReadFile(filepath.Join(results, "parity", "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "⚠ Parity: "+row+" differs") {
		t.Errorf("report.md shows no parity warning for %s", row)
	}
}

// TestParityOfTheStack reads the four running proxies as a run does and
// finds what docs/parity.md says of the repository's files: every row read
// (but those Traefik's API does not report), the same values everywhere
// but response buffering, which nginx alone does.
func TestParityOfTheStack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cli, err := dockerx.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	cfgs := map[string]manifest.ProxyConfig{}
	for _, px := range []string{"nginx", "haproxy", "traefik", "caddy"} {
		ctr, err := cli.Service(ctx, "proxybench", px)
		if err != nil {
			t.Fatal(err)
		}
		pc := proxyconf.Read(ctx, cli, px, ctr)
		if pc.Error != "" {
			t.Errorf("%s: %s", px, pc.Error)
			continue
		}
		for _, row := range proxyconf.Rows {
			v, ok := pc.Values[row]
			unreported := px == "traefik" && (row == proxyconf.TLSMin || row == proxyconf.UpstreamPool || row == proxyconf.ConnectTimeout || row == proxyconf.ResponseTimeout)
			if !ok || v.NA != unreported {
				t.Errorf("%s %s: not read (%+v)", px, row, v)
			}
			t.Logf("%s %s: %s (%s)", px, row, v.Value, v.From)
		}
		cfgs[px] = pc
	}
	diff := proxyconf.Differences(cfgs)
	if len(diff) != 1 || !strings.HasPrefix(diff[0], proxyconf.ResponseBuffering+" differs: caddy off, haproxy off, nginx on, traefik off") {
		t.Errorf("the stack's proxies differ on %q; docs/parity.md says only on response buffering", diff)
	}
}
