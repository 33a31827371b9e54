// Package cellid owns the identity of a benchmark cell: which proxy, origin,
// scenario, tier and repeat it is, and its id. Every record of a cell (the
// plan's, the manifest's, the cell series', the report's) embeds a Key, so
// the identity is declared once and encodes the same JSON everywhere.
package cellid

import (
	"fmt"
	"strconv"
)

// Key is one proxy x origin x scenario x tier x arm x repeat. Embedded in a
// struct (without a tag), its fields are promoted both in Go and in
// encoding/json.
type Key struct {
	ID       string `json:"id"` // stable within a run, e.g. "nginx.fast.simple.quick.r1"
	Proxy    string `json:"proxy"`
	Origin   string `json:"origin"`
	Scenario string `json:"scenario"`
	Tier     string `json:"tier"`
	// Arm tells apart cells measured the same way but for a deliberate
	// treatment, interleaved in one run: "" for the plan's own cells,
	// ArmControl for the A/A control's copy, the duet's and the observer's
	// arm names (internal/arms).
	Arm    string `json:"arm,omitempty"`
	Repeat int    `json:"repeat"`
}

// New is the key of one cell of the plan's own arm, its ID formatted by
// Format.
func New(proxy, origin, scenario, tier string, repeat int) Key {
	return NewArm(proxy, origin, scenario, tier, "", repeat)
}

// NewArm is the key of one cell of an arm.
func NewArm(proxy, origin, scenario, tier, arm string, repeat int) Key {
	return Key{ID: Format(proxy, origin, scenario, tier, arm, repeat), Proxy: proxy, Origin: origin, Scenario: scenario, Tier: tier, Arm: arm, Repeat: repeat}
}

// Format is the id of a cell: <proxy>.<origin>.<scenario>.<tier>.r<repeat>,
// with .<arm> before the repeat when the arm is not "".
func Format(proxy, origin, scenario, tier, arm string, repeat int) string {
	if arm != "" {
		return fmt.Sprintf("%s.%s.%s.%s.%s.r%d", proxy, origin, scenario, tier, arm, repeat)
	}
	return fmt.Sprintf("%s.%s.%s.%s.r%d", proxy, origin, scenario, tier, repeat)
}

// GroupKey identifies the cell across repeats and runs:
// <proxy>.<origin>.<scenario>.<tier>, with .<arm> when the arm is not "".
func (k Key) GroupKey() string { return k.Group().Key() }

// Group is a cell's identity across repeats: its Key without the id and
// the repeat. Embedded in a struct (without a tag), its fields are
// promoted both in Go and in encoding/json, under the Key's JSON names.
type Group struct {
	Proxy    string `json:"proxy"`
	Origin   string `json:"origin"`
	Scenario string `json:"scenario"`
	Tier     string `json:"tier"`
	Arm      string `json:"arm,omitempty"` // as Key.Arm
}

// Group is the cell's group: every repeat of it has the same.
func (k Key) Group() Group {
	return Group{Proxy: k.Proxy, Origin: k.Origin, Scenario: k.Scenario, Tier: k.Tier, Arm: k.Arm}
}

// Key is the group's key, Key.GroupKey of each of its cells.
func (g Group) Key() string {
	s := g.Proxy + "." + g.Origin + "." + g.Scenario + "." + g.Tier
	if g.Arm != "" {
		s += "." + g.Arm
	}
	return s
}

// PlanKey is GroupKey without the arm: the cells every arm measures alike.
func (k Key) PlanKey() string { return k.Proxy + "." + k.Origin + "." + k.Scenario + "." + k.Tier }

// The arms besides the plan's own (""). Each is compared with the plan's
// own cells of the same PlanKey, repeat by repeat.
const (
	// ArmControl is the A/A control: a copy of one group of the plan's own
	// cells, measured the same way, interleaved with them.
	ArmControl = "aa"
	// ArmCandidate is the duet's candidate: the plan's cells with the
	// candidate's change applied, alternating with the baseline's.
	ArmCandidate = "candidate"
	// ArmUnobserved is the observer study's arm: the plan's cells with the
	// observability stack paused, alternating with the observed ones.
	ArmUnobserved = "unobserved"
)

// RepeatLabel is the repeat as the metric label value.
func (k Key) RepeatLabel() string { return strconv.Itoa(k.Repeat) }

// LabelValues are the values of the cell labels cell, proxy, origin,
// scenario, tier, arm and repeat, in that order.
func (k Key) LabelValues() []string {
	return []string{k.ID, k.Proxy, k.Origin, k.Scenario, k.Tier, k.Arm, k.RepeatLabel()}
}

// FromLabels reads a key back from the labels of a cell series (cell,
// proxy, origin, scenario, tier, arm, repeat); a repeat that is not a
// number reads as 0, a missing arm as "".
func FromLabels(l map[string]string) Key {
	rep, _ := strconv.Atoi(l["repeat"])
	return Key{ID: l["cell"], Proxy: l["proxy"], Origin: l["origin"], Scenario: l["scenario"], Tier: l["tier"], Arm: l["arm"], Repeat: rep}
}
