# proxybench: everything is driven from here. `make help` lists the targets.
SHELL := /bin/bash
export GOFLAGS := -buildvcs=false
export GOWORK := off

TIER        ?= quick
PROXIES     ?= nginx haproxy traefik caddy
ORIGINS     ?= node python go fast
SCENARIOS   ?= simple
CONCURRENCY ?= 50
RATE        ?= 0
REPEATS     ?= 1
MARGIN      ?= 0.05
BUDGET      ?= 10m
ISOLATE     ?= true
DIRECT      ?=
ORDER       ?= interleaved
SEED        ?= 0
PLAN        ?=
PLACEMENT   ?=
LOADGENS    ?=
RESULTS     ?= results
PROM        ?= http://127.0.0.1:9090
HOSTNET     ?= 1
LISTEN      ?= 127.0.0.1
export HOSTNET LISTEN PLACEMENT PLAN

comma := ,
empty :=
space := $(empty) $(empty)
csv = $(subst $(space),$(comma),$(strip $(1)))
# given VAR,FLAGS: FLAGS only when VAR was set on the command line or in the
# environment, so that a PLAN file's keys hold unless a variable overrides
# them (the defaults above are the loadgen's own).
given = $(if $(filter file,$(origin $(1))),,$(2))

PHONY_EXTRA := prepare perf-exporter bench-slow10k fuzz
.PHONY: $(PHONY_EXTRA) help bench duet observer study up down preflight images report diff perf lint test test-unit test-e2e test-swarm test-checks test-swarm-part engine clean

help: ## this list
	@grep -hE '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 14

bench: ## the main job: stack up, the matrix, the report (TIER PROXIES ORIGINS SCENARIOS CONCURRENCY RATE REPEATS DIRECT MARGIN ISOLATE PLACEMENT LOADGENS DIST LAUNCH SWARM_NODES PLAN RUN RESULTS DASHBOARD)
	@scripts/bench.sh $(call given,TIER,-tier '$(TIER)') $(call given,MARGIN,-margin '$(MARGIN)') $(call given,PROXIES,-proxies '$(call csv,$(PROXIES))') $(call given,ORIGINS,-origins '$(call csv,$(ORIGINS))') \
	  $(call given,SCENARIOS,-scenarios '$(call csv,$(SCENARIOS))') $(call given,CONCURRENCY,-concurrency '$(CONCURRENCY)') $(call given,RATE,-rate '$(RATE)') $(call given,REPEATS,-repeats '$(REPEATS)') \
	  $(if $(filter 1 true,$(DIRECT)),-direct) $(call given,ISOLATE,-isolate='$(ISOLATE)') $(call given,ORDER,-order '$(ORDER)') $(call given,SEED,-seed '$(SEED)') -results '$(RESULTS)' $(if $(PLACEMENT),-placement '$(PLACEMENT)') $(if $(LOADGENS),-loadgens '$(LOADGENS)') $(if $(DIST),-dist '$(DIST)') $(if $(LAUNCH),-launch '$(LAUNCH)') $(if $(PLAN),-plan '$(PLAN)') $(if $(RUN),-run '$(RUN)') $(if $(DASHBOARD),-dashboard '$(DASHBOARD)')

# An observer study needs pairs: 10 unless REPEATS is given. A duet adds
# pairs until every gated metric is decided at MARGIN or BUDGET is spent:
# REPEATS, when given, is then its most pairs (docs/decisions.md).
PAIRS = $(if $(filter file,$(origin REPEATS)),10,$(REPEATS))
DUET_PAIRS = $(if $(filter file,$(origin REPEATS)),100,$(REPEATS))
# The duet's quiet gap between cells: above manifest.MarginBefore (1 s), the
# timing guarantee's least; every cell has counters of its own, and its
# decisions use the loadgen's own record (docs/decisions.md).
DUET_SETTLE ?= 1500ms
# A duet of CPUS alone measures each pair in one window that switches the
# quota every DUET_SLICE (0 = a window per arm; docs/decisions.md).
DUET_SLICE ?= 1s
DUET_SLICED = $(if $(CPUS),$(if $(CANDIDATE_IMAGE)$(CANDIDATE_CONFIG),,$(filter-out 0 0s,$(DUET_SLICE))))
# The duet's cells unless TIER is given: 8 s (a pair's window of 16 slices)
# when sliced, where a longer window makes each arm's typical slice
# steadier and the per-pair overhead smaller; else 4 s, the shortest window
# that holds the 3 scrapes a valid cell needs (on a 2-core VM the per-pair
# spread of Traefik's goodput was the same with 2 s and 5 s cells of their
# own; docs/decisions.md).
DUET_TIER = $(if $(filter file,$(origin TIER)),$(if $(DUET_SLICED),8s,4s),$(TIER))

