//go:build swarm

// The tests of this package run with -tags swarm (docs/swarm.md): make
// test's budget has no room for them.
package swarmstack

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestLabModel converts the lab's own compose model (testdata/model.json:
// `scripts/stack.sh compose -f compose/docker-compose.swarm.yml config
// --format json` with HOSTNET=0) and compares the stack file and the notes
// with their golden files.
func TestLabModel(t *testing.T) {
	t.Parallel()
	model, err := os.ReadFile(filepath.Join("testdata", "model.json"))
	if err != nil {
		t.Fatal(err)
	}
	out, notes, err := Convert(model, DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	var lines strings.Builder
	for _, n := range notes {
		lines.WriteString(n.String() + "\n")
	}
	golden(t, "stack.json", out)
	golden(t, "notes.txt", []byte(lines.String()))
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from its golden file (go test -tags swarm -run %s -update rewrites it):\n%s", name, t.Name(), got)
	}
}

func TestConvert(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		model   string
		opt     Options
		want    string // the service "s" of the output, as JSON
		notes   []string
		wantErr string
	}{
		{
			name:  "limits move to deploy, the cpuset goes",
			model: `{"services":{"s":{"image":"i","cpus":1.5,"cpuset":"1","mem_limit":"536870912","memswap_limit":"536870912"}}}`,
			opt:   Options{},
			want:  `{"deploy":{"resources":{"limits":{"cpus":"1.5","memory":"536870912"}}},"image":"i"}`,
			notes: []string{"s: cpus: moved", "s: cpuset: dropped", "s: mem_limit: moved", "s: memswap_limit: dropped"},
		},
		{
			name:  "a deploy limit wins over the service's",
			model: `{"services":{"s":{"image":"i","cpus":2,"deploy":{"resources":{"limits":{"cpus":0.5}}}}}}`,
			want:  `{"deploy":{"resources":{"limits":{"cpus":"0.5"}}},"image":"i"}`,
			notes: []string{"s: cpus: dropped: deploy.resources.limits.cpus is set"},
		},
		{
			name:  "restart no becomes on-failure",
			model: `{"services":{"s":{"image":"i","restart":"no"}}}`,
			want:  `{"deploy":{"restart_policy":{"condition":"on-failure"}},"image":"i"}`,
			notes: []string{`s: restart: "no" becomes`},
		},
		{
			name:    "an unknown restart policy is an error",
			model:   `{"services":{"s":{"image":"i","restart":"sometimes"}}}`,
			wantErr: "restart sometimes",
		},
		{
			name:  "ports: integers, the mode given, no host address",
			model: `{"services":{"s":{"image":"i","ports":[{"mode":"ingress","host_ip":"127.0.0.1","target":8882,"published":"8882","protocol":"tcp"},{"target":9883,"published":"9883","protocol":"udp","host_ip":"127.0.0.1"}]}}}`,
			opt:   Options{PublishMode: "host"},
			want:  `{"image":"i","ports":[{"mode":"host","protocol":"tcp","published":8882,"target":8882},{"mode":"host","protocol":"udp","published":9883,"target":9883}]}`,
			notes: []string{"s: ports[].host_ip: dropped", "s: ports[].mode: ingress becomes host"},
		},
		{
			name:    "a published range is an error",
			model:   `{"services":{"s":{"image":"i","ports":[{"target":80,"published":"8000-8001"}]}}}`,
			wantErr: "not a port number",
		},
		{
			name:  "a bind mount loses create_host_path",
			model: `{"services":{"s":{"image":"i","volumes":[{"type":"bind","source":"/a","target":"/b","read_only":true,"bind":{"create_host_path":true}}]}}}`,
			want:  `{"image":"i","volumes":[{"read_only":true,"source":"/a","target":"/b","type":"bind"}]}`,
			notes: []string{"s: volumes[].bind.create_host_path: dropped"},
		},
		{
			name:  "extra hosts as name:address",
			model: `{"services":{"s":{"image":"i","extra_hosts":["host.docker.internal=host-gateway","a:1.2.3.4"]}}}`,
			want:  `{"extra_hosts":["host.docker.internal:host-gateway","a:1.2.3.4"],"image":"i"}`,
		},
		{
			name:  "extra hosts from a map",
			model: `{"services":{"s":{"image":"i","extra_hosts":{"b":["::1"],"a":"1.2.3.4"}}}}`,
			want:  `{"extra_hosts":["a:1.2.3.4","b:::1"],"image":"i"}`,
		},
		{
			name:  "a proxy is placed on the sut nodes, with the endpoint mode given",
			model: `{"services":{"s":{"image":"i","labels":{"proxybench.role":"proxy"}}}}`,
			opt:   Options{EndpointMode: "dnsrr"},
			want:  `{"deploy":{"endpoint_mode":"dnsrr","placement":{"constraints":["node.labels.proxybench.role.sut == true"]}},"image":"i","labels":{"proxybench.role":"proxy"}}`,
			notes: []string{"s: labels.proxybench.role: placed by it"},
		},
		{
			name:  "a global service gets no role constraint",
			model: `{"services":{"s":{"image":"i","labels":["proxybench.role=infra"],"deploy":{"mode":"global"}}}}`,
			want:  `{"deploy":{"mode":"global"},"image":"i","labels":["proxybench.role=infra"]}`,
		},
		{
			name:  "a constraint already there is not added again",
			model: `{"services":{"s":{"image":"i","labels":{"proxybench.role":"origin"},"deploy":{"placement":{"constraints":["node.labels.proxybench.role.origin == true"]}}}}}`,
			want:  `{"deploy":{"placement":{"constraints":["node.labels.proxybench.role.origin == true"]}},"image":"i","labels":{"proxybench.role":"origin"}}`,
		},
		{
			name:  "keys Swarm has not are dropped and named",
			model: `{"services":{"s":{"image":"i","container_name":"c","build":{"context":"."},"depends_on":{"o":{"condition":"service_started"}},"network_mode":"none","privileged":true,"pids_limit":5}}}`,
			want:  `{"image":"i"}`,
			notes: []string{"s: build: dropped", "s: container_name: dropped", "s: depends_on: dropped", "s: network_mode: dropped", "s: pids_limit: dropped: not a service key", "s: privileged: dropped: docker stack deploy ignores it"},
		},
		{
			name:  "compose's labels, for the lab's tools",
			model: `{"services":{"s":{"image":"i","labels":["proxybench.role=infra","com.docker.compose.service=kept"],"deploy":{"mode":"global"}}}}`,
			opt:   Options{Project: "p"},
			want:  `{"deploy":{"mode":"global"},"image":"i","labels":{"com.docker.compose.project":"p","com.docker.compose.service":"kept","proxybench.role":"infra"}}`,
			notes: []string{"services.*.labels: every service gets com.docker.compose.project=p"},
		},
		{
			name:  "dollars are doubled",
			model: `{"services":{"s":{"image":"i","environment":{"A":"$x"}}}}`,
			want:  `{"environment":{"A":"$$x"},"image":"i"}`,
		},
		{
			name:    "no services",
			model:   `{"name":"p"}`,
			wantErr: "no services",
		},
		{
			name:    "not JSON",
			model:   `services: {}`,
			wantErr: "read the compose model",
		},
		{
			name:    "dnsrr cannot publish through the mesh",
			model:   `{"services":{}}`,
			opt:     Options{EndpointMode: "dnsrr", PublishMode: "ingress"},
			wantErr: "dnsrr cannot publish",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out, notes, err := Convert([]byte(c.model), c.opt)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var file struct {
				Version  string                     `json:"version"`
				Services map[string]json.RawMessage `json:"services"`
			}
			if err := json.Unmarshal(out, &file); err != nil {
				t.Fatal(err)
			}
			if file.Version != "3.13" {
				t.Errorf("version %q, want 3.13", file.Version)
			}
			var got bytes.Buffer
			if err := json.Compact(&got, file.Services["s"]); err != nil {
				t.Fatal(err)
			}
			if got.String() != c.want {
				t.Errorf("service s:\n got %s\nwant %s", got.String(), c.want)
			}
			if len(notes) != len(c.notes) {
				t.Errorf("notes %q, want %d starting %q", notes, len(c.notes), c.notes)
				return
			}
			for i, n := range notes {
				if !strings.HasPrefix(n.String(), c.notes[i]) {
					t.Errorf("note %d %q, want it to start %q", i, n, c.notes[i])
				}
			}
		})
	}
}

