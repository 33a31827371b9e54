// Package swarmstack owns the bridge from the lab's compose files to a
// Docker Swarm stack. `docker stack deploy` validates every file it is given
// against the Compose file format 3.13 (docker/cli's JSON schema) before it
// merges them, and the lab's compose files use Compose Specification keys
// that format rejects (cpus, cpuset, mem_limit, memswap_limit, profiles), so
// no override file can bridge them. Convert takes the model `docker compose
// config --format json` prints (the files merged, interpolated, paths made
// absolute) and writes the same services as a 3.13 stack file: it moves
// what Swarm has under another name (cpus and mem_limit to
// deploy.resources.limits, restart to deploy.restart_policy, the
// proxybench.role label to a placement constraint on the node role labels),
// drops what Swarm has no equivalent for, and says so for each key in a
// Note. The compose files stay the one definition of the services;
// docs/swarm.md lists the notes and what they mean for parity.
package swarmstack

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"proxybench/internal/dockerx"
)

// NodeRoles are the roles a node takes. A node carries one label per role,
// NodeLabel(role)=true, because a placement constraint compares a label's
// whole value (== or !=): one label listing several roles
// ("sut,load,origin,observe") could be matched by none of them. On one
// machine the one node carries all four.
var NodeRoles = []string{"sut", "load", "origin", "observe"}

// NodeLabel is the node label that gives a node role.
func NodeLabel(role string) string { return "proxybench.role." + role }

// placedOn maps a service's proxybench.role container label
// (dockerx.LabelRole) to the node role it is placed on. The loadgen
// workers, which no compose service runs, take the "load" nodes.
var placedOn = map[string]string{"proxy": "sut", "origin": "origin", "infra": "observe"}

// Constraint is the placement constraint of the nodes that take role.
func Constraint(role string) string { return "node.labels." + NodeLabel(role) + " == true" }

// Options are the Swarm-only choices of a conversion.
type Options struct {
	// Project is the compose project and the stack's name: a network or
	// volume named <Project>_<key> loses its name, which the stack gives
	// it back, and every service's containers get compose's project and
	// service labels.
	Project string
	// EndpointMode is each service's deploy.endpoint_mode where the model
	// sets none: "dnsrr" (the service name resolves to its tasks' own
	// addresses) or "vip" (one virtual address, balanced by IPVS).
	EndpointMode string
	// PublishMode is each published port's mode: "host" (the port of the
	// node that runs the task) or "ingress" (the routing mesh, IPVS, on
	// every node).
	PublishMode string
}

// DefaultOptions are the lab's: no IPVS anywhere in the measured path (nor
// needed from the kernel), and a proxy reached on the node it runs on.
var DefaultOptions = Options{Project: "proxybench", EndpointMode: "dnsrr", PublishMode: "host"}

// Note is one change Convert made to a service or to the file.
type Note struct {
	Service string // "" for a top-level key
	Key     string // e.g. cpuset, ports[].host_ip
	What    string // what happened to it and why
}

func (n Note) String() string {
	if n.Service == "" {
		return n.Key + ": " + n.What
	}
	return n.Service + ": " + n.Key + ": " + n.What
}

// Validate reports options that name no mode Swarm has.
func (o Options) Validate() error {
	var errs []error
	if o.EndpointMode != "" && o.EndpointMode != "dnsrr" && o.EndpointMode != "vip" {
		errs = append(errs, fmt.Errorf("endpoint mode %q: want dnsrr or vip", o.EndpointMode))
	}
	if o.PublishMode != "" && o.PublishMode != "host" && o.PublishMode != "ingress" {
		errs = append(errs, fmt.Errorf("publish mode %q: want host or ingress", o.PublishMode))
	}
	if o.EndpointMode == "dnsrr" && o.PublishMode == "ingress" {
		errs = append(errs, errors.New("endpoint mode dnsrr cannot publish through the ingress routing mesh: use publish mode host"))
	}
	return errors.Join(errs...)
}

