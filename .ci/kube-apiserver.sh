#!/usr/bin/env bash
# Builds the Kubernetes API server that adapters/kube's tests run against, once per
# machine, and prints the directory that holds it beside etcd (the layout envtest
# expects in BinaryAssetsDirectory / KUBEBUILDER_ASSETS).
#
# kube-apiserver comes from the k8s.io/kubernetes Go module of the same minor version
# as the k8s.io/api the core module pins. That module's go.mod points every staging
# module (k8s.io/api, k8s.io/client-go, ...) at ./staging/src/..., which its module zip
# does not contain, so the build runs in a scratch copy outside the repository where
# each such replace is rewritten to the published staging module of the matching
# version (v1.31.14 -> v0.31.14) and go.work is deleted. etcd is Debian's etcd-server
# (.ci/run installs it); it is symlinked into the same directory.
#
# The result is cached under ${XDG_CACHE_HOME:-~/.cache}/plancore/kube/<version>/ and
# never committed. Running the script again prints the cached directory at once. The
# last line of output is the directory, so callers can do
#   KUBEBUILDER_ASSETS=$(.ci/kube-apiserver.sh | tail -n1)
#
# Environment:
#   PLANCORE_KUBE_VERSION  k8s.io/kubernetes version to build (default v1.31.14;
#                          v1.31.4 is known to work with Debian's etcd 3.4 too).
#   PLANCORE_KUBE_CACHE    cache root (default ${XDG_CACHE_HOME:-~/.cache}/plancore/kube).
set -euo pipefail

version=${PLANCORE_KUBE_VERSION:-v1.31.14}
cache_root=${PLANCORE_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/plancore/kube}
dir=$cache_root/$version

log() { printf 'kube-apiserver.sh: %s\n' "$*" >&2; }

etcd_bin=$(command -v etcd || true)
if [ -z "$etcd_bin" ]; then
	log "etcd not found on PATH (Debian: apt-get install etcd-server)"
	exit 1
fi

ready() {
	[ -x "$dir/kube-apiserver" ] && [ -x "$dir/etcd" ] &&
		"$dir/kube-apiserver" --version >/dev/null 2>&1
}

mkdir -p "$dir"
# One build per machine: a second caller waits for the first and then finds the cache.
exec 9>"$dir/.lock"
flock 9

if ! [ -x "$dir/kube-apiserver" ] || ! "$dir/kube-apiserver" --version >/dev/null 2>&1; then
	case $version in
	v1.*.*) ;;
	*)
		log "PLANCORE_KUBE_VERSION must look like v1.MINOR.PATCH, got $version"
		exit 1
		;;
	esac
	staging_version=v0.${version#v1.}
	log "building kube-apiserver $version (staging modules $staging_version); this takes several minutes"
	start=$(date +%s)

	src=$(cd "${TMPDIR:-/tmp}" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$version" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
	if [ -z "$src" ] || ! [ -f "$src/go.mod" ]; then
		log "go mod download k8s.io/kubernetes@$version gave no module directory"
		exit 1
	fi

	scratch=$(mktemp -d "${TMPDIR:-/tmp}/plancore-kube-apiserver.XXXXXX")
	trap 'chmod -R u+w "$scratch" 2>/dev/null; rm -rf "$scratch" "$scratch.probe"' EXIT
	cp -r "$src/." "$scratch/"
	chmod -R u+w "$scratch"
	rm -f "$scratch/go.work" "$scratch/go.work.sum"
	# k8s.io/X => ./staging/src/k8s.io/X  becomes  k8s.io/X => k8s.io/X v0.MINOR.PATCH
	sed -i -E "s#^([[:space:]]*)(k8s\.io/[A-Za-z0-9._-]+) => \./staging/src/k8s\.io/[A-Za-z0-9._-]+[[:space:]]*\$#\1\2 => \2 $staging_version#" \
		"$scratch/go.mod"
	# Not every staging module of every patch release is published on every module
	# proxy (seen: k8s.io/cri-client, kube-proxy, kube-scheduler, sample-* missing at
	# v0.31.14). kube-apiserver imports none of those, so a staging module that cannot
	# be fetched is dropped from the scratch go.mod; were it needed, the build below
	# would fail naming it.
	# The probe runs outside any module: inside the scratch copy, go would first load
	# the whole (not yet pruned) module graph and fail on the very module in question.
	probe=$scratch.probe
	mkdir -p "$probe"
	for mod in $(sed -n -E 's#^[[:space:]]*(k8s\.io/[A-Za-z0-9._-]+) => k8s\.io/[A-Za-z0-9._-]+ v0\..*#\1#p' "$scratch/go.mod"); do
		if ! (cd "$probe" && GOWORK=off GOFLAGS= GONOSUMDB=k8s.io \
			go list -m -json "$mod@$staging_version" >/dev/null 2>&1); then
			log "dropping $mod: $staging_version is not available from the module proxy"
			sed -i -E "\#^[[:space:]]*$mod( |\$)#d" "$scratch/go.mod"
		fi
	done
	rmdir "$probe"
	if grep -q '=> ./staging' "$scratch/go.mod"; then
		log "some staging replaces were not rewritten:"
		grep '=> ./staging' "$scratch/go.mod" >&2
		exit 1
	fi

	minor=${version#v1.}
	minor=${minor%%.*}
	pkg=k8s.io/component-base/version
	ldflags="-s -w -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
	# kubernetes' go.sum has no lines for the published staging modules (upstream builds
	# them from ./staging), so their checksums are not verified against the checksum
	# database here: GONOSUMDB=k8s.io. Every other module is checked against go.sum.
	(cd "$scratch" && GOWORK=off GOFLAGS=-mod=mod GONOSUMDB=k8s.io CGO_ENABLED=0 \
		go build -trimpath -ldflags "$ldflags" -o "$dir/kube-apiserver.tmp" ./cmd/kube-apiserver)
	mv -f "$dir/kube-apiserver.tmp" "$dir/kube-apiserver"
	log "built in $(($(date +%s) - start))s: $("$dir/kube-apiserver" --version)"
fi

ln -sfn "$etcd_bin" "$dir/etcd"
if ! ready; then
	log "binaries in $dir are not usable"
	exit 1
fi
printf '%s\n' "$dir"
