package report

// Sliced is how an arm of a sliced duet was measured: Slices slices of
// SliceS seconds, MeasuredS of them counted after the guards; its goodput
// and the proxy's CPU per request in its typical slice (the median over
// its slices).
type Sliced struct {
	Slices        int     `json:"slices"`
	SliceS        float64 `json:"slice_seconds"`
	MeasuredS     float64 `json:"measured_seconds"`
	GoodputRPS    Num     `json:"goodput_rps"`
	CPUPerRequest Num     `json:"proxy_cpu_seconds_per_request"`
}