// Convert turns the JSON model of `docker compose config --format json`
// into a stack file (JSON, which YAML readers take) for `docker stack
// deploy -c`, with a note for every key moved or dropped, in a stable
// order. Every "$" of the output is doubled: the model is interpolated
// already, and docker stack deploy interpolates again.
func Convert(model []byte, opt Options) ([]byte, []Note, error) {
	if err := opt.Validate(); err != nil {
		return nil, nil, err
	}
	var top map[string]any
	if err := json.Unmarshal(model, &top); err != nil {
		return nil, nil, fmt.Errorf("read the compose model: %w", err)
	}
	if top == nil {
		return nil, nil, errors.New("read the compose model: not a JSON object")
	}
	var notes []Note
	out := map[string]any{"version": "3.13"}
	for _, k := range sortedKeys(top) {
		v := top[k]
		switch k {
		case "services":
			svcs, ok := v.(map[string]any)
			if !ok {
				return nil, nil, errors.New("services: not an object")
			}
			conv := make(map[string]any, len(svcs))
			for _, name := range sortedKeys(svcs) {
				s, ok := svcs[name].(map[string]any)
				if !ok {
					return nil, nil, fmt.Errorf("service %s: not an object", name)
				}
				c, n, err := convertService(name, s, opt)
				if err != nil {
					return nil, nil, fmt.Errorf("service %s: %w", name, err)
				}
				conv[name] = c
				notes = append(notes, n...)
			}
			out[k] = conv
		case "networks", "volumes":
			c, n, err := convertTopObjects(k, v, opt.Project)
			if err != nil {
				return nil, nil, err
			}
			out[k] = c
			notes = append(notes, n...)
		case "configs", "secrets":
			out[k] = v
		case "name":
			notes = append(notes, Note{Key: k, What: "dropped: the stack's name is given to docker stack deploy"})
		default:
			if !strings.HasPrefix(k, "x-") {
				notes = append(notes, Note{Key: k, What: "dropped: not a top-level key of the Compose file format 3.13"})
			}
		}
	}
	if _, ok := out["services"]; !ok {
		return nil, nil, errors.New("the compose model has no services")
	}
	if opt.Project != "" {
		notes = append(notes, Note{Key: "services.*.labels", What: "every service gets " + dockerx.LabelProject + "=" + opt.Project +
			" and " + dockerx.LabelService + "=<service>, as compose sets them: the lab's tools find the stack's containers by them"})
	}
	b, err := json.MarshalIndent(escapeDollars(out), "", "  ")
	if err != nil {
		return nil, nil, fmt.Errorf("write the stack file: %w", err)
	}
	return append(b, '\n'), notes, nil
}

// kept are the service keys of the Compose file format 3.13 that Swarm
// applies as they are.
var kept = set("cap_add", "cap_drop", "command", "configs", "credential_spec", "dns", "dns_search",
	"entrypoint", "env_file", "environment", "hostname", "image", "init", "isolation", "labels",
	"logging", "networks", "oom_score_adj", "read_only", "secrets", "stdin_open", "stop_grace_period",
	"stop_signal", "sysctls", "tmpfs", "tty", "ulimits", "user", "working_dir")

// dropped are the service keys Swarm has no equivalent for, with why.
var dropped = map[string]string{
	"cpuset":         "dropped: Swarm cannot pin a service to CPUs; roles are kept apart by node (placement constraints)",
	"memswap_limit":  "dropped: Swarm sets no swap limit (on a node without swap the memory limit is the whole limit)",
	"container_name": "dropped: Swarm names each task itself (<stack>_<service>.<slot>.<task id>)",
	"build":          "dropped: Swarm builds nothing; every node must have the image already",
	"depends_on":     "dropped: Swarm has no start order; a service that exits because its upstream is not there yet is started again (restart policy)",
	"network_mode":   "dropped: a Swarm service joins the stack's overlay network",
	"profiles":       "dropped: Swarm has no profiles (compose config left out the inactive ones already)",
	"expose":         "dropped: services on one network reach each other's every port",
	"pull_policy":    "dropped: the node's engine decides (scripts/swarm.sh turns its pulls off)",
}

