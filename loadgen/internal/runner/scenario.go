package runner

import (
	"proxybench/internal/manifest"
	"proxybench/internal/scenario"
	"proxybench/loadgen/internal/attack"
	"proxybench/loadgen/internal/plan"
)

// scenarioData is what the cell's scenario is judged on, derived by the
// scenario (internal/scenario) from the exact counts of the window; nil
// when it has none (simple). per are the mix's results by variant; probes
// are what was sampled beside the attack.
func scenarioData(c plan.Cell, mc *manifest.Cell, per map[string]*attack.Result, p probes) *manifest.ScenarioData {
	if c.Def == nil || c.Def.Account == nil {
		return nil
	}
	n := scenario.Counts{WindowS: mc.End.Sub(mc.Start).Seconds(), Requests: mc.Requests, Errors: mc.Errors,
		Bytes: mc.Bytes, Codes: mc.Codes, Memory: p.memory, Churn: p.churn, Faults: p.faults}
	if len(per) > 0 {
		n.Variants = map[string]scenario.VariantCounts{}
		for name, res := range per {
			n.Variants[name] = scenario.VariantCounts{Requests: res.Requests, Errors: res.Errors, Codes: res.Codes}
		}
	}
	return c.Def.Account(c.Shape, n)
}
