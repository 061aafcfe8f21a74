// Package kube connects plancore's cores to Kubernetes through
// sigs.k8s.io/controller-runtime's client.Client:
//
//   - NodeLockStore, a lock.Store in Node annotations (hami.io/mutex.lock and a
//     plancore sidecar), wire-compatible with HAMi, whose writes are merge
//     patches guarded by the Node's resourceVersion;
//   - the executors of the reconcile, dag and gpu cores (pods, batch/v1 Jobs,
//     pod annotations and the pods/binding subresource), in files named after
//     the core they serve.
//
// Executors are idempotent where the cores' contracts say so: a create tolerates
// AlreadyExists for a fixed name, a delete tolerates NotFound, and a write that
// must not overwrite someone else's change carries a resourceVersion or UID
// precondition, so the API server's 409 Conflict decides races. A Conflict is
// never retried blindly: the caller re-reads and re-plans.
//
// # Testing
//
// The tests run against a real kube-apiserver and etcd started by package
// kubetest (controller-runtime's envtest), never against client-go's fake
// clientset, which ignores resourceVersion preconditions and so cannot test a
// lock. Run `bash .ci/kube-apiserver.sh` once per machine to build the API
// server (bash .ci/run does it).
package kube
