#!/usr/bin/env bash
# Builds one Kubernetes command (kube-apiserver, kube-scheduler) from the
# k8s.io/kubernetes Go module, once per machine, and prints the path of the
# binary as its last line of output.
#
#   .ci/kube-binary.sh <command> <version>      e.g. kube-scheduler v1.31.13
#
# That module's go.mod points every staging module (k8s.io/api, k8s.io/client-go,
# ...) at ./staging/src/..., which its module zip does not contain, so the build
# runs in a scratch copy outside the repository where each such replace is
# rewritten to the published staging module of the matching version (v1.31.14 ->
# v0.31.14) and go.work is deleted. Not every staging module of every patch
# release is on every module proxy (k8s.io/kube-scheduler v0.31.14 is missing, so
# kube-scheduler is built at v1.31.13): a staging module that cannot be fetched is
# dropped from the scratch go.mod, and were the command to need it, the build
# fails naming it.
#
# The result is cached under ${PLANCORE_KUBE_CACHE:-${XDG_CACHE_HOME:-~/.cache}/plancore/kube}/<version>/
# and never committed. Running the script again prints the cached binary at once;
# a second caller waits for the first build (flock).
set -euo pipefail

component=${1:?usage: kube-binary.sh <command> <version>}
version=${2:?usage: kube-binary.sh <command> <version>}
cache_root=${PLANCORE_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/plancore/kube}
dir=$cache_root/$version
bin=$dir/$component

log() { printf 'kube-binary.sh: %s\n' "$*" >&2; }

case $component in
kube-apiserver | kube-scheduler) ;;
*)
	log "unsupported command $component (kube-apiserver or kube-scheduler)"
	exit 1
	;;
esac
case $version in
v1.*.*) ;;
*)
	log "the version must look like v1.MINOR.PATCH, got $version"
	exit 1
	;;
esac

usable() { [ -x "$bin" ] && "$bin" --version >/dev/null 2>&1; }

mkdir -p "$dir"
exec 9>"$dir/.lock-$component"
flock 9

if ! usable; then
	staging_version=v0.${version#v1.}
	log "building $component $version (staging modules $staging_version); this takes several minutes"
	start=$(date +%s)

	src=$(cd "${TMPDIR:-/tmp}" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$version" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
	if [ -z "$src" ] || ! [ -f "$src/go.mod" ]; then
		log "go mod download k8s.io/kubernetes@$version gave no module directory"
		exit 1
	fi

	scratch=$(mktemp -d "${TMPDIR:-/tmp}/plancore-$component.XXXXXX")
	trap 'chmod -R u+w "$scratch" 2>/dev/null; rm -rf "$scratch" "$scratch.probe"' EXIT
	cp -r "$src/." "$scratch/"
	chmod -R u+w "$scratch"
	rm -f "$scratch/go.work" "$scratch/go.work.sum"
	# k8s.io/X => ./staging/src/k8s.io/X  becomes  k8s.io/X => k8s.io/X v0.MINOR.PATCH
	sed -i -E "s#^([[:space:]]*)(k8s\.io/[A-Za-z0-9._-]+) => \./staging/src/k8s\.io/[A-Za-z0-9._-]+[[:space:]]*\$#\1\2 => \2 $staging_version#" \
		"$scratch/go.mod"
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
		go build -trimpath -ldflags "$ldflags" -o "$bin.tmp" "./cmd/$component")
	mv -f "$bin.tmp" "$bin"
	log "built in $(($(date +%s) - start))s: $("$bin" --version)"
fi
if ! usable; then
	log "$bin is not usable"
	exit 1
fi
printf '%s\n' "$bin"
