package scrapeconfig

import (
	"net/url"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

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
var wantJobs = []string{"loadgen", stack.WorkerJob, "exporter", "traefik", "caddy", "haproxy", "prometheus"}

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

// The loadgen workers' job reads, in both configs, the targets file the
// loadgen writes (stack.WorkerTargetsFile) from the directory compose
// mounts there (stack.WorkerTargetsDir, the directory: file_sd must see the
// rename that replaces the file); on the bridge network their addresses
// become the host's, as the loadgen's own target is. Both compose variants
// run Prometheus with the short discovery reload interval the loadgen's
// wait for the workers' first scrape counts on.
func TestWorkerTargetsAreWhereTheLoadgenWritesThem(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		host   string // the address relabelling makes of the workers' ("" = none)
		config Config
	}{{"prometheus.yml", "", load(t, "prometheus.yml")}, {"prometheus.bridge.yml", "host.docker.internal", load(t, "prometheus.bridge.yml")}} {
		j, ok := c.config.Job(stack.WorkerJob)
		if !ok || len(j.StaticConfigs) != 0 || len(j.FileSDConfigs) != 1 || len(j.FileSDConfigs[0].Files) != 1 {
			t.Errorf("%s: job %s %+v: want one file_sd glob and no static targets", c.name, stack.WorkerJob, j)
			continue
		}
		glob := j.FileSDConfigs[0].Files[0]
		if m, err := filepath.Match(glob, path.Join(mountedTargets, stack.WorkerTargetsFile)); err != nil || !m || path.Dir(glob) != mountedTargets {
			t.Errorf("%s: file_sd %q does not read %s in %s (relative to /etc/prometheus)", c.name, glob, stack.WorkerTargetsFile, mountedTargets)
		}
		var got string
		for _, r := range j.RelabelConfigs {
			if r.TargetLabel == "__address__" && len(r.SourceLabels) == 1 && r.SourceLabels[0] == "__address__" {
				got = r.Replacement
				if re, err := regexp.Compile("^(?:" + r.Regex + ")$"); err != nil || re.ReplaceAllString("127.0.0.1:41234", r.Replacement) != c.host+":41234" {
					t.Errorf("%s: relabel %+v does not make 127.0.0.1:41234 %s:41234", c.name, r, c.host)
				}
				// A worker on another node (a Swarm service on a load
				// node) is scraped where the loadgen lists it.
				if re, err := regexp.Compile("^(?:" + r.Regex + ")$"); err == nil && re.MatchString("198.18.0.3:41234") {
					t.Errorf("%s: relabel %+v moves a worker listed at 198.18.0.3:41234 (another node) to %s", c.name, r, c.host)
				}
			}
		}
		if (got == "") != (c.host == "") {
			t.Errorf("%s: address relabelling %q, want the workers at %q", c.name, got, c.host)
		}
	}
	for _, f := range []string{"../../compose/docker-compose.yml", "../../compose/docker-compose.hostnet.yml"} {
		var compose struct {
			Services map[string]struct {
				Command []string `yaml:"command"`
				Volumes []string `yaml:"volumes"`
			} `yaml:"services"`
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(raw, &compose); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		p := compose.Services["prometheus"]
		if !slices.Contains(p.Command, "--scrape.discovery-reload-interval=1s") {
			t.Errorf("%s: prometheus runs %v, without --scrape.discovery-reload-interval=1s", f, p.Command)
		}
		if strings.HasSuffix(f, "docker-compose.yml") {
			want := "../" + stack.WorkerTargetsDir + ":/etc/prometheus/" + mountedTargets + ":ro"
			if !slices.Contains(p.Volumes, want) {
				t.Errorf("%s: prometheus mounts %v, not %s", f, p.Volumes, want)
			}
		}
	}
}

// mountedTargets is where the Prometheus container sees the workers'
// targets directory, relative to its config file.
const mountedTargets = "targets"

// On the users' bridge network, and on a Swarm where the exporter runs on
// every node, the exporter job asks DNS for every address of the name:
// a static target would scrape one of the nodes' exporters.
func TestBridgeExporterJobFindsEveryExporter(t *testing.T) {
	t.Parallel()
	j, ok := load(t, "prometheus.bridge.yml").Job("exporter")
	if !ok || len(j.StaticConfigs) != 0 || len(j.DNSSDConfigs) != 1 {
		t.Fatalf("job exporter %+v: want one dns_sd_config and no static targets", j)
	}
	d := j.DNSSDConfigs[0]
	if !slices.Equal(d.Names, []string{"exporter"}) || d.Type != "A" || d.Port != 9400 {
		t.Errorf("dns_sd_config %+v: want the A records of exporter, port 9400", d)
	}
}
