#!/usr/bin/env bash
# Builds KubeRay's operator (the main package at the root of the
# github.com/ray-project/kuberay/ray-operator module) from the Go module proxy,
# once per machine, and prints the path of the binary as its last line of
# output. The same download holds KubeRay's CRDs (config/crd/bases), which the
# scale harness reads from the module cache; their directory is printed on the
# line before.
#
#   .ci/kuberay-operator.sh [version]      default v1.5.0, the newest the proxy serves
#
# The binary is cached under ${PLANCORE_KUBERAY_CACHE:-${XDG_CACHE_HOME:-~/.cache}/plancore/kuberay}/<version>/
# and never committed, nor is anything of KubeRay's.
set -euo pipefail

version=${1:-v1.5.0}
cache_root=${PLANCORE_KUBERAY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/plancore/kuberay}
dir=$cache_root/$version
bin=$dir/ray-operator
mod=github.com/ray-project/kuberay/ray-operator

log() { printf 'kuberay-operator.sh: %s\n' "$*" >&2; }

case $version in
v1.*.*) ;;
*)
	log "the version must look like v1.MINOR.PATCH, got $version"
	exit 1
	;;
esac

mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9

src=$(cd "${TMPDIR:-/tmp}" && GOFLAGS=-mod=mod go mod download -json "$mod@$version" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
if [ -z "$src" ] || ! [ -f "$src/config/crd/bases/ray.io_rayclusters.yaml" ]; then
	log "go mod download $mod@$version gave no module directory with CRDs"
	exit 1
fi

if ! [ -x "$bin" ]; then
	log "building $mod@$version; this takes a few minutes"
	start=$(date +%s)
	# go install pkg@version builds in module mode outside any module, checking
	# every dependency against the module's own go.sum and the checksum database.
	GOBIN="$dir/.bin" GOWORK=off GOFLAGS= CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" "$mod@$version"
	mv -f "$dir/.bin/ray-operator" "$bin"
	rmdir "$dir/.bin"
	log "built in $(($(date +%s) - start))s"
fi
printf '%s\n' "$src/config/crd/bases"
printf '%s\n' "$bin"
