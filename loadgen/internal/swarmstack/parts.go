package swarmstack

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// The parts of a service and of the file that the 3.13 format spells
// differently from the compose model: ports, volumes, extra hosts, the
// top-level networks and volumes; and the map helpers Convert shares.

type portNote struct{ key, what string }

// convertPorts writes published ports in the 3.13 long syntax: target and
// published as integers, the mode given, and no host address (a Swarm port
// has none: it is published on every address of the node).
func convertPorts(v any, mode string) ([]any, []portNote, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, nil, errors.New("not a list")
	}
	var out []any
	seen := map[string]bool{}
	var notes []portNote
	addNote := func(key, what string) {
		if !seen[key] {
			seen[key] = true
			notes = append(notes, portNote{key, what})
		}
	}
	for _, e := range list {
		p, ok := e.(map[string]any)
		if !ok {
			out = append(out, e) // the short syntax, which docker stack deploy parses itself
			continue
		}
		c := map[string]any{}
		for _, k := range sortedKeys(p) {
			switch k {
			case "target", "published":
				n, err := port(p[k])
				if err != nil {
					return nil, nil, fmt.Errorf("%s: %w", k, err)
				}
				if n > 0 {
					c[k] = n
				}
			case "protocol":
				c[k] = p[k]
			case "mode":
				if mode == "" {
					c[k] = p[k]
				} else if p[k] != mode {
					addNote("mode", fmt.Sprintf("%v becomes %s", p[k], mode))
				}
			case "host_ip":
				addNote(k, "dropped: Swarm publishes a port on every address of the node (LISTEN has no effect)")
			default:
				addNote(k, "dropped: not in the Compose file format 3.13's port syntax")
			}
		}
		if mode != "" {
			c["mode"] = mode
		}
		out = append(out, c)
	}
	return out, notes, nil
}

// port reads a port number, given as a number or a string; a range is an
// error (the lab publishes none, and the 3.13 long syntax has none).
func port(v any) (int, error) {
	switch p := v.(type) {
	case float64:
		if p < 0 || p > 65535 || p != float64(int(p)) {
			return 0, fmt.Errorf("%v: not a port number", v)
		}
		return int(p), nil
	case string:
		if p == "" {
			return 0, nil
		}
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 65535 {
			return 0, fmt.Errorf("%q: not a port number (a range cannot be published by a Swarm file's long syntax)", p)
		}
		return n, nil
	}
	return 0, fmt.Errorf("%v: not a port number", v)
}

var volumeKeys = set("type", "source", "target", "read_only", "consistency", "bind", "volume", "tmpfs")

var volumeSubKeys = map[string]map[string]bool{
	"bind":   set("propagation"),
	"volume": set("nocopy"),
	"tmpfs":  set("size"),
}

// convertVolumes keeps the 3.13 volume syntax of each mount and names what
// it left out (compose's bind.create_host_path: a Swarm bind mount's source
// must exist on the node).
func convertVolumes(v any) ([]any, []string, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, nil, errors.New("not a list")
	}
	var out []any
	seen := map[string]bool{}
	var left []string
	leave := func(k string) {
		if !seen[k] {
			seen[k] = true
			left = append(left, k)
		}
	}
	for _, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			out = append(out, e)
			continue
		}
		c := map[string]any{}
		for _, k := range sortedKeys(m) {
			switch {
			case volumeSubKeys[k] != nil:
				sub, n := keepKeys(m[k], volumeSubKeys[k])
				for _, w := range n {
					leave(k + "." + w)
				}
				if len(sub) > 0 {
					c[k] = sub
				}
			case volumeKeys[k]:
				c[k] = m[k]
			default:
				leave(k)
			}
		}
		out = append(out, c)
	}
	return out, left, nil
}

// convertHosts writes extra hosts as the "name:address" list docker stack
// deploy reads; compose prints them as "name=address" or as a map.
func convertHosts(v any) ([]any, error) {
	var out []any
	switch h := v.(type) {
	case []any:
		for _, e := range h {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("%v: not a string", e)
			}
			if name, addr, ok := strings.Cut(s, "="); ok {
				s = name + ":" + addr
			}
			out = append(out, s)
		}
	case map[string]any:
		for _, name := range sortedKeys(h) {
			switch a := h[name].(type) {
			case string:
				out = append(out, name+":"+a)
			case []any:
				for _, e := range a {
					out = append(out, fmt.Sprintf("%s:%v", name, e))
				}
			default:
				return nil, fmt.Errorf("%s: %v: not an address", name, h[name])
			}
		}
	default:
		return nil, errors.New("not a list or a map")
	}
	return out, nil
}

