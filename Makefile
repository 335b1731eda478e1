# The two commands a newcomer needs are `make demo` and `make test`; everything else is a step of
# those. Every target installs what it needs first (idempotent and fast when already there).
SHELL := /bin/bash
.DEFAULT_GOAL := build

BUILD_DIR ?= _output/build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)
CTEST_ARGS ?=
CMAKE := cmake
GENERATOR := $(shell command -v ninja >/dev/null 2>&1 && echo Ninja || echo "Unix Makefiles")

.PHONY: build scheduler deps tools configure unit integration integration-compat test cluster-up \
        cluster-up-compat cluster-down disk-free demo sanitize tsan bench bench-e2e format \
        format-check lint clean chart-tools chart-lint manifests fuzz chaos hostile

deps:
	@deploy/install-deps.sh

# Everything the tests run against: the control plane, helm and the ServiceMonitor CRD for the
# chart tests, and kube-scheduler, the reference of the differential e2e test (and of bench-e2e).
tools: deps
	@deploy/build-tools.sh etcd kube-apiserver kube-scheduler helm servicemonitor-crd

configure: deps
	@$(CMAKE) -S . -B $(BUILD_DIR) -G "$(GENERATOR)" -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
	  -DBERTH_WERROR=ON >/dev/null

# Warnings are errors in every build (-Wall -Wextra -Werror).
build: configure
	@$(CMAKE) --build $(BUILD_DIR) -j$(JOBS)

# The control plane at the pinned release (local-cluster.sh builds its etcd, kube-apiserver and
# kube-controller-manager).
cluster-up: deps
	@BERTH_COMPAT=0 BERTH_GENERIC_WORKLOAD=1 deploy/local-cluster.sh up

# A second control plane at the oldest supported minor (KUBERNETES_COMPAT_VERSION), in
# _output/cluster-compat on its own ports (BERTH_COMPAT_APISERVER_PORT and friends).
cluster-up-compat: deps
	@BERTH_COMPAT=1 deploy/local-cluster.sh up

disk-free:
	@df -Ph . | awk 'NR == 2 { print "disk: " $$4 " free of " $$2 " under $(CURDIR)" }'

cluster-down:
	@BERTH_COMPAT=0 deploy/local-cluster.sh down
	@BERTH_COMPAT=1 deploy/local-cluster.sh down

unit: build
	@cd $(BUILD_DIR) && ctest -L unit -j$(JOBS) --output-on-failure $(CTEST_ARGS)

# Each test pass sources its cluster's env file: it points the tests (and the apiserver restarts
# some of them do) at that cluster, whatever a shell sourced before.
integration: build tools cluster-up
	@source _output/cluster/env && cd $(BUILD_DIR) && \
	  ctest -L integration --output-on-failure $(CTEST_ARGS)

# The integration tests against the oldest supported minor (the compat cluster), but those of
# upstream's scheduling.k8s.io/v1beta1 PodGroup (label integration-generic-workload): that minor
# has no such API.
integration-compat: build tools cluster-up-compat
	@source _output/cluster-compat/env && echo "integration tests against kube-apiserver" \
	  "$$(_output/tools/compat/kube-apiserver --version | cut -d' ' -f2) ($$BERTH_APISERVER_URL)" && \
	  cd $(BUILD_DIR) && ctest -L integration -LE generic-workload --output-on-failure $(CTEST_ARGS)

# Unit, integration and e2e tests in one CTest run against the pinned release: unit tests in
# parallel, tests that use the local control plane one at a time (RESOURCE_LOCK); then the
# integration tests again against the oldest supported minor. Exits non-zero on any failure.
# A full run needs a few GiB of disk (the Go module sources of the pinned components, the build
# cache while they build, and the build tree); a CI log that ends in "No space left on device"
# then says what there was at the start.
test: disk-free build tools cluster-up
	@source _output/cluster/env && cd $(BUILD_DIR) && \
	  ctest -j$(JOBS) --output-on-failure $(CTEST_ARGS)
	@$(MAKE) --no-print-directory integration-compat

