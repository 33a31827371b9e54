package report

import (
	"strings"
	"testing"
)

func TestIsolationStatement(t *testing.T) {
	t.Parallel()
	on, off := true, false
	roles := func(l, p, o, obs string) *Placement {
		return &Placement{Roles: []PlacedRole{{"loadgen", l}, {"proxy", p}, {"origins", o}, {"observability", obs}}}
	}
	for _, tc := range []struct {
		name      string
		on        *bool
		p         *Placement
		has, lack []string
	}{
		{name: "on, 2 CPUs", on: &on, p: roles("0", "1", "0", "0"),
			has:  []string{"While a proxy is measured, every other proxy is frozen", "still hold their memory, their sockets", "share (CPU 0 in this placement)", "softirq", "last-level cache"},
			lack: []string{"Isolation was off"}},
		{name: "off", on: &off, p: roles("0", "1", "0", "0"),
			has: []string{"Isolation was off for this run", "With isolation on, every other proxy is frozen"}},
		{name: "none", on: &on, p: roles("", "", "", ""),
			has: []string{"without cpusets the loadgen, the proxy, the origins and observability all run on every CPU"}},
		{name: "8 CPUs, nothing shared", on: &on, p: roles("1-3", "6-7", "4-5", "0"),
			has: []string{"all four origins share the origins' CPUs"}, lack: []string{"in this placement"}},
		{name: "3 CPUs", on: &on, p: roles("0", "2", "1", "0"), has: []string{"share (CPU 0 in this placement)"}},
		{name: "custom ranges", on: &on, p: roles("0-2", "3", "1-2", "2"), has: []string{"share (CPU 1-2 in this placement)"}},
		{name: "unknown", has: []string{"With isolation on (the default)", "The CPUs the loadgen, the origins and observability share:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := IsolationStatement(tc.on, tc.p)
			all := strings.Join(append(append([]string{}, s.Isolates...), s.Not...), "\n")
			for _, h := range tc.has {
				if !strings.Contains(all, h) {
					t.Errorf("statement lacks %q:\n%s", h, all)
				}
			}
			for _, l := range tc.lack {
				if strings.Contains(all, l) {
					t.Errorf("statement has %q:\n%s", l, all)
				}
			}
			if len(s.Isolates) == 0 || len(s.Not) < 5 {
				t.Errorf("statement %+v", s)
			}
		})
	}
}
