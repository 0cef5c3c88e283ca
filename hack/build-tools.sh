#!/usr/bin/env bash
# Builds the pinned Kubernetes control plane, kubectl, the kubelet, etcd,
# kwok and helm from the Go modules under hack/tools into a versioned cache
# directory outside the repo (the e2e tests run this kubectl, so none need be
# installed).
# A binary is rebuilt only when it is missing or its pinned version changed,
# so a second run with everything present takes a second or two.
#
# Prints the directory holding the binaries on the last line of stdout.
#
# Usage: bash hack/build-tools.sh [kube-module]
# kube-module is the directory under hack/tools that pins k8s.io/kubernetes
# and etcd: "kube" (the default: the version every test tier runs) or
# "kube-oldest" (the oldest supported minor, for `make
# test-integration-oldest`). Each version has its own cache directory,
# ripple-k8s/<version>; kwok, helm and the CRDs are the same for all.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
default_version=v1.37.2 # test/cluster.KubernetesVersion names the same cache
kube_module=${1:-kube}

log() { printf '[build-tools] %s\n' "$*" >&2; }

# version_of prints the version a tools module pins for a module path.
version_of() { # module-dir module-path
	(cd "$here/tools/$1" && go list -m -f '{{.Version}}' "$2")
}

if [[ ! -f $here/tools/$kube_module/go.mod ]]; then
	log "ERROR: no module hack/tools/$kube_module (use kube or kube-oldest)"
	exit 1
fi
k8s_version=$(version_of "$kube_module" k8s.io/kubernetes)
if [[ $kube_module == kube && $k8s_version != "$default_version" ]]; then
	log "ERROR: hack/tools/kube pins k8s.io/kubernetes $k8s_version but build-tools.sh expects $default_version"
	exit 1
fi
k8s_minor=${k8s_version#v1.}
k8s_minor=${k8s_minor%%.*}

tools_root=$(go env GOCACHE)/../ripple-k8s
cache=${RIPPLE_TOOLS_DIR:-$tools_root/$k8s_version}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)

# One build per cache at a time: a second run (another make, or a test
# tier's recipe looking up the directory) waits for the first and then
# finds its binaries cached, instead of building the same files beside it.
if command -v flock >/dev/null; then
	exec 9>"$cache/.lock"
	if ! flock -n 9; then
		log "another build-tools.sh is building into $cache; waiting for it"
		flock 9
	fi
fi

# cached says whether the cache holds name built from pin.
cached() { # name pin
	[[ -x $cache/$1 && -f $cache/.$1.version && $(<"$cache/.$1.version") == "$2" ]]
}

announce() {
	if [[ -z ${announced:-} ]]; then
		log "building into $cache; the first build of all eight takes about 9 minutes on 2 cores"
		announced=1
	fi
}

# wait_for waits up to seconds for process pid to end; false when it has
# not.
wait_for() { # pid seconds
	local i
	for ((i = 0; i < $2; i++)); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 1
	done
	! kill -0 "$1" 2>/dev/null
}

