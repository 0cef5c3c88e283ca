# Ripple's developer entry points. `make help` lists them.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

BIN        := $(CURDIR)/bin
VERSION    ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS    := -s -w -X github.com/ripple-dev/ripple/internal/version.Version=$(VERSION)
NAME       ?= default
# Every tier runs go test through gotestsum (pinned in hack/tools/gotestsum):
# go test's usual output, and the tier's test events kept in
# bin/test-json/<target>.json, from which make test names its slowest tests.
GOTESTSUM  := go tool -modfile=$(CURDIR)/hack/tools/gotestsum/go.mod gotestsum
TEST_JSON  := $(CURDIR)/bin/test-json
GOTEST     ?= $(GOTESTSUM) --format standard-quiet --jsonfile $(TEST_JSON)/$@.json --
# The control-plane binaries live outside the repo, in a versioned cache that
# hack/build-tools.sh fills once and reuses. Recipes find its directory when
# they run (a shell substitution, not $(shell), which `make -n` would run
# while printing the recipe), so a dry run builds nothing.
TOOLS_DIR   = $$(bash hack/build-tools.sh 2>/dev/null | tail -n 1)
# TIMED runs a tier's command and prints its time when it ends, pass or
# fail: each tier of `make test` tells how long it took.
TIMED       = bash hack/timed.sh $@
# When this make started, for make test's total.
MAKE_START := $(shell date +%s)
RACE       ?= -race
# golangci-lint's version is pinned in hack/tools/lint/go.mod (its `tool`
# directive); the binary is cached next to the Kubernetes tools, keyed by it.
GOLANGCI_LINT_VERSION := $(shell awk '$$1 == "github.com/golangci/golangci-lint/v2" { print $$2 }' hack/tools/lint/go.mod)
GOLANGCI_LINT         := $(abspath $(shell go env GOCACHE)/../ripple-k8s/golangci-lint-$(GOLANGCI_LINT_VERSION))/golangci-lint
# controller-gen writes the ConfigRollout API's deep copies and CRD; pinned
# in hack/tools/controllergen/go.mod and cached like golangci-lint.
CONTROLLER_GEN_VERSION := $(shell awk '$$1 == "sigs.k8s.io/controller-tools" { print $$2 }' hack/tools/controllergen/go.mod)
CONTROLLER_GEN         := $(abspath $(shell go env GOCACHE)/../ripple-k8s/controller-gen-$(CONTROLLER_GEN_VERSION))/controller-gen

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-24s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: tools
tools: ## Build the pinned kube-apiserver, controller-manager, scheduler, kubectl, kubelet, etcd, kwok and helm (cached; ~9 min the first time on 2 cores).
	@$(TIMED) bash -c 'bash hack/build-tools.sh >/dev/null'

.PHONY: build
# Built beside and renamed into place: make test's lanes build it while
# other tiers run it, and a binary rewritten in place could be run half
# written.
build: ## Build bin/ripple.
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/.ripple.$$$$ ./cmd/ripple && mv -f $(BIN)/.ripple.$$$$ $(BIN)/ripple

.PHONY: fmt
fmt: ## Format the Go code.
	gofmt -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## gofmt check, go vet, golangci-lint and a check that the generated API files are current (make test and CI run this; ~2 min).
	@$(TIMED) $(MAKE) --no-print-directory vet-steps

.PHONY: gofmt-check
gofmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed: $$out"; exit 1; fi

.PHONY: vet-steps
vet-steps: gofmt-check
	go vet ./...
	@$(MAKE) --no-print-directory lint
	@$(MAKE) --no-print-directory generate-check

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Regenerate the ConfigRollout API's deep copies (api/) and its CRD (deploy/helm/ripple/files/crds) with controller-gen.
	$(CONTROLLER_GEN) object paths=./api/... crd output:crd:dir=deploy/helm/ripple/files/crds

# generate-check regenerates into a scratch copy of the files and compares,
# so that a stale file fails without touching the tree.
.PHONY: generate-check
generate-check: $(CONTROLLER_GEN)
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:dir=$$tmp/crds && \
	$(CONTROLLER_GEN) object paths=./api/... output:object:dir=$$tmp/api && \
	diff -r deploy/helm/ripple/files/crds $$tmp/crds && diff api/v1alpha1/zz_generated.deepcopy.go $$tmp/api/zz_generated.deepcopy.go || \
	{ echo "the generated API files are stale: run 'make generate'"; exit 1; }