duet: ## interleaved A/B in one run until decided: each cell as baseline, then as candidate (the proxy's CPU quota at CPUS cores, and/or a container of CANDIDATE_IMAGE and/or CANDIDATE_CONFIG); pairs until every gated metric is decided at MARGIN or BUDGET ends; exits 4 when the candidate is worse by more than MARGIN (CPUS CANDIDATE_IMAGE CANDIDATE_CONFIG PROXIES ORIGINS MARGIN=0.05 BUDGET=10m REPEATS DUET_SLICE=1s TIER=8s sliced, 4s not)
	@test -n "$(CPUS)$(CANDIDATE_IMAGE)$(CANDIDATE_CONFIG)" || { echo "make duet: name the candidate: CPUS=<the proxy's CPU quota in cores> (e.g. 0.9, a 10 % cut of 1 core; CPUS=1.0 is an A/A duet), CANDIDATE_IMAGE=<image> and/or CANDIDATE_CONFIG=<a config file like compose/<proxy>/'s>"; exit 2; }
	@scripts/arms.sh $(if $(CPUS),-duet-cpus '$(CPUS)') $(if $(DUET_SLICED),-duet-slice '$(DUET_SLICE)') $(if $(CANDIDATE_IMAGE),-candidate-image '$(CANDIDATE_IMAGE)') $(if $(CANDIDATE_CONFIG),-candidate-config '$(CANDIDATE_CONFIG)') -tier '$(DUET_TIER)' -proxies '$(call csv,$(PROXIES))' -origins '$(call csv,$(ORIGINS))' \
	  -scenarios '$(call csv,$(SCENARIOS))' -concurrency '$(CONCURRENCY)' -rate '$(RATE)' -repeats '$(DUET_PAIRS)' -margin '$(MARGIN)' -budget '$(BUDGET)' -settle '$(DUET_SETTLE)' -results '$(RESULTS)' $(if $(PLACEMENT),-placement '$(PLACEMENT)') $(if $(RUN),-run '$(RUN)')

observer: ## the observer effect: each cell with the observability stack on, then paused, interleaved; req/s and p99 differences with 95 % CIs (PROXIES ORIGINS=fast REPEATS=10 TIER)
	@scripts/arms.sh -observer -tier '$(TIER)' -proxies '$(call csv,$(PROXIES))' -origins '$(call csv,$(if $(filter file,$(origin ORIGINS)),fast,$(ORIGINS)))' \
	  -scenarios '$(call csv,$(SCENARIOS))' -concurrency '$(CONCURRENCY)' -rate '$(RATE)' -repeats '$(PAIRS)' -results '$(RESULTS)' $(if $(PLACEMENT),-placement '$(PLACEMENT)') $(if $(RUN),-run '$(RUN)')

study: ## a validity-lab study: STUDY=netstack|cc|scaleout|ceiling|all (SCALE=full|tiny REPEATS RUN RESULTS PLACEMENT); docs/studies.md
	@RUN='$(RUN)' RESULTS='$(RESULTS)' REPEATS='$(if $(filter file,$(origin REPEATS)),,$(REPEATS))' scripts/study.sh '$(STUDY)' '$(or $(SCALE),full)'

bench-slow10k: ## 10,000 held connections through each of PROXIES (slow scenario, 2 s delay, fast origin); restarts proxies a run OOM-kills
	@scripts/bench.sh -scenarios slow -slow-delay 2s -concurrency 10000 -origins fast -tier 10s -timeout 30s \
	  -proxies '$(call csv,$(PROXIES))' -results '$(RESULTS)'; rc=$$?; scripts/stack.sh up >/dev/null; exit $$rc

up: ## the stack alone (engine and images ensured), with its CPU placement (PLACEMENT=auto|none, PLAN); Grafana at http://127.0.0.1:3000 when online
	@scripts/stack.sh up

down: ## remove every container and network of the stack; Prometheus's data (the run history) stays unless PURGE=1
	@scripts/stack.sh $(if $(filter 1,$(PURGE)),purge,down)

preflight: ## every proxy x origin route, with the proxies' real versions
	@go run ./loadgen preflight -proxies '$(call csv,$(PROXIES))' -origins '$(call csv,$(ORIGINS))' -wait 30s

images: ## build or check every image (OFFLINE=auto|1|0)
	@scripts/engine.sh && scripts/images.sh

engine: ## make sure a Docker engine and compose answer (installs them on root Debian)
	@scripts/engine.sh

report: ## rebuild a run's report from Prometheus: make report RUN=<id>
	@test -n "$(RUN)" || { echo "make report: set RUN=<run id> (see $(RESULTS)/history/manifest.json)"; exit 2; }
	@go run ./reporter build -prom '$(PROM)' -run '$(RUN)' -results '$(RESULTS)'