// moved are the service keys Swarm has in its deploy section, and where.
var moved = map[string][]string{
	"cpus":            {"resources", "limits", "cpus"},
	"mem_limit":       {"resources", "limits", "memory"},
	"mem_reservation": {"resources", "reservations", "memory"},
}

var movedWhy = map[string]string{"cpus": " (the same CFS quota)"}

// ignoredBySwarm are the keys docker stack deploy accepts and ignores
// (docker/cli's UnsupportedProperties).
var ignoredBySwarm = set("cgroup_parent", "cgroupns_mode", "devices", "domainname", "external_links",
	"ipc", "links", "mac_address", "pid", "privileged", "security_opt", "shm_size", "userns_mode")

func convertService(name string, s map[string]any, opt Options) (map[string]any, []Note, error) {
	out := map[string]any{}
	var notes []Note
	note := func(key, what string) { notes = append(notes, Note{Service: name, Key: key, What: what}) }
	deploy, dn, err := convertDeploy(s["deploy"])
	if err != nil {
		return nil, nil, fmt.Errorf("deploy: %w", err)
	}
	for _, k := range dn {
		note("deploy."+k, "dropped: not in the Compose file format 3.13's deploy section")
	}
	for _, k := range sortedKeys(s) {
		v := s[k]
		switch {
		case v == nil: // unset (compose prints "entrypoint": null), which the 3.13 schema refuses
		case k == "deploy":
		case moved[k] != nil:
			to := moved[k]
			if setIn(deploy, v, to...) {
				note(k, "moved to deploy."+strings.Join(to, ".")+movedWhy[k])
			} else {
				note(k, "dropped: deploy."+strings.Join(to, ".")+" is set")
			}
		case k == "restart":
			if _, ok := deploy["restart_policy"]; ok {
				note(k, "dropped: deploy.restart_policy is set")
				break
			}
			cond, what, err := restartCondition(v)
			if err != nil {
				return nil, nil, err
			}
			deploy["restart_policy"] = map[string]any{"condition": cond}
			note(k, what)
		case k == "ports":
			p, n, err := convertPorts(v, opt.PublishMode)
			if err != nil {
				return nil, nil, fmt.Errorf("ports: %w", err)
			}
			out[k] = p
			for _, w := range n {
				note("ports[]."+w.key, w.what)
			}
		case k == "volumes":
			vs, n, err := convertVolumes(v)
			if err != nil {
				return nil, nil, fmt.Errorf("volumes: %w", err)
			}
			out[k] = vs
			for _, w := range n {
				why := "dropped: not in the Compose file format 3.13's volume syntax"
				if w == "bind.create_host_path" {
					why = "dropped: a Swarm bind mount's source must exist on the node (Swarm never creates it)"
				}
				note("volumes[]."+w, why)
			}
		case k == "extra_hosts":
			h, err := convertHosts(v)
			if err != nil {
				return nil, nil, fmt.Errorf("extra_hosts: %w", err)
			}
			out[k] = h
		case k == "healthcheck":
			h, n := keepKeys(v, set("disable", "interval", "retries", "start_interval", "start_period", "test", "timeout"))
			out[k] = h
			for _, w := range n {
				note("healthcheck."+w, "dropped: not in the Compose file format 3.13's healthcheck")
			}
		case dropped[k] != "":
			note(k, dropped[k])
		case ignoredBySwarm[k]:
			note(k, "dropped: docker stack deploy ignores it (a Swarm service has no such setting)")
		case kept[k]:
			out[k] = v
		default:
			note(k, "dropped: not a service key of the Compose file format 3.13")
		}
	}
	if opt.Project != "" {
		addLabels(out, map[string]string{dockerx.LabelProject: opt.Project, dockerx.LabelService: name})
	}
	if _, ok := deploy["endpoint_mode"]; !ok && opt.EndpointMode != "" {
		deploy["endpoint_mode"] = opt.EndpointMode
	}
	if deploy["mode"] != "global" {
		if role, ok := placedOn[label(s["labels"], dockerx.LabelRole)]; ok && addConstraint(deploy, Constraint(role)) {
			note("labels."+dockerx.LabelRole, "placed by it: deploy.placement.constraints gets "+Constraint(role))
		}
	}
	if len(deploy) > 0 {
		out["deploy"] = deploy
	}
	return out, notes, nil
}