$(CONTROLLER_GEN):
	@echo "building controller-gen $(CONTROLLER_GEN_VERSION) into $(@D) (once; about a minute)"
	@mkdir -p $(@D)
	cd hack/tools/controllergen && CGO_ENABLED=0 go build -trimpath -o $@.$$$$.tmp sigs.k8s.io/controller-tools/cmd/controller-gen && mv $@.$$$$.tmp $@ || { rm -f $@.$$$$.tmp; exit 1; }

.PHONY: lint
lint: $(GOLANGCI_LINT) ## golangci-lint with .golangci.yml (LINT_ARGS=--fix to apply fixes).
	$(GOLANGCI_LINT) run $(LINT_ARGS) ./...

# The pinned golangci-lint is built once per version into a cache outside the
# repo (a few minutes on 2 cores) and reused.
$(GOLANGCI_LINT):
	@echo "building golangci-lint $(GOLANGCI_LINT_VERSION) into $(@D) (once; a few minutes)"
	@mkdir -p $(@D)
	cd hack/tools/lint && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w -X main.version=$(GOLANGCI_LINT_VERSION)' \
		-o $@.$$$$.tmp github.com/golangci/golangci-lint/v2/cmd/golangci-lint && mv $@.$$$$.tmp $@ || { rm -f $@.$$$$.tmp; exit 1; }

# The unit tier runs once, with the race detector and statement coverage of
# internal/... (cmd/ and hack/ are tested too, but not counted): the profile
# is kept for `go tool cover -html=bin/coverage-unit.out`.
UNIT_COVER := $(BIN)/coverage-unit.out
UNIT_PKGS  := ./internal/... ./cmd/... ./hack/bench/... ./hack/soak/... ./hack/vulncheck/... ./hack/testfailures/...

$(TEST_JSON):
	@mkdir -p $@

.PHONY: test-unit
test-unit: | $(TEST_JSON) ## Unit tests with the race detector (no API server, no network; about 4 minutes on 2 cores); prints the coverage of internal/...
	$(TIMED) $(GOTEST) $(RACE) -coverprofile=$(UNIT_COVER).all $(UNIT_PKGS)
	@grep -E '^(mode:|github.com/ripple-dev/ripple/internal/)' $(UNIT_COVER).all > $(UNIT_COVER); rm -f $(UNIT_COVER).all
	@go tool cover -func=$(UNIT_COVER) | tail -n 1 | awk '{print "unit-tier statement coverage of internal/...: " $$NF}'

.PHONY: check
check: ## The quick check of a change to the code (no tools, no cluster; 1m24s measured, caches warm): gofmt, go vet, golangci-lint and the unit tests without the race detector.
	@$(TIMED) $(MAKE) --no-print-directory check-steps

.PHONY: check-steps
check-steps: gofmt-check
	go vet ./...
	@$(MAKE) --no-print-directory lint
	go test $(UNIT_PKGS)

.PHONY: test-integration
test-integration: tools build | $(TEST_JSON) ## Integration tests against a real kube-apiserver and etcd (envtest).
	RIPPLE_TOOLS_DIR=$(TOOLS_DIR) RIPPLE_BINARY=$(BIN)/ripple $(TIMED) $(GOTEST) $(RACE) -count=1 -parallel 32 -timeout 20m ./test/integration/...

# The oldest supported Kubernetes minor (README, "Supported versions") is
# pinned in hack/tools/kube-oldest and cached beside the default version.
# Its directory is found when the recipe runs, so `make -n` builds nothing.
OLDEST_TOOLS = RIPPLE_TOOLS_DIR= bash hack/build-tools.sh kube-oldest

.PHONY: tools-oldest
tools-oldest: ## Build the oldest supported Kubernetes minor's control plane and etcd (cached; ~10 min the first time).
	@$(OLDEST_TOOLS) >/dev/null

