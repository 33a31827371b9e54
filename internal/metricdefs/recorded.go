package metricdefs

// Recorded series of prometheus/rules/traffic.rules.yml that Go code reads
// (the dashboards, the loadgen's live view); the dashboard checks fail on a
// name here that no rule records.
const (
	RecRPS       = "proxy_origin_scenario:proxybench_requests:rate5s"
	RecClass     = "proxy_origin_scenario_class:proxybench_requests:rate5s"
	RecReason    = "proxy_origin_scenario_reason:proxybench_request_errors:rate5s"
	RecFailures  = "proxy_origin_scenario:proxybench_request_failures:rate5s"
	RecFailRatio = "proxy_origin_scenario:proxybench_request_failures:ratio_rate5s"
	RecQuantile  = "proxy_origin_scenario_quantile:proxybench_request_duration_seconds:histogram_quantile_rate5s"
	RecMean      = "proxy_origin_scenario:proxybench_request_duration_seconds:avg_rate5s"
)

// Recorded lists the names above.
func Recorded() []string {
	return []string{RecRPS, RecClass, RecReason, RecFailures, RecFailRatio, RecQuantile, RecMean}
}