var topObjectKeys = map[string]map[string]bool{
	"networks": set("name", "driver", "driver_opts", "ipam", "external", "internal", "attachable", "labels"),
	"volumes":  set("name", "driver", "driver_opts", "external", "labels"),
}

// convertTopObjects keeps the networks' or volumes' 3.13 keys. A name that
// is the project's default (<project>_<key>) is left out: the stack gives
// its objects that name itself.
func convertTopObjects(kind string, v any, project string) (map[string]any, []Note, error) {
	objs, ok := v.(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("%s: not an object", kind)
	}
	out := make(map[string]any, len(objs))
	var notes []Note
	for _, key := range sortedKeys(objs) {
		m, ok := objs[key].(map[string]any)
		if !ok {
			out[key] = objs[key]
			continue
		}
		c, left := keepKeys(m, topObjectKeys[kind])
		if c["name"] == project+"_"+key && !truthy(c["external"]) {
			delete(c, "name")
		}
		for k, v := range c {
			if empty(v) && k != "external" {
				delete(c, k)
			}
		}
		for _, k := range left {
			notes = append(notes, Note{Key: kind + "." + key + "." + k, What: "dropped: not in the Compose file format 3.13"})
		}
		if len(c) == 0 {
			out[key] = nil
		} else {
			out[key] = c
		}
	}
	return out, notes, nil
}

// label is the value of label key in a compose labels map or list.
func label(v any, key string) string {
	switch l := v.(type) {
	case map[string]any:
		s, _ := l[key].(string)
		return s
	case []any:
		for _, e := range l {
			if s, ok := e.(string); ok {
				if k, val, _ := strings.Cut(s, "="); k == key {
					return val
				}
			}
		}
	}
	return ""
}

// addLabels sets the container labels of a converted service that it does
// not have (a list of labels becomes a map): compose's project and service
// labels, which Swarm does not set, so that the lab's tools
// (internal/dockerx: the exporter, the loadgen) find a task's container as
// they find compose's. It reports whether it set any.
func addLabels(svc map[string]any, add map[string]string) bool {
	labels := map[string]any{}
	switch l := svc["labels"].(type) {
	case map[string]any:
		for k, v := range l {
			labels[k] = v
		}
	case []any:
		for _, e := range l {
			if s, ok := e.(string); ok {
				k, v, _ := strings.Cut(s, "=")
				labels[k] = v
			}
		}
	}
	added := false
	for _, k := range sortedKeys(add) {
		if _, ok := labels[k]; !ok && add[k] != "" {
			labels[k] = add[k]
			added = true
		}
	}
	if added {
		svc["labels"] = labels
	}
	return added
}

// addConstraint adds c to the deploy section's placement constraints
// unless it is there; it reports whether it added it.
func addConstraint(d map[string]any, c string) bool {
	pl, _ := d["placement"].(map[string]any)
	if pl == nil {
		pl = map[string]any{}
	}
	cons, _ := pl["constraints"].([]any)
	for _, e := range cons {
		if e == c {
			return false
		}
	}
	pl["constraints"] = append(cons, c)
	d["placement"] = pl
	return true
}

// keepKeys copies the allowed keys of an object and names the others.
func keepKeys(v any, allowed map[string]bool) (map[string]any, []string) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, nil
	}
	out := map[string]any{}
	var left []string
	for _, k := range sortedKeys(m) {
		if allowed[k] {
			out[k] = m[k]
		} else {
			left = append(left, k)
		}
	}
	return out, left
}

// escapeDollars doubles every "$" in the strings of v: docker stack deploy
// interpolates the file it reads, and the model's values are final.
func escapeDollars(v any) any {
	switch x := v.(type) {
	case string:
		return strings.ReplaceAll(x, "$", "$$")
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = escapeDollars(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = escapeDollars(e)
		}
		return out
	}
	return v
}

func empty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	case string:
		return x == ""
	}
	return false
}

func truthy(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case map[string]any:
		return true
	}
	return false
}

func set(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