diff: ## compare two runs, each metric decided at MARGIN: make diff A=<id> B=<id> (for a gate, prefer make duet: one run cancels drift)
	@test -n "$(A)" -a -n "$(B)" || { echo "make diff: set A=<run id> B=<run id>"; exit 2; }
	@go run ./reporter diff -a '$(A)' -b '$(B)' -margin '$(MARGIN)' -results '$(RESULTS)'

perf: ## loadgen vs wrk vs hey vs vegeta on loopback, TLS vs wrk and h2 vs h2load; open-loop schedule and latency overhead; parser, reporter and fast-origin benchmarks
	@scripts/perf.sh
	@TOOLS="loadgen wrk" TLS_TOOLS="" TOOL_CPU=0 ORIGIN_CPU=0 scripts/perf.sh # the tools beside the origin on one CPU, as make bench places the loadgen on 2 cores
	@go test -run '^$$' -bench 'OpenLoopSchedule|DelayedHandlerOverhead' -benchtime 3x ./loadgen/internal/attack
	@go test -run '^$$' -bench . -cpu 1 ./internal/gctrace
	@go test -run '^$$' -bench BenchmarkBuild80 -benchtime 5x ./reporter/internal/build
	@go test -run '^$$' -bench . -benchmem ./origins/fast/fastserver

perf-exporter: ## the exporter's own CPU with the stack idle (stack up, nothing else running)
	@go test -tags e2e -count=1 -v -run TestE2EIdleCPU ./exporter/

lint: ## promtool config/rules/tests, dashboards and configs checks, gofmt, go vet (also -tags e2e), tidy go.mod (prometheus/lint.sh)
	@prometheus/lint.sh

test: prepare ## everything CI runs: prepare, unit tests (the single-node swarm coming up beside them), lint and fuzzing beside the Swarm tests and the compose stack's start, the end-to-end tests on the compose stack
	@scripts/swarm.sh start
	@$(MAKE) --no-print-directory test-unit || { [ "$$(scripts/swarm.sh wait 2>/dev/null)" = up-already ] || scripts/swarm.sh down; exit 2; }
	@scripts/e2e.sh stack-start
	@$(MAKE) --no-print-directory -j2 --output-sync=target test-checks test-swarm-part || { scripts/e2e.sh stack-purge; scripts/swarm.sh wait-down; exit 2; }
	@scripts/e2e.sh stack

# make test's two parts that overlap: lint, then fuzzing (CPU; a pass of
# 20 s unless FUZZ_BUDGET says) beside the Swarm tests (mostly waits on
# the swarm); scripts/e2e.sh swarm takes the swarm down again (in the
# background) when it brought it up, and scripts/e2e.sh stack the compose
# stack when stack-start brought it up.
test-checks:
	@FUZZ_BUDGET=$${FUZZ_BUDGET:-20} $(MAKE) --no-print-directory -j1 lint fuzz
test-swarm-part:
	@SWARM_DOWN_LATER=1 scripts/e2e.sh swarm

prepare: ## what the tests need: engine, images, pinned prometheus and promtool, chromium (independent builds overlap)
	@scripts/prepare.sh

# The packages whose tests run longest (mostly waiting on real Prometheus
# and Docker) first: go test starts packages in the order given, two at a
# time (three starved the runner's beside the swarm's and the stack's
# start: 150 s instead of 94 s), and one of them started last would end
# last. The attack package's real-time tests keep their place, after the
# swarm's image copy.
SLOW_TEST_PKGS = ./loadgen/internal/runner ./reporter/internal/build ./internal/logsource
test-unit: ## unit and integration tests (real HTTP, real Prometheus, real Docker); go vet runs in make lint, over every build tag
	@PROXYBENCH_PROMETHEUS_BIN=$$(scripts/gobin.sh prometheus) PROMTOOL=$$(scripts/gobin.sh promtool) \
	  go test -count=1 -vet=off -timeout 20m $(SLOW_TEST_PKGS) ./...

fuzz: ## the Fuzz targets of the repository, each fuzzed for a share of 30 s: as many as start within it, from an offset that rotates with the commit (FUZZTIME=3s per target fuzzes every one; FUZZ_BUDGET=seconds; FUZZ_OFFSET=n)
	@scripts/fuzz.sh

test-e2e: ## the real stack: up, preflight, a quick bench, the e2e tests, live dashboard queries, exporter vs docker; down unless it was up
	@scripts/e2e.sh

test-swarm: ## the Swarm tests alone on a swarm of SWARM_NODES nodes (2 unless given: the proxies on a node of their own); down unless it was up
	@SWARM_NODES=$${SWARM_NODES:-2} scripts/e2e.sh swarm

clean: ## remove the built binaries and the end-to-end results (keeps results/, the images and the tool caches)
	rm -rf .cache/dist .cache/e2e-results
