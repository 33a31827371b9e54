package metricdefs

// The loadgen's traffic series (loadgen/internal/attack), labelled with
// TrafficLabels and, where they count by it, code or reason.
var (
	Requests = def(Def{Name: "proxybench_requests_total", Type: Counter, Owner: Loadgen, Labels: with(TrafficLabels, "code"),
		Help: "Requests completed with an HTTP status, by status code."})
	RequestErrors = def(Def{Name: "proxybench_request_errors_total", Type: Counter, Owner: Loadgen, Labels: with(TrafficLabels, "reason"),
		Help: "Requests that got no complete HTTP response, by reason (timeout, refused, reset, eof, protocol, header_too_large, body_too_large, tls, canceled, other)."})
	RequestDuration = def(Def{Name: "proxybench_request_duration_seconds", Type: Histogram, Owner: Loadgen, Labels: with(TrafficLabels),
		Help: "Request latency until the last body byte: from the intended send time in open loop (coordinated omission corrected), from the actual send time in closed loop."})
	ResponseBytes = def(Def{Name: "proxybench_response_bytes_total", Type: Counter, Owner: Loadgen, Labels: with(TrafficLabels),
		Help: "Response body bytes read."})
	RequestsInFlight = def(Def{Name: "proxybench_requests_in_flight", Type: Gauge, Owner: Loadgen, Labels: with(TrafficLabels),
		Help: "Requests sent and not yet completed, summed over the attacks running with these labels."})
	RequestsInFlightSeconds = def(Def{Name: "proxybench_request_in_flight_seconds_total", Type: Counter, Owner: Loadgen, Labels: with(TrafficLabels),
		Help: "Time each completed request spent in flight, from its actual send to its completion, added when it completes: the increase over a window divided by the window is the mean number of requests in flight, without sampling."})
	OpenLoopScheduled = def(Def{Name: "proxybench_open_loop_scheduled_total", Type: Counter, Owner: Loadgen, Labels: with(TrafficLabels),
		Help: "Open loop: requests whose intended send time has come."})
	OpenLoopSent = def(Def{Name: "proxybench_open_loop_sent_total", Type: Counter, Owner: Loadgen, Labels: with(TrafficLabels),
		Help: "Open loop: requests actually sent."})
	OpenLoopLag = def(Def{Name: "proxybench_open_loop_lag_seconds", Type: Histogram, Owner: Loadgen, Labels: with(TrafficLabels),
		Help: "Open loop: actual minus intended send time, of the sends that did not wait for max in flight (the loadgen's own delay)."})
	TargetRate = def(Def{Name: "proxybench_target_rate_requests_per_second", Type: Gauge, Owner: Loadgen, Labels: with(TrafficLabels),
		Help: "Offered rate, summed over the attacks running with these labels (0 = closed loop)."})
	WrongOrigin = def(Def{Name: "proxybench_wrong_origin_total", Type: Counter, Owner: Loadgen, Labels: with(TrafficLabels),
		Help: "Responses whose X-Origin is not the expected origin."})
	RequestsLate = def(Def{Name: "proxybench_requests_late_total", Type: Counter, Owner: Loadgen, Labels: with(TrafficLabels, "code"),
		Help: "Requests completed with an HTTP status after their attack's planned end (also counted in proxybench_requests_total), by status code."})
	RequestErrorsLate = def(Def{Name: "proxybench_request_errors_late_total", Type: Counter, Owner: Loadgen, Labels: with(TrafficLabels, "reason"),
		Help: "Requests that got no HTTP status after their attack's planned end (also counted in proxybench_request_errors_total), by reason."})
	OpenLoopMissed = def(Def{Name: "proxybench_open_loop_missed_total", Type: Counter, Owner: Loadgen, Labels: with(TrafficLabels),
		Help: "Open loop: requests due inside an attack's window and never sent (added at the window's end)."})
	TLSHandshakes = def(Def{Name: "proxybench_tls_handshakes_total", Type: Counter, Owner: Loadgen, Labels: with(TrafficLabels, "result"),
		Help: "TLS handshakes of the loadgen's connections (QUIC's included), by result: full, resumed, cert_error, alpn_mismatch (the server selected another protocol than asked), version_mismatch (the server refused the versions asked), error."})
	TLSHandshakeDuration = def(Def{Name: "proxybench_tls_handshake_duration_seconds", Type: Histogram, Owner: Loadgen, Labels: with(TrafficLabels, "resumed"),
		Help: "Duration of the completed TLS handshakes, from the ClientHello to the handshake's end (TCP connect excluded; HTTP/3: the whole QUIC dial), by resumed (true, false)."})
	OpenLoopQueued = def(Def{Name: "proxybench_open_loop_queued_total", Type: Counter, Owner: Loadgen, Labels: with(TrafficLabels),
		Help: "Open loop: requests due inside an attack's window and still queued at its end (max in flight reached), sent after it with their latency from the intended time (also counted in proxybench_open_loop_sent_total)."})
	OpenLoopCapped = def(Def{Name: "proxybench_open_loop_capped_total", Type: Counter, Owner: Loadgen, Labels: with(TrafficLabels),
		Help: "Open loop: sends that waited because max in flight was reached (the target saturated, not the loadgen)."})
)

