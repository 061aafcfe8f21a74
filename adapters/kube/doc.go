// Package kube connects plancore's cores to Kubernetes through
// sigs.k8s.io/controller-runtime's client.Client:
//
//   - NodeLockStore, a lock.Store in Node annotations (hami.io/mutex.lock and a
//     plancore sidecar), wire-compatible with HAMi, whose writes are merge
//     patches guarded by the Node's resourceVersion;
//   - the executors of the reconcile, dag and gpu cores (pods, batch/v1 Jobs,
//     pod annotations and the pods/binding subresource), in files named after
//     the core they serve;
//   - PodObserver, a pod event handler that feeds the informer's pod events
//     to an expectations.Tracker (Observe) before it enqueues the owner.
//
// Executors are idempotent where the cores' contracts say so: a create tolerates
// AlreadyExists for a fixed name, a delete tolerates NotFound, and a write that
// must not overwrite someone else's change carries a resourceVersion or UID
// precondition, so the API server's 409 Conflict decides races. A Conflict is
// never retried blindly: the caller re-reads and re-plans.
//
// # Reads without copies
//
// A controller-runtime cache deep-copies every object it returns, which on a
// steady-state pass over 10,000 pods costs far more than planning them.
// PodExecutor.ListPods, ObserveJobs and the list options of ClusterPods
// (one cluster's pods through the IndexPodsByCluster index) read with
// client.UnsafeDisableDeepCopy instead: the objects they return share memory
// with the informer's store. That is safe because nothing on the path
// writes to them. The cores
// (reconcile, expectations, dag, gpu) never mutate their input, which their
// purity property tests check and TestCachedObjectsUntouched checks on a real
// cache, and the executors never write to what they read: a create sends a
// deep copy of the plan's pod, deletes and patches send names, UIDs and new
// maps. A caller that changes a listed object must DeepCopy it first, as with
// any object read from a cache without copies.
//
// Single-object reads (GetPod, the Node reads of NodeLockStore and
// BindExecutor) go through client.Reader.Get, which controller-runtime
// copies unless the cache itself is built with UnsafeDisableDeepCopy for
// that type (cache.Options.ByObject); one copy per call is cheap, and those
// paths only read the object too.
//
// # Testing
//
// The tests run against a real kube-apiserver and etcd started by package
// kubetest (controller-runtime's envtest), never against client-go's fake
// clientset, which ignores resourceVersion preconditions and so cannot test a
// lock. Run `bash .ci/kube-apiserver.sh` once per machine to build the API
// server (bash .ci/run does it).
package kube