# The fault suite in full (e2e/chaos_e2e_test.cc): two berth-scheduler replicas behind a TCP proxy
# that cuts every connection every 3 s bind CHAOS_PODS pods that fill simulated nodes exactly,
# while the apiserver is SIGKILLed, the leader is SIGKILLed mid-binding and etcd is compacted,
# CHAOS_ROUNDS times over; it asserts every pod bound once, no node over-committed, every Pending
# pod explained by an event, and prints the time to converge after each fault. `make test` runs
# its short form (300 pods, one round). It restarts this checkout's apiserver: run it alone.
CHAOS_PODS ?= 3000
CHAOS_ROUNDS ?= 2
chaos: configure cluster-up
	@$(CMAKE) --build $(BUILD_DIR) -j$(JOBS) --target berth-scheduler chaos_e2e_test
	@source _output/cluster/env && BERTH_CHAOS_PODS=$(CHAOS_PODS) BERTH_CHAOS_ROUNDS=$(CHAOS_ROUNDS) \
	  _output/bin/chaos_e2e_test

# The hostile-object suite in full (e2e/hostile_e2e_test.cc): while berth-scheduler binds a stream
# of ordinary pods, pods, nodes and PodGroups with extreme values arrive (quantities near 2^63 and
# 1e18, 10,000 tolerations and affinity terms, a node with 100,000 labels or as many as the
# apiserver takes, selectors of 1,000 x 100 values, 1,000 spread constraints, minMember
# 2147483647) and `berth-scheduler explain` is asked about each; it asserts the scheduler stays up
# under its RSS bound, every ordinary pod bound, no node over-committed and every hostile pod
# placed correctly or Pending with a reason, and prints peak RSS and the ordinary pods' p99
# latency beside a baseline run without the hostile objects. `make test` runs its short form.
hostile: configure cluster-up
	@$(CMAKE) --build $(BUILD_DIR) -j$(JOBS) --target berth-scheduler hostile_e2e_test
	@source _output/cluster/env && BERTH_HOSTILE_FULL=1 _output/bin/hostile_e2e_test

# berth-scheduler alone, without the libraries' tests, benchmarks and e2e binaries.
scheduler: configure
	@$(CMAKE) --build $(BUILD_DIR) -j$(JOBS) --target berth-scheduler

# Local control plane + 22 simulated nodes + 239 pods, among them three gangs (one that fits, one
# that waits, and one of four pods that each claim a GPU where three GPU nodes' ResourceSlices
# publish one each, so it binds none and holds none) and a pod given one of them; berth-scheduler
# binds them and the table shows where every pod went, which device each claim got and why the
# rest could not go anywhere, then `berth-scheduler explain` for each pod left Pending. Builds
# only what it runs: berth-scheduler, etcd, kube-apiserver and kube-controller-manager.
demo: scheduler cluster-up
	@source _output/cluster/env && python3 deploy/demo.py

# ASan + UBSan over the unit tests.
sanitize: deps
	@$(CMAKE) -S . -B _output/build-asan -G "$(GENERATOR)" -DCMAKE_BUILD_TYPE=Debug \
	  -DBERTH_SANITIZE=address,undefined >/dev/null
	@$(CMAKE) --build _output/build-asan -j$(JOBS)
	@cd _output/build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/test/sanitizers/lsan.supp \
	  ctest -L unit -j$(JOBS) --output-on-failure $(CTEST_ARGS)

# ThreadSanitizer over the unit tests (the concurrent parts: informer, queue, binding cycles).
tsan: deps
	@$(CMAKE) -S . -B _output/build-tsan -G "$(GENERATOR)" -DCMAKE_BUILD_TYPE=Debug \
	  -DBERTH_SANITIZE=thread >/dev/null
	@$(CMAKE) --build _output/build-tsan -j$(JOBS)
	@cd _output/build-tsan && \
	  TSAN_OPTIONS="halt_on_error=1 suppressions=$(CURDIR)/test/sanitizers/tsan.supp" \
	  ctest -L unit -j$(JOBS) --output-on-failure $(CTEST_ARGS)