// The cell window series (loadgen/internal/cellmetrics), labelled with
// CellLabels.
var (
	CellWindowStart = def(Def{Name: "proxybench_cell_window_start_timestamp_seconds", Type: Gauge, Owner: Loadgen, Labels: with(CellLabels),
		Help: "Unix time when the cell's measured traffic began (after warm-up). Set to the planned start when the cell begins and to the exact start when it ends."})
	CellWindowEnd = def(Def{Name: "proxybench_cell_window_end_timestamp_seconds", Type: Gauge, Owner: Loadgen, Labels: with(CellLabels),
		Help: "Unix time of the cell's planned window end (start + duration), or when it was interrupted; present once the cell has ended. Requests completing after it are late."})
	CellConcurrency = def(Def{Name: "proxybench_cell_concurrency", Type: Gauge, Owner: Loadgen, Labels: with(CellLabels),
		Help: "Connections (closed loop) or max in-flight requests (open loop) of the cell; peak target for concurrency stages."})
	CellTargetRate = def(Def{Name: "proxybench_cell_target_rate_requests_per_second", Type: Gauge, Owner: Loadgen, Labels: with(CellLabels),
		Help: "Offered rate of the cell in open loop (the schedule's average over the window for rate stages); 0 = closed loop."})
	CellFailed = def(Def{Name: "proxybench_cell_failed", Type: Gauge, Owner: Loadgen, Labels: with(CellLabels),
		Help: "1 when the cell failed, was aborted or skipped; 0 when it ran its full window."})
	CellDrainEnd = def(Def{Name: "proxybench_cell_drain_end_timestamp_seconds", Type: Gauge, Owner: Loadgen, Labels: with(CellLabels),
		Help: "Unix time when the cell's last late request (in flight at the window end) completed; the window end when none was late. Present once the cell has ended."})
	CellProxyCPU = def(Def{Name: "proxybench_cell_proxy_cpu_seconds", Type: Gauge, Owner: Loadgen, Labels: with(CellLabels),
		Help: "CPU time the proxy container used over the cell's window: its cgroup CPU usage read at the window's two edges, end minus start. Absent when the cgroup could not be read."})
	CellLoadgenCPU = def(Def{Name: "proxybench_cell_loadgen_cpu_seconds", Type: Gauge, Owner: Loadgen, Labels: with(CellLabels),
		Help: "CPU time (user + system) the loadgen process used over the cell's window, read at the window's two edges, end minus start."})
	CellLoadgenWorkers = def(Def{Name: "proxybench_cell_loadgen_workers", Type: Gauge, Owner: Loadgen, Labels: with(CellLabels),
		Help: "Loadgen worker processes that sent the cell's load as one instrument (loadgen run -loadgens N), their series labelled worker 0 to N-1; absent when the loadgen sent it alone. Present once the cell has ended."})
)

// The loadgen's account of its own CPU (loadgen/internal/selfcpu).
var (
	LoadgenCPULimit = def(Def{Name: "proxybench_loadgen_cpu_limit_cores", Type: Gauge, Owner: Loadgen,
		Help: "CPU cores the loadgen can really get: the smallest of its cgroup CPU quota, the CPUs in its affinity mask (which reflects the cpuset) and GOMAXPROCS."})
	LoadgenCPUPeriods = def(Def{Name: "proxybench_loadgen_cpu_periods_total", Type: Counter, Owner: Loadgen,
		Help: "CFS enforcement periods of the loadgen's cgroup with runnable tasks (cpu.stat nr_periods); 0 without a quota."})
	LoadgenCPUThrottledPeriods = def(Def{Name: "proxybench_loadgen_cpu_throttled_periods_total", Type: Counter, Owner: Loadgen,
		Help: "Periods in which the loadgen's cgroup ran out of CPU quota (cpu.stat nr_throttled); 0 without a quota."})
	LoadgenCPUThrottledSeconds = def(Def{Name: "proxybench_loadgen_cpu_throttled_seconds_total", Type: Counter, Owner: Loadgen,
		Help: "Time the loadgen's cgroup was throttled for lack of CPU quota (cpu.stat throttled_time or throttled_usec); 0 without a quota."})
	LoadgenRunDelay = def(Def{Name: "proxybench_loadgen_run_delay_seconds_total", Type: Counter, Owner: Loadgen,
		Help: "Time the loadgen's threads were runnable but waiting for a CPU, summed over threads (/proc/self/task/*/schedstat). A thread's delay after its last reading before it exited is lost."})
	LoadgenCPUPressure = def(Def{Name: "proxybench_loadgen_cpu_pressure_seconds_total", Type: Counter, Owner: Loadgen, Labels: []string{"scope"},
		Help: "CPU pressure (PSI some total): time at least one task was runnable but waiting for a CPU; scope=cgroup is the loadgen's own cgroup v2 group, scope=host the whole host's /proc/pressure/cpu (when the loadgen runs in the root group)."})
)