# build_together compiles the binaries of one module that the cache lacks
# in one go build, which compiles the packages they share once and links
# them while it compiles the others: the Kubernetes binaries share most of
# their code.
build_together() { # module-dir pin ldflags name=package...
	local dir=$1 pin=$2 ldflags=$3
	shift 3
	local names=() pkgs=() spec
	for spec in "$@"; do
		if cached "${spec%%=*}" "$pin"; then
			log "${spec%%=*} $pin: cached"
		else
			names+=("${spec%%=*}") pkgs+=("${spec#*=}")
		fi
	done
	((${#names[@]})) || return 0
	announce
	log "${names[*]} $pin: building..."
	local start=$SECONDS tmp name
	tmp=$(mktemp -d "$cache/.build.XXXXXX")
	# One build of several binaries is long and silent: say every minute
	# that it goes on.
	(cd "$here/tools/$dir" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$tmp/" "${pkgs[@]}") &
	local pid=$! waited=0
	while ! wait_for "$pid" 60; do
		waited=$((waited + 60))
		log "${names[*]} $pin: still building ($((waited / 60)) min)"
	done
	if ! wait "$pid"; then
		rm -rf "$tmp"
		log "ERROR: building ${names[*]} ($pin) failed; see the go build output above"
		exit 1
	fi
	for name in "${names[@]}"; do
		mv "$tmp/$name" "$cache/$name"
		printf '%s' "$pin" >"$cache/.$name.version"
	done
	rm -rf "$tmp"
	log "${names[*]} $pin: built in $((SECONDS - start))s"
}

# build compiles one binary unless the cached one was built from the same pin.
build() { # name module-dir package pin [ldflags]
	local name=$1 dir=$2 pkg=$3 pin=$4 ldflags=${5:-}
	local out=$cache/$name stamp=$cache/.$name.version
	if cached "$name" "$pin"; then
		log "$name $pin: cached"
		return
	fi
	# Another version's cache may hold the same pin (kwok and helm).
	local other
	for other in "$tools_root"/*/"$name"; do
		if [[ -x $other && $other != "$out" && -f $(dirname "$other")/.$name.version && $(<"$(dirname "$other")/.$name.version") == "$pin" ]]; then
			cp "$other" "$out.$$.tmp" && mv "$out.$$.tmp" "$out"
			printf '%s' "$pin" >"$stamp"
			log "$name $pin: copied from $(dirname "$other")"
			return
		fi
	done
	announce
	log "$name $pin: building..."
	local start=$SECONDS
	if ! (cd "$here/tools/$dir" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out.$$.tmp" "$pkg"); then
		rm -f "$out.$$.tmp"
		log "ERROR: building $name from $pkg ($pin) failed; see the go build output above"
		exit 1
	fi
	mv "$out.$$.tmp" "$out"
	printf '%s' "$pin" >"$stamp"
	log "$name $pin: built in $((SECONDS - start))s"
}

vpkg=k8s.io/component-base/version
kube_ldflags="-s -w -X $vpkg.gitVersion=$k8s_version -X $vpkg.gitMajor=1 -X $vpkg.gitMinor=$k8s_minor -X $vpkg.gitTreeState=clean"

kube_bins=(kube-apiserver kube-controller-manager kube-scheduler)
# kubectl for the e2e tests (rollout undo, client-side apply, the docs'
# recipes), of the version they run, and the kubelet for the real-kubelet
# tier (test/kubelet), which runs it on a fake container runtime
# (hack/fakecri); the oldest minor runs only the integration tier.
if [[ $kube_module == kube ]]; then
	kube_bins+=(kubectl kubelet)
fi
specs=()
for bin in "${kube_bins[@]}"; do
	specs+=("$bin=k8s.io/kubernetes/cmd/$bin")
done
# kwok's and helm's modules download while the Kubernetes binaries
# compile (a first build waits on the network otherwise); a failure here
# is the build's below to report.
kwok_pin=$(version_of kwok sigs.k8s.io/kwok) helm_pin=$(version_of helm helm.sh/helm/v3)
cached kwok "$kwok_pin" || (cd "$here/tools/kwok" && go list -deps sigs.k8s.io/kwok/cmd/kwok >/dev/null 2>&1 &)
cached helm "$helm_pin" || (cd "$here/tools/helm" && go list -deps helm.sh/helm/v3/cmd/helm >/dev/null 2>&1 &)
build_together "$kube_module" "$k8s_version" "$kube_ldflags" "${specs[@]}"
build etcd "$kube_module" go.etcd.io/etcd/server/v3 "$(version_of "$kube_module" go.etcd.io/etcd/server/v3)" "-s -w"
# kwok and helm require the k8s.io modules, and every module they share
# with the Kubernetes build, at its versions (hack/tools/*/go.mod), so
# their common packages come compiled from the build cache.
build kwok kwok sigs.k8s.io/kwok/cmd/kwok "$kwok_pin" "-s -w"
build helm helm helm.sh/helm/v3/cmd/helm "$helm_pin" "-s -w"

# fetch copies a file from a project's own Go module into the cache's
# directory dir.
fetch() { # dir module version path-in-module [file-name]
	local name out stamp src
	name=${5:-$(basename "$4")}
	out=$cache/$1/$name stamp=$cache/$1/.$name.version
	if [[ -f $out && -f $stamp && $(<"$stamp") == "$2@$3" ]]; then
		log "$1/$name ($2@$3): cached"
		return
	fi
	mkdir -p "$cache/$1"
	if ! src=$(cd "$cache" && GOFLAGS=-mod=mod go mod download -json "$2@$3" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p') || [[ ! -f $src/$4 ]]; then
		log "ERROR: fetching $4 from $2@$3 failed"
		exit 1
	fi
	cp "$src/$4" "$out.tmp" && chmod 644 "$out.tmp" && mv "$out.tmp" "$out"
	printf '%s' "$2@$3" >"$stamp"
	log "$1/$name ($2@$3): fetched"
}

# kwok simulates nodes and pods by stages, which it has no default for:
# the local cluster runs kwok's own fast stages (hack/cluster reads them).
stage() { fetch kwok-stages sigs.k8s.io/kwok "$kwok_pin" "kustomize/stage/$1"; }
stage node/fast/node-initialize.yaml
stage node/heartbeat/node-heartbeat.yaml
stage pod/fast/pod-ready.yaml
stage pod/fast/pod-complete.yaml
stage pod/fast/pod-delete.yaml

# crd copies a CustomResourceDefinition from a project's own Go module: the
# tests install the real CRDs of the optional kinds (Argo Rollouts, the
# Secrets Store CSI driver) and of the declared kinds' presets without
# their code.
crd() { fetch crds "$@"; }
crd github.com/argoproj/argo-rollouts v1.8.3 manifests/crds/rollout-crd.yaml
crd sigs.k8s.io/secrets-store-csi-driver v1.4.7 config/crd/bases/secrets-store.csi.x-k8s.io_secretproviderclasses.yaml
crd sigs.k8s.io/secrets-store-csi-driver v1.4.7 config/crd/bases/secrets-store.csi.x-k8s.io_secretproviderclasspodstatuses.yaml
# The declared kinds' presets (internal/declared), tested on these.
crd github.com/openkruise/kruise v1.8.0 config/crd/bases/apps.kruise.io_clonesets.yaml
crd github.com/openkruise/kruise v1.8.0 config/crd/bases/apps.kruise.io_statefulsets.yaml
crd github.com/openkruise/kruise v1.8.0 config/crd/bases/apps.kruise.io_daemonsets.yaml
crd knative.dev/serving v0.51.0 config/core/300-resources/service.yaml serving.knative.dev_services.yaml
crd github.com/kedacore/keda/v2 v2.21.0 config/crd/bases/keda.sh_scaledjobs.yaml
crd github.com/external-secrets/external-secrets v0.16.2 config/crds/bases/external-secrets.io_externalsecrets.yaml

echo "$cache"
