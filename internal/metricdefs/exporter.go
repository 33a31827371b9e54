package metricdefs

// The exporter's gctrace series per Go proxy container
// (exporter/internal/gcmetrics), labelled with GCLabels.
var (
	GCCycles = def(Def{Name: "proxybench_gc_cycles_total", Type: Counter, Owner: Exporter, Labels: with(GCLabels),
		Help: "GC cycles completed, counted by the runtime's cycle number (a torn gctrace line still counts)."})
	GCForcedCycles = def(Def{Name: "proxybench_gc_forced_cycles_total", Type: Counter, Owner: Exporter, Labels: with(GCLabels),
		Help: "GC cycles forced by runtime.GC or debug.FreeOSMemory (marked (forced)) or by the 2-minute periodic GC (after a 'GC forced' line)."})
	GCConcurrentMark = def(Def{Name: "proxybench_gc_concurrent_mark_seconds_total", Type: Counter, Owner: Exporter, Labels: with(GCLabels),
		Help: "Wall-clock time spent in concurrent mark and scan."})
	GCCPU = def(Def{Name: "proxybench_gc_cpu_seconds_total", Type: Counter, Owner: Exporter, Labels: with(GCLabels),
		Help: "CPU time GC cost the program: sweep termination, mark assists, background mark workers and mark termination; idle mark workers are in proxybench_gc_idle_mark_cpu_seconds_total."})
	GCIdleMarkCPU = def(Def{Name: "proxybench_gc_idle_mark_cpu_seconds_total", Type: Counter, Owner: Exporter, Labels: with(GCLabels),
		Help: "CPU time of GC's idle mark workers, which run only on processors with nothing else to do (not in proxybench_gc_cpu_seconds_total)."})
	GCTraceParseErrors = def(Def{Name: "proxybench_gctrace_parse_errors_total", Type: Counter, Owner: Exporter, Labels: with(GCLabels),
		Help: "gc lines whose cycle number was read but whose details were torn or unrecognised."})
	GCPause = def(Def{Name: "proxybench_gc_pause_seconds", Type: Histogram, Owner: Exporter, Labels: with(GCLabels),
		Help: "Stop-the-world time of each GC cycle: sweep termination plus mark termination, wall clock."})
	GCCPUFraction = def(Def{Name: "proxybench_gc_cpu_fraction", Type: Gauge, Owner: Exporter, Labels: with(GCLabels),
		Help: "The runtime's GC share of available CPU since the process started, as of the last cycle (gctrace P%/100)."})
	GCHeapStart = def(Def{Name: "proxybench_gc_heap_start_bytes", Type: Gauge, Owner: Exporter, Labels: with(GCLabels),
		Help: "Heap size at the start of the last GC cycle."})
	GCHeapEnd = def(Def{Name: "proxybench_gc_heap_end_bytes", Type: Gauge, Owner: Exporter, Labels: with(GCLabels),
		Help: "Heap size at the end of the last GC cycle."})
	GCHeapLive = def(Def{Name: "proxybench_gc_heap_live_bytes", Type: Gauge, Owner: Exporter, Labels: with(GCLabels),
		Help: "Live heap marked by the last GC cycle."})
	GCHeapGoal = def(Def{Name: "proxybench_gc_heap_goal_bytes", Type: Gauge, Owner: Exporter, Labels: with(GCLabels),
		Help: "Heap goal of the last GC cycle."})
	GCGOMAXPROCS = def(Def{Name: "proxybench_gc_gomaxprocs", Type: Gauge, Owner: Exporter, Labels: with(GCLabels),
		Help: "GOMAXPROCS as reported by the last GC cycle."})
	GCLastCycle = def(Def{Name: "proxybench_gc_last_cycle_timestamp_seconds", Type: Gauge, Owner: Exporter, Labels: with(GCLabels),
		Help: "When the last GC cycle's line was logged, Unix time."})
)

// The exporter's other series: the proxies' info (exporter/internal/info),
// nginx's stub_status under the nginx-prometheus-exporter names and the
// scrape health of each collector that reaches out (exporter/internal/nginxstatus).
var (
	ProxyInfo = def(Def{Name: "proxybench_proxy_info", Type: Gauge, Owner: Exporter, Labels: []string{"container", "service", "image", "image_id", "version"},
		Help: "A proxy container of the stack: its image, image id and the version its image declares (org.opencontainers.image.version; unknown when none)."})
	NginxUp = def(Def{Name: "nginx_up", Type: Gauge, Owner: Exporter,
		Help: "Whether the last scrape of nginx stub_status succeeded."})
	NginxAccepted = def(Def{Name: "nginx_connections_accepted", Type: Counter, Owner: Exporter,
		Help: "Accepted client connections."})
	NginxHandled = def(Def{Name: "nginx_connections_handled", Type: Counter, Owner: Exporter,
		Help: "Handled client connections."})
	NginxRequests = def(Def{Name: "nginx_http_requests_total", Type: Counter, Owner: Exporter,
		Help: "Total http requests."})
	NginxActive = def(Def{Name: "nginx_connections_active", Type: Gauge, Owner: Exporter,
		Help: "Active client connections."})
	NginxReading = def(Def{Name: "nginx_connections_reading", Type: Gauge, Owner: Exporter,
		Help: "Connections where NGINX is reading the request header."})
	NginxWriting = def(Def{Name: "nginx_connections_writing", Type: Gauge, Owner: Exporter,
		Help: "Connections where NGINX is writing the response back to the client."})
	NginxWaiting = def(Def{Name: "nginx_connections_waiting", Type: Gauge, Owner: Exporter,
		Help: "Idle client connections."})
	ScrapeCollectorSuccess = def(Def{Name: "proxybench_exporter_scrape_collector_success", Type: Gauge, Owner: Exporter, Labels: []string{"collector"},
		Help: "Whether a collector succeeded."})
	ScrapeCollectorDuration = def(Def{Name: "proxybench_exporter_scrape_collector_duration_seconds", Type: Gauge, Owner: Exporter, Labels: []string{"collector"},
		Help: "How long a collector took."})
)