.PHONY: test-integration-oldest
test-integration-oldest: build | $(TEST_JSON) ## Integration tests against the oldest supported Kubernetes minor (builds it once; not part of make test).
	dir=$$($(OLDEST_TOOLS) | tail -n 1); \
	RIPPLE_TOOLS_DIR=$$dir RIPPLE_BINARY=$(BIN)/ripple $(GOTEST) $(RACE) -count=1 -parallel 32 -timeout 20m ./test/integration/...

.PHONY: test-e2e
test-e2e: tools build | $(TEST_JSON) ## End-to-end tests on the full local cluster (controller-manager, scheduler, kwok nodes).
	RIPPLE_TOOLS_DIR=$(TOOLS_DIR) RIPPLE_BINARY=$(BIN)/ripple $(TIMED) $(GOTEST) -count=1 -parallel 16 -timeout 30m ./test/e2e/...

.PHONY: test-hostile
test-hostile: tools build | $(TEST_JSON) ## The hostile-tenant tier: a tenant with edit rights in its namespaces attacks Ripple on a local cluster of its own (4 to 5 minutes).
	RIPPLE_TOOLS_DIR=$(TOOLS_DIR) RIPPLE_BINARY=$(BIN)/ripple $(TIMED) $(GOTEST) -count=1 -timeout 10m ./test/hostile/...

# The real-kubelet tier runs a kubelet as root, fenced in a mount
# namespace and a cgroup root of its own (hack/kubeletnode).
.PHONY: test-kubelet
test-kubelet: tools build | $(TEST_JSON) ## The real-kubelet tier: a kubelet built from the pinned modules runs pods on a fake container runtime that records each container; proves what an in-place restart relies on, and runs the in-place method end to end on 20-pod Deployments and reload actions against the pods' loopback addresses (needs root; about 3 minutes).
	RIPPLE_TOOLS_DIR=$(TOOLS_DIR) RIPPLE_BINARY=$(BIN)/ripple $(TIMED) $(GOTEST) -count=1 -timeout 10m ./test/kubelet/...

.PHONY: test-chart
test-chart: tools | $(TEST_JSON) ## Helm chart tests: lint, schema, golden files, flag parsing, dry runs, install and RBAC on a real API server.
	RIPPLE_TOOLS_DIR=$(TOOLS_DIR) $(TIMED) $(GOTEST) -count=1 -timeout 20m ./test/chart/...

.PHONY: test-docs
test-docs: | $(TEST_JSON) ## Docs check: every flag, annotation, metric and Event reason README.md and docs/ name exists in the code, and what they say of the Makefile holds (no cluster; under a minute).
	$(TIMED) $(GOTEST) -count=1 ./test/docs/...

FUZZTIME ?= 30s
# govulncheck and the Go vulnerability database are pinned in
# hack/tools/vuln/go.mod. vuln.go.dev cannot be reached, so the database is
# built once from the x/vulndb module's OSV files into the tools cache.
VULNDB_VERSION := $(shell awk '$$1 == "golang.org/x/vulndb" { print $$2 }' hack/tools/vuln/go.mod)
VULNDB         := $(abspath $(shell go env GOCACHE)/../ripple-k8s/vulndb-$(VULNDB_VERSION))
VULN_TOOL      := go tool -modfile=$(CURDIR)/hack/tools/vuln/go.mod

$(VULNDB)/index/db.json:
	@echo "building the Go vulnerability database $(VULNDB_VERSION) into $(VULNDB) (once; a few minutes)"
	@rm -rf $(VULNDB).tmp
	cd hack/tools/vuln && go mod download golang.org/x/vulndb && \
		$(VULN_TOOL) indexdb -vulns "$$(go list -m -f '{{.Dir}}' golang.org/x/vulndb)/data/osv" -out $(VULNDB).tmp
	@rm -rf $(VULNDB) && mv $(VULNDB).tmp $(VULNDB)

.PHONY: vulncheck
vulncheck: $(VULNDB)/index/db.json ## govulncheck, offline: fails when Ripple calls vulnerable code of a module go.mod requires; lists the standard library's (fixed by the Go that builds releases).
	$(TIMED) bash -o pipefail -c '$(VULN_TOOL) govulncheck -db file://$(VULNDB) -format json ./... | go run ./hack/vulncheck'