# libFuzzer over every parser of bytes from outside the process (test/fuzz), built with clang,
# ASan and UBSan in their own tree: each target in turn runs FUZZ_SECONDS on a scratch copy of its
# seed corpus (_output/fuzz/<target>, where a crashing input is left); fails if any target crashed.
# FUZZ_TARGETS="list protobuf" for some of them. The ordinary unit tests replay the seed corpora.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= $(notdir $(wildcard test/fuzz/corpus/*))
# -timeout is wall-clock time: on a shared machine a process may wait tens of seconds for a CPU, so
# a hang is an input still running after a minute.
FUZZ_ARGS ?= -rss_limit_mb=2048 -timeout=60
fuzz:
	@deploy/install-deps.sh --fuzz
	@CC=clang-14 CXX=clang++-14 $(CMAKE) -S . -B _output/build-fuzz -G "$(GENERATOR)" \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBERTH_FUZZ=ON >/dev/null
	@$(CMAKE) --build _output/build-fuzz -j$(JOBS) --target fuzz_targets
	@failed=""; for t in $(FUZZ_TARGETS); do \
	  work=_output/fuzz/$$t; rm -rf $$work; mkdir -p $$work/corpus $$work/crashes; \
	  cp test/fuzz/corpus/$$t/* $$work/corpus/; \
	  if _output/bin-fuzz/fuzz_$$t $$work/corpus -max_total_time=$(FUZZ_SECONDS) $(FUZZ_ARGS) \
	      -artifact_prefix=$$work/crashes/ -print_final_stats=1 >$$work/log 2>&1; then \
	    runs=$$(sed -n 's/^stat::number_of_executed_units: *//p' $$work/log); \
	    speed=$$(sed -n 's/^stat::average_exec_per_sec: *//p' $$work/log); \
	    cov=$$(grep -o 'cov: [0-9]* ft: [0-9]*' $$work/log | tail -1); \
	    echo "fuzz: $$t: $$runs runs in $(FUZZ_SECONDS)s, $$speed exec/s, $$cov," \
	      "corpus $$(ls $$work/corpus | wc -l) inputs"; \
	  else \
	    tail -n 40 $$work/log; echo "fuzz: $$t: CRASH, input in $$work/crashes"; failed="$$failed $$t"; \
	  fi; \
	done; \
	[[ -z "$$failed" ]] || { echo "fuzz: crashes in:$$failed"; exit 1; }

# The pinned helm and the ServiceMonitor CRD the packaging tests (test/packaging) use.
chart-tools: deps
	@deploy/build-tools.sh helm servicemonitor-crd

# helm lint of charts/berth with its defaults and with every ci/ values file.
chart-lint: chart-tools
	@_output/tools/helm lint --strict charts/berth
	@for f in charts/berth/ci/*-values.yaml; do \
	  _output/tools/helm lint --strict charts/berth --values "$$f" >/dev/null || \
	    { _output/tools/helm lint --strict charts/berth --values "$$f"; exit 1; }; \
	  echo "chart-lint: $$f ok"; \
	done

# Regenerates manifests/berth.yaml from the chart (test/packaging fails when it is stale).
manifests: chart-tools
	@deploy/render-manifests.sh

# In-process benchmarks: the scheduler core on scheduler_perf's workloads (5,000 nodes by default;
# e.g. BENCH_ARGS="--nodes 500 --pods 1000" for a quick run), then the informer decode path.
BENCH_ARGS ?=
bench: build
	@_output/bin/scheduler_bench --workload all $(BENCH_ARGS)
	@_output/bin/decode_bench --pods 2000

# End-to-end on the local control plane: berth-scheduler, kube-scheduler (same pinned release) and
# a bind-only client, one after the other on fresh pods, for four rounds in changing order (one
# with --large; --rounds N to choose); prints latency, pods/s, CPU, RSS, per-binder medians and
# ratios. BENCH_E2E_ARGS="--large" for 5,000 nodes / 30,000 pods, "--nodes 100 --pods 500" quick,
# "--kwok" to have kwok (built on first use) turn bound pods Running as a kubelet would,
# "--workload NAME" for one of scheduler_perf's workloads: SchedulingBasic (the default),
# SchedulingPodAntiAffinity (at most one pod per node: --nodes 500 --pods 400 --existing 100),
# SchedulingPodAffinity, SchedulingPreferredPodAffinity, SchedulingPreferredPodAntiAffinity,
# TopologySpreading, PreferredTopologySpreading; the bind-only client ignores their constraints.
BENCH_E2E_ARGS ?=
bench-e2e: build cluster-up
	@deploy/build-tools.sh kube-scheduler $(if $(findstring --kwok,$(BENCH_E2E_ARGS)),kwok)
	@source _output/cluster/env && _output/bin/bench_e2e $(BENCH_E2E_ARGS)

SOURCES = $(shell git ls-files '*.cc' '*.h')

format:
	@clang-format -i $(SOURCES)

format-check:
	@clang-format --dry-run -Werror $(SOURCES)

lint: configure
	@clang-tidy -p $(BUILD_DIR) --quiet $(filter %.cc,$(SOURCES))

clean:
	@rm -rf $(BUILD_DIR) _output/build-asan _output/build-tsan _output/build-fuzz _output/bin \
	  _output/bin-fuzz _output/fuzz
