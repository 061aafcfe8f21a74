#!/usr/bin/env bash
# Builds the Kubernetes API server that adapters/kube's tests run against, once per
# machine, and prints the directory that holds it beside etcd (the layout envtest
# expects in BinaryAssetsDirectory / KUBEBUILDER_ASSETS).
#
# kube-apiserver comes from the k8s.io/kubernetes Go module of the same minor version
# as the k8s.io/api the core module pins, built by .ci/kube-binary.sh. etcd is
# Debian's etcd-server (.ci/run installs it); it is symlinked into the same directory.
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

# kube-binary.sh builds (once per machine) and caches the binary in
# $cache_root/$version/kube-apiserver; etcd is linked beside it.
PLANCORE_KUBE_CACHE=$cache_root bash "$(dirname "${BASH_SOURCE[0]}")/kube-binary.sh" kube-apiserver "$version" >/dev/null

ready() {
	[ -x "$dir/kube-apiserver" ] && [ -x "$dir/etcd" ] &&
		"$dir/kube-apiserver" --version >/dev/null 2>&1
}

ln -sfn "$etcd_bin" "$dir/etcd"
if ! ready; then
	log "binaries in $dir are not usable"
	exit 1
fi
printf '%s\n' "$dir"