func TestTopLevel(t *testing.T) {
	t.Parallel()
	model := `{"name":"proxybench","services":{"s":{"image":"i"}},
	  "networks":{"default":{"name":"proxybench_default","ipam":{}},"other":{"name":"theirs","external":true}},
	  "volumes":{"data":{"name":"proxybench_data"},"x":{"name":"x_y","driver":"local","foo":1}}}`
	out, notes, err := Convert([]byte(model), DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	var file map[string]any
	if err := json.Unmarshal(out, &file); err != nil {
		t.Fatal(err)
	}
	if _, ok := file["name"]; ok {
		t.Error("the top-level name is kept; docker stack deploy's schema has none")
	}
	nets := file["networks"].(map[string]any)
	if nets["default"] != nil {
		t.Errorf("network default = %v, want null (its name is the stack's default)", nets["default"])
	}
	if other := nets["other"].(map[string]any); other["name"] != "theirs" || other["external"] != true {
		t.Errorf("external network = %v, want its name kept", other)
	}
	vols := file["volumes"].(map[string]any)
	if vols["data"] != nil {
		t.Errorf("volume data = %v, want null", vols["data"])
	}
	if x := vols["x"].(map[string]any); x["name"] != "x_y" || x["foo"] != nil {
		t.Errorf("volume x = %v, want its own name kept and foo left out", x)
	}
	var joined []string
	for _, n := range notes {
		joined = append(joined, n.String())
	}
	want := "name: dropped: the stack's name is given to docker stack deploy\nvolumes.x.foo: dropped: not in the Compose file format 3.13\n" +
		"services.*.labels: every service gets com.docker.compose.project=proxybench and com.docker.compose.service=<service>, as compose sets them: the lab's tools find the stack's containers by them"
	if strings.Join(joined, "\n") != want {
		t.Errorf("notes:\n%s\nwant:\n%s", strings.Join(joined, "\n"), want)
	}
}

func TestCommand(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	if rc := run([]string{"-node-labels"}, strings.NewReader(""), &out, &errb); rc != 0 {
		t.Fatalf("rc %d: %s", rc, errb.String())
	}
	want := "proxybench.role.sut=true\nproxybench.role.load=true\nproxybench.role.origin=true\nproxybench.role.observe=true\n"
	if out.String() != want {
		t.Errorf("-node-labels printed %q, want %q", out.String(), want)
	}
	out.Reset()
	if rc := run([]string{"-node-labels", "-roles", "load, observe,load"}, strings.NewReader(""), &out, &errb); rc != 0 || out.String() != "proxybench.role.load=true\nproxybench.role.observe=true\n" {
		t.Errorf("-roles load,observe: rc %d, printed %q (%s)", rc, out.String(), errb.String())
	}
	out.Reset()
	if rc := run([]string{"-node-labels", "-roles", "sut,proxy"}, strings.NewReader(""), &out, &errb); rc != 2 || !strings.Contains(errb.String(), `unknown role "proxy"`) {
		t.Errorf("-roles sut,proxy: rc %d, stderr %q: want 2 naming the role", rc, errb.String())
	}
	out.Reset()
	errb.Reset()
	if rc := run([]string{"-publish-mode", "mesh"}, strings.NewReader(`{"services":{}}`), &out, &errb); rc != 2 || !strings.Contains(errb.String(), `publish mode "mesh"`) {
		t.Errorf("rc %d, stderr %q: want 2 naming the mode", rc, errb.String())
	}
}

// FuzzConvert: any input is a stack file or an error, never a panic, and
// a stack file is JSON.
func FuzzConvert(f *testing.F) {
	f.Add([]byte(`{"services":{"s":{"image":"i","cpus":1,"ports":[{"target":1,"published":"2"}],"volumes":[{"type":"bind","bind":{}}],"extra_hosts":{"a":"b"},"labels":["proxybench.role=proxy"],"deploy":{"resources":{"limits":{"cpus":"1"}}}}}}`))
	f.Add([]byte(`{"services":{"s":null}}`))
	f.Add([]byte(`{"services":{"s":{"deploy":{"resources":{"limits":7}}}}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, model []byte) {
		out, _, err := Convert(model, DefaultOptions)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("not JSON: %s", out)
		}
	})
}
