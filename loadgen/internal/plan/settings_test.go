package plan

import (
	"encoding/json"
	"reflect"
	"testing"

	"proxybench/internal/manifest"
)

// TestSettingsAsThePlanWritesThem checks the manifest's settings against an
// independent reading: the plan's own JSON (plan.json) decoded into
// manifest.Settings, as the reporter reads an older manifest's plan.
func TestSettingsAsThePlanWritesThem(t *testing.T) {
	t.Parallel()
	p := Default()
	p.Margin, p.KeepDisturbed, p.CandidateImage = 0.07, true, "nginx:candidate"
	p.SLO.ErrorRatio = 0.02
	b, err := json.Marshal(&p)
	if err != nil {
		t.Fatal(err)
	}
	var want manifest.Settings
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if got := p.Settings(); !reflect.DeepEqual(*got, want) {
		t.Errorf("Settings() = %+v (SLO %+v), the plan's JSON gives %+v (SLO %+v)", *got, *got.SLO, want, *want.SLO)
	}
	if want.Timeout != "10s" || want.SLO.P99 != "100ms" || want.Isolate == nil || !*want.Isolate || !want.Candidate() {
		t.Errorf("the default plan's settings read %+v", want)
	}
}
