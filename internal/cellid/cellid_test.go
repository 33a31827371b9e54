package cellid

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestEmbeddedJSON: a struct embedding Key encodes exactly like one that
// declares the fields itself, in the same place.
func TestEmbeddedJSON(t *testing.T) {
	t.Parallel()
	type flat struct {
		ID       string `json:"id"`
		Proxy    string `json:"proxy"`
		Origin   string `json:"origin"`
		Scenario string `json:"scenario"`
		Tier     string `json:"tier"`
		Repeat   int    `json:"repeat"`
		Status   string `json:"status"`
	}
	type embedded struct {
		Key
		Status string `json:"status"`
	}
	k := New("nginx", "fast", "simple", "quick", 2)
	want, _ := json.Marshal(flat{k.ID, k.Proxy, k.Origin, k.Scenario, k.Tier, k.Repeat, "ok"})
	got, _ := json.Marshal(embedded{k, "ok"})
	if string(got) != string(want) {
		t.Fatalf("embedded %s, flat %s", got, want)
	}
	var back embedded
	if err := json.Unmarshal(want, &back); err != nil || back.Key != k {
		t.Fatalf("decoded %+v, %v; want %+v", back, err, k)
	}
}

func TestLabels(t *testing.T) {
	t.Parallel()
	k := New("haproxy", "go", "auth", "medium", 3)
	if k.ID != "haproxy.go.auth.medium.r3" || k.GroupKey() != "haproxy.go.auth.medium" || k.RepeatLabel() != "3" {
		t.Fatalf("%+v: group %q repeat %q", k, k.GroupKey(), k.RepeatLabel())
	}
	a := NewArm("haproxy", "go", "auth", "medium", ArmControl, 3)
	if a.ID != "haproxy.go.auth.medium.aa.r3" || a.GroupKey() != "haproxy.go.auth.medium.aa" || a.PlanKey() != k.GroupKey() {
		t.Fatalf("%+v: group %q plan %q", a, a.GroupKey(), a.PlanKey())
	}
	// The label names are the cell series' (metricdefs.CellLabels without
	// run), in order.
	names := []string{"cell", "proxy", "origin", "scenario", "tier", "arm", "repeat"}
	for _, key := range []Key{k, a} {
		l := map[string]string{}
		vals := key.LabelValues()
		if len(vals) != len(names) {
			t.Fatalf("%d label values for %d names", len(vals), len(names))
		}
		for i, v := range vals {
			l[names[i]] = v
		}
		if got := FromLabels(l); !reflect.DeepEqual(got, key) {
			t.Fatalf("FromLabels(%v) = %+v, want %+v", l, got, key)
		}
	}
}

// TestGroupIsTheKeyWithoutIDAndRepeat: a Group encodes as its cells' Key
// does without the id and the repeat, and its Key is each cell's GroupKey.
func TestGroupIsTheKeyWithoutIDAndRepeat(t *testing.T) {
	t.Parallel()
	for _, k := range []Key{New("nginx", "fast", "simple", "quick", 2), NewArm("caddy", "go", "auth", "medium", ArmCandidate, 1)} {
		var fields map[string]any
		b, _ := json.Marshal(k)
		if err := json.Unmarshal(b, &fields); err != nil {
			t.Fatal(err)
		}
		delete(fields, "id")
		delete(fields, "repeat")
		want, _ := json.Marshal(fields)
		var got map[string]any
		gb, _ := json.Marshal(k.Group())
		if err := json.Unmarshal(gb, &got); err != nil {
			t.Fatal(err)
		}
		if g, _ := json.Marshal(got); string(g) != string(want) {
			t.Errorf("group %s, key without id and repeat %s", g, want)
		}
		if k.Group().Key() != k.GroupKey() || k.GroupKey() == "" {
			t.Errorf("group key %q, the cell's %q", k.Group().Key(), k.GroupKey())
		}
	}
}