// restartCondition is Swarm's restart condition for a compose restart
// policy. "no" becomes on-failure: Swarm starts every service at once, and
// a proxy that resolves its upstreams when it starts (nginx, HAProxy)
// exits while the origins' names are not there yet.
func restartCondition(v any) (cond, what string, err error) {
	p, _ := v.(string)
	switch {
	case p == "" || p == "no":
		return "on-failure", `"no" becomes deploy.restart_policy on-failure: Swarm has no start order, so a proxy started before its origins resolve exits and is started again`, nil
	case p == "always" || p == "unless-stopped":
		return "any", "moved to deploy.restart_policy any", nil
	case p == "on-failure" || strings.HasPrefix(p, "on-failure:"):
		return "on-failure", "moved to deploy.restart_policy on-failure", nil
	}
	return "", "", fmt.Errorf("restart %v: want no, always, unless-stopped or on-failure", v)
}

// deployKeys are the deploy keys of the Compose file format 3.13.
var deployKeys = set("endpoint_mode", "labels", "mode", "placement", "replicas", "resources",
	"restart_policy", "rollback_config", "update_config")

// convertDeploy copies a compose deploy section into the 3.13 shape:
// resource numbers as the strings that format wants, unknown keys left
// out (and named).
func convertDeploy(v any) (map[string]any, []string, error) {
	out := map[string]any{}
	if v == nil {
		return out, nil, nil
	}
	d, ok := v.(map[string]any)
	if !ok {
		return nil, nil, errors.New("not an object")
	}
	var left []string
	for _, k := range sortedKeys(d) {
		switch {
		case k == "resources":
			r, n, err := convertResources(d[k])
			if err != nil {
				return nil, nil, err
			}
			if len(r) > 0 {
				out[k] = r
			}
			left = append(left, n...)
		case deployKeys[k]:
			if !empty(d[k]) {
				out[k] = d[k]
			}
		default:
			left = append(left, k)
		}
	}
	return out, left, nil
}

var resourceKeys = map[string]map[string]bool{
	"limits":       set("cpus", "memory", "pids"),
	"reservations": set("cpus", "memory", "generic_resources"),
}

func convertResources(v any) (map[string]any, []string, error) {
	r, ok := v.(map[string]any)
	if !ok {
		return nil, nil, errors.New("resources: not an object")
	}
	out := map[string]any{}
	var left []string
	for _, k := range sortedKeys(r) {
		allowed, ok := resourceKeys[k]
		if !ok {
			left = append(left, "resources."+k)
			continue
		}
		m, ok := r[k].(map[string]any)
		if !ok {
			return nil, nil, fmt.Errorf("resources.%s: not an object", k)
		}
		c := map[string]any{}
		for _, f := range sortedKeys(m) {
			switch {
			case !allowed[f]:
				left = append(left, "resources."+k+"."+f)
			case f == "cpus" || f == "memory":
				s, err := quantity(m[f])
				if err != nil {
					return nil, nil, fmt.Errorf("resources.%s.%s: %w", k, f, err)
				}
				c[f] = s
			default:
				c[f] = m[f]
			}
		}
		if len(c) > 0 {
			out[k] = c
		}
	}
	return out, left, nil
}

// setIn sets d[path...] to the quantity v unless the deploy section has it
// already; it reports whether it did.
func setIn(d map[string]any, v any, path ...string) bool {
	q, err := quantity(v)
	if err != nil || q == "" {
		return false
	}
	m := d
	for _, p := range path[:len(path)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	last := path[len(path)-1]
	if _, ok := m[last]; ok {
		return false
	}
	m[last] = q
	return true
}

// quantity is a CPU count or a byte count as the string the 3.13 format
// wants: JSON numbers in their shortest decimal form, strings as they are.
func quantity(v any) (string, error) {
	switch q := v.(type) {
	case string:
		return q, nil
	case float64:
		return strconv.FormatFloat(q, 'f', -1, 64), nil
	case nil:
		return "", nil
	}
	return "", fmt.Errorf("%v: want a number or a string", v)
}
