package scrapeconfig

import (
	"net/url"
	"reflect"
	"strings"
	"testing"

	"proxybench/internal/stack"
)

func load(t *testing.T, name string) Config {
	t.Helper()
	c, err := Load("../" + name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The jobs every dashboard and the reporter rely on (design-notes).
var wantJobs = []string{"loadgen", "exporter", "traefik", "caddy", "haproxy", "prometheus"}

func TestHostAndBridgeConfigsAgreeOnEverythingButAddresses(t *testing.T) {
	t.Parallel()
	host, bridge := load(t, "prometheus.yml"), load(t, "prometheus.bridge.yml")
	if !reflect.DeepEqual(host.Global, bridge.Global) {
		t.Errorf("global sections differ:\nhost   %+v\nbridge %+v", host.Global, bridge.Global)
	}
	if !reflect.DeepEqual(host.RuleFiles, bridge.RuleFiles) {
		t.Errorf("rule_files differ: %v vs %v", host.RuleFiles, bridge.RuleFiles)
	}
	if !reflect.DeepEqual(host.Labels(), bridge.Labels()) {
		t.Errorf("job labels differ:\nhost   %v\nbridge %v", host.Labels(), bridge.Labels())
	}
	for _, c := range []struct {
		name string
		cfg  Config
	}{{"prometheus.yml", host}, {"prometheus.bridge.yml", bridge}} {
		var jobs []string
		for _, j := range c.cfg.ScrapeConfigs {
			jobs = append(jobs, j.Name)
		}
		if !reflect.DeepEqual(jobs, wantJobs) {
			t.Errorf("%s jobs = %v, want %v", c.name, jobs, wantJobs)
		}
		g := c.cfg.Global
		if g.ScrapeInterval != "1s" || g.EvaluationInterval != "1s" {
			t.Errorf("%s: scrape/evaluation interval %s/%s, want 1s/1s (the rules' 5 s windows assume it)", c.name, g.ScrapeInterval, g.EvaluationInterval)
		}
		if g.ScrapeNativeHistograms == nil || !*g.ScrapeNativeHistograms || g.AlwaysScrapeClassicHistograms == nil || !*g.AlwaysScrapeClassicHistograms {
			t.Errorf("%s: native histograms must be scraped and classic buckets kept", c.name)
		}
	}
}

func TestProxyJobsCarryTheirProxyLabel(t *testing.T) {
	t.Parallel()
	labels := load(t, "prometheus.yml").Labels()
	for _, p := range []string{"traefik", "caddy", "haproxy"} {
		if got := labels[p]["proxy"]; got != p {
			t.Errorf("job %s has proxy label %q, want %q", p, got, p)
		}
	}
}

// Host-network targets are exactly the metrics endpoints of internal/stack.
func TestHostTargetsAreTheStackPorts(t *testing.T) {
	t.Parallel()
	targets := load(t, "prometheus.yml").Targets()
	for _, p := range stack.Proxies {
		if p.Metrics == "" || p.Name == "nginx" { // nginx's stub_status is read by the exporter
			continue
		}
		u, err := url.Parse(p.Metrics)
		if err != nil {
			t.Fatal(err)
		}
		if got := targets[p.Name]; len(got) != 1 || got[0] != u.Host {
			t.Errorf("job %s targets %v, want [%s] (stack.go)", p.Name, got, u.Host)
		}
		if u.Path != "/metrics" {
			t.Errorf("%s metrics path %s: the job scrapes /metrics", p.Name, u.Path)
		}
	}
	for job, want := range map[string]string{"loadgen": "127.0.0.1:9500", "exporter": "127.0.0.1:9400", "prometheus": "127.0.0.1:9090"} {
		if got := targets[job]; len(got) != 1 || got[0] != want {
			t.Errorf("job %s targets %v, want [%s] (design-notes ports)", job, got, want)
		}
	}
	for job, ts := range targets {
		for _, tg := range ts {
			if !strings.HasPrefix(tg, "127.0.0.1:") {
				t.Errorf("job %s target %s: host networking scrapes 127.0.0.1 only", job, tg)
			}
		}
	}
}