.PHONY: fuzz
fuzz: ## Run each fuzz target (annotation, window, duration, restart and flag parsers) for FUZZTIME (default 30s); make test runs their seeds only.
	@grep -rlE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' internal | sort | while read -r file; do \
		for target in $$(sed -nE 's/^func (Fuzz[A-Za-z0-9_]*)\(f \*testing\.F\).*/\1/p' "$$file"); do \
			echo "== $$target ($$(dirname "$$file"))"; \
			$(GOTEST) -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) ./$$(dirname "$$file") || exit 1; \
		done; \
	done

# make test runs its tiers in two phases, each of two lanes at once, each
# lane's output printed whole when it ends. First the tiers that need no
# local cluster (compiling, mostly): vet, the unit tests and the image in
# one lane; the chart tier, vulncheck and docs in the other. Then the
# tiers whose tests bound how long Ripple takes, each with a control
# plane of its own: e2e and hostile in one lane, integration and kubelet
# in the other. They spend most of their time waiting on settle windows,
# bakes and rollouts, so two of them share the two cores; beside the first
# phase's compiles, the cores starve their API servers and those bounds
# fail.
# A failed e2e test prints Ripple's log after its own messages, and CI
# shows the end of the output: a failed phase ends by naming its failed
# tests with their messages.
FAILED = { echo "== the failed tests"; go run ./hack/testfailures $(TEST_JSON)/*.json; exit 1; }

.PHONY: test
test: tools build ## Everything CI runs, in two phases of two lanes: vet, unit (with -race) and image beside chart, vulncheck and docs; then e2e and hostile-tenant beside integration and real-kubelet (each tier prints its time; the end, the slowest 10 tests and the total, or the failed tests).
	@rm -rf $(TEST_JSON)
	@$(MAKE) --no-print-directory -j2 --output-sync=target test-lane-checks test-lane-chart || $(FAILED)
	@$(MAKE) --no-print-directory -j2 --output-sync=target test-lane-e2e test-lane-clusters || $(FAILED)
	@echo "== the slowest 10 tests"
	@cat $(TEST_JSON)/*.json | $(GOTESTSUM) tool slowest --num 10
	@echo "== make test passed in $$(( ($$(date +%s) - $(MAKE_START)) / 60 ))m$$(( ($$(date +%s) - $(MAKE_START)) % 60 ))s"

.PHONY: test-lane-checks test-lane-chart test-lane-e2e test-lane-clusters
test-lane-checks:
	@$(MAKE) --no-print-directory vet
	@$(MAKE) --no-print-directory test-unit
	@$(MAKE) --no-print-directory test-image
test-lane-chart:
	@$(MAKE) --no-print-directory test-chart
	@$(MAKE) --no-print-directory vulncheck
	@$(MAKE) --no-print-directory test-docs
test-lane-e2e:
	@$(MAKE) --no-print-directory test-e2e
	@$(MAKE) --no-print-directory test-hostile
test-lane-clusters:
	@$(MAKE) --no-print-directory test-integration
	@if [ "$$(id -u)" = 0 ]; then $(MAKE) --no-print-directory test-kubelet; \
	else echo "== test-kubelet skipped: the real-kubelet tier runs a kubelet, which needs root (CI runs it; run make test-kubelet as root)"; fi

.PHONY: cluster-up
cluster-up: tools ## Start a local cluster in the background (NAME=default); prints the kubeconfig path.
	@RIPPLE_TOOLS_DIR=$(TOOLS_DIR) go run ./hack/localcluster up --name $(NAME)

.PHONY: cluster-down
cluster-down: ## Stop the local cluster NAME (default) and remove everything it made.
	@go run ./hack/localcluster down --name $(NAME)

.PHONY: demo
demo: tools build ## Start a local cluster, run Ripple, change a ConfigMap and a Secret, watch the pods roll.
	@RIPPLE_TOOLS_DIR=$(TOOLS_DIR) go run ./hack/demo --ripple $(BIN)/ripple

.PHONY: clean
clean: ## Remove build output (the tools cache is kept).
	rm -rf $(BIN)

.PHONY: docs
docs: ## Regenerate docs/reference.md from the code.
	go run ./hack/docgen

.PHONY: manifests
manifests: tools ## Render deploy/manifests/ripple.yaml and the generated Kustomize files from the Helm chart.
	@RIPPLE_TOOLS_DIR=$(TOOLS_DIR) go run ./hack/genmanifests

.PHONY: chart-golden
chart-golden: tools ## Rewrite test/chart/testdata/golden after an intended chart change (review the diff).
	RIPPLE_TOOLS_DIR=$(TOOLS_DIR) $(GOTEST) -count=1 -run TestValueSets ./test/chart/ -update

# The release version is written once, as the chart's appVersion: the image
# tag, the version stamped into the image's binary, and the tag the chart,
# the manifests and Kustomize install by default (test/chart checks they
# agree).
RELEASE_VERSION   := $(shell sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\} *$$/\1/p' deploy/helm/ripple/Chart.yaml)
IMAGE_REPOSITORY  := ghcr.io/ripple-dev/ripple
# IMAGE=registry/name pushes the image there as $(IMAGE):$(RELEASE_VERSION).
IMAGE             ?=
PLATFORMS         ?= linux/amd64,linux/arm64
# Builds of one commit are identical: every timestamp is the commit's.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
REVISION          ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LICENSES          ?= Apache-2.0
# The Go release the image's and the release's binaries are built with, so
# that every machine builds the same bytes (fetched through the module proxy
# when the local go is another release; empty: the local go). At least the
# release docs/security.md advises (test/docs checks it).
RELEASE_GO        ?= go1.26.10
IMAGE_DIR         ?= $(BIN)/image
RELEASE_DIR       ?= $(BIN)/release
# Flags for `release push`, e.g. --insecure for a plain-HTTP registry.
PUSH_FLAGS        ?=
# make image-load: the cluster tool (found on PATH unless set), the cluster's
# name (the tool's default unless set) and the platform of its nodes.
CLUSTER           ?=
CLUSTER_NAME      ?=
LOAD_PLATFORM     ?= linux/$(shell go env GOARCH)
LOAD_ARCHIVE      ?= $(IMAGE_DIR)/ripple-$(subst /,-,$(LOAD_PLATFORM)).docker.tar

.PHONY: image
image: ## Build the multi-arch OCI image into bin/image with only Go (no container engine, nothing of the machine's); IMAGE=registry/name also pushes it.
	go run ./hack/release image --version $(RELEASE_VERSION) --repository $(IMAGE_REPOSITORY) \
	  --revision $(REVISION) --licenses $(LICENSES) --source-date-epoch $(SOURCE_DATE_EPOCH) --platforms $(PLATFORMS) \
	  --go-toolchain '$(RELEASE_GO)' --ca-roots hack/tools/caroots --out $(IMAGE_DIR)
	@if [ -n "$(IMAGE)" ]; then \
	  set -x; \
	  go run ./hack/release push --image-dir $(IMAGE_DIR) --ref $(IMAGE):$(RELEASE_VERSION) $(PUSH_FLAGS); \
	fi

.PHONY: image-load
image-load: ## Build the image and load it into a local kind, k3d or minikube cluster (CLUSTER=kind|k3d|minikube, CLUSTER_NAME=...).
	@tool='$(CLUSTER)'; \
	if [ -z "$$tool" ]; then \
	  for t in kind k3d minikube; do if command -v $$t >/dev/null; then tool=$$t; break; fi; done; \
	fi; \
	case "$$tool" in \
	  kind|k3d|minikube) command -v $$tool >/dev/null || { echo "make image-load: CLUSTER=$$tool but $$tool is not on PATH" >&2; exit 1; } ;; \
	  "") echo "make image-load: found none of kind, k3d or minikube on PATH; put one on PATH, or load the image by hand (docs/install.md)" >&2; exit 1 ;; \
	  *) echo "make image-load: CLUSTER=$$tool is not one of kind, k3d, minikube" >&2; exit 1 ;; \
	esac; \
	$(MAKE) --no-print-directory image IMAGE= IMAGE_DIR=$(IMAGE_DIR); \
	go run ./hack/release docker-archive --image-dir $(IMAGE_DIR) --platform $(LOAD_PLATFORM) \
	  --tag $(IMAGE_REPOSITORY):$(RELEASE_VERSION) --out $(LOAD_ARCHIVE); \
	name='$(CLUSTER_NAME)'; \
	set -x; \
	case "$$tool" in \
	  kind) kind load image-archive $(LOAD_ARCHIVE) $${name:+--name "$$name"} ;; \
	  k3d) k3d image import $(LOAD_ARCHIVE) $${name:+--cluster "$$name"} ;; \
	  minikube) minikube image load $(LOAD_ARCHIVE) $${name:+--profile "$$name"} ;; \
	esac

.PHONY: release
release: tools image ## Build the release into bin/release: image archive, SBOM, kubectl-ripple archives, krew manifest, chart package, manifests, sha256sums.txt.
	@RIPPLE_TOOLS_DIR=$(TOOLS_DIR) go run ./hack/genmanifests -check
	go run ./hack/release dist --version $(RELEASE_VERSION) --source-date-epoch $(SOURCE_DATE_EPOCH) --go-toolchain '$(RELEASE_GO)' \
	  --image-dir $(IMAGE_DIR) --helm $(TOOLS_DIR)/helm --out $(RELEASE_DIR)

.PHONY: test-image
test-image: tools build | $(TEST_JSON) ## Image and release tests: builds both (the image three times, for the digest; once through image-load into a stand-in kind), checks the image, runs its binary and installs the packaged chart on the local cluster.
	RIPPLE_TOOLS_DIR=$(TOOLS_DIR) RIPPLE_BINARY=$(BIN)/ripple $(TIMED) $(GOTEST) -count=1 -timeout 30m ./test/image/...

.PHONY: bench
bench: tools build ## Benchmark Ripple on local control planes (~10 min on 2 cores; BENCH_ARGS=--quick for the ~8 min set); results in bench-results/<timestamp>/.
	$(GOTEST) -tags bench -count=1 ./hack/bench/ # the benchmark's proxy, against a fake API server, before it measures
	@RIPPLE_TOOLS_DIR=$(TOOLS_DIR) go run ./hack/bench --ripple $(BIN)/ripple $(BENCH_ARGS)

.PHONY: bench-gates
bench-gates: tools ## The pod gate's watches at 1,000 bakes on a real API server: the heap and goroutines after the bakes end (~1 min).
	RIPPLE_TOOLS_DIR=$(TOOLS_DIR) $(GOTEST) -count=1 -run '^$$' -bench BenchmarkPodGateBakes -benchtime 3x -timeout 10m ./internal/change/

.PHONY: bench-pinning
bench-pinning: tools ## What the chart's pinned-pod policy adds to a pod's creation on a real API server: p50 and p99 with and without it, 2,000 pods each (~1 min).
	RIPPLE_TOOLS_DIR=$(TOOLS_DIR) go test -count=1 -run '^$$' -bench BenchmarkPinnedPodCreate -benchtime 1x -timeout 10m ./test/chart/

.PHONY: soak
SOAK_DURATION ?= 30m
soak: tools build ## Soak (not in `make test`): SOAK_DURATION (30m) of config changes, kill -9 of Ripple, API server restarts, a competing writer and undos over 1,000 Deployments; results in soak-results/<timestamp>/ (SOAK_ARGS for more flags).
	$(GOTEST) -count=1 ./hack/soak/
	@RIPPLE_TOOLS_DIR=$(TOOLS_DIR) go run ./hack/soak --ripple $(BIN)/ripple --duration $(SOAK_DURATION) $(SOAK_ARGS)

.PHONY: bench-admission
bench-admission: tools ## The admission webhook's latency at 10,000 workloads on a real API server (~3 min).
	RIPPLE_TOOLS_DIR=$(TOOLS_DIR) $(GOTEST) -count=1 -run '^$$' -bench BenchmarkAdmissionLatency -benchtime 1000x -timeout 20m ./internal/admission/

.PHONY: bench-large
bench-large: tools build ## The large set: 10,000 and 50,000 Deployments with 5,000 configs, cold start, memory model, a 3,000-Deployment fan-out (~4-6 min on 2 cores).
	$(GOTEST) -tags bench -count=1 ./hack/bench/
	@RIPPLE_TOOLS_DIR=$(TOOLS_DIR) go run ./hack/bench --ripple $(BIN)/ripple --large $(BENCH_ARGS)
