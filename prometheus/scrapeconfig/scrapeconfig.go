// Package scrapeconfig owns the consistency checks of the Prometheus
// configuration as code: the host-network and bridge-network scrape configs
// must describe the same jobs, and their targets must be the ports of
// internal/stack. promtool checks each file on its own (prometheus/lint.sh);
// this package checks what promtool cannot: that they agree.
package scrapeconfig

import (
	"fmt"
	"os"

	"gopkg.in/yaml.v3"
)

// Config is the part of prometheus.yml these checks read.
type Config struct {
	Global struct {
		ScrapeInterval                string `yaml:"scrape_interval"`
		ScrapeTimeout                 string `yaml:"scrape_timeout"`
		EvaluationInterval            string `yaml:"evaluation_interval"`
		ScrapeNativeHistograms        *bool  `yaml:"scrape_native_histograms"`
		AlwaysScrapeClassicHistograms *bool  `yaml:"always_scrape_classic_histograms"`
	} `yaml:"global"`
	RuleFiles     []string `yaml:"rule_files"`
	ScrapeConfigs []Job    `yaml:"scrape_configs"`
}

// Job is one scrape job: static targets, or targets files (file_sd) and
// the relabelling of their addresses.
type Job struct {
	Name          string `yaml:"job_name"`
	MetricsPath   string `yaml:"metrics_path"`
	StaticConfigs []struct {
		Targets []string          `yaml:"targets"`
		Labels  map[string]string `yaml:"labels"`
	} `yaml:"static_configs"`
	FileSDConfigs []struct {
		Files []string `yaml:"files"`
	} `yaml:"file_sd_configs"`
	DNSSDConfigs []struct {
		Names []string `yaml:"names"`
		Type  string   `yaml:"type"`
		Port  int      `yaml:"port"`
	} `yaml:"dns_sd_configs"`
	RelabelConfigs []Relabel `yaml:"relabel_configs"`
}

// Relabel is one relabel_configs rule.
type Relabel struct {
	SourceLabels []string `yaml:"source_labels"`
	Regex        string   `yaml:"regex"`
	TargetLabel  string   `yaml:"target_label"`
	Replacement  string   `yaml:"replacement"`
}

// Job finds a job by name.
func (c Config) Job(name string) (Job, bool) {
	for _, j := range c.ScrapeConfigs {
		if j.Name == name {
			return j, true
		}
	}
	return Job{}, false
}

// Load reads one Prometheus configuration file.
func Load(path string) (Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("read prometheus config: %w", err)
	}
	var c Config
	if err := yaml.Unmarshal(raw, &c); err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Targets maps each job to its targets, in file order.
func (c Config) Targets() map[string][]string {
	out := map[string][]string{}
	for _, j := range c.ScrapeConfigs {
		for _, s := range j.StaticConfigs {
			out[j.Name] = append(out[j.Name], s.Targets...)
		}
	}
	return out
}

// Labels maps each job to the union of its static target labels.
func (c Config) Labels() map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, j := range c.ScrapeConfigs {
		m := map[string]string{}
		for _, s := range j.StaticConfigs {
			for k, v := range s.Labels {
				m[k] = v
			}
		}
		out[j.Name] = m
	}
	return out
}
