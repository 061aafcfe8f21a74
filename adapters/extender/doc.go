// Package extender is a kube-scheduler extender for GPU sharing on
// plancore's gpu core, a drop-in for HAMi's scheduler extender: kube-scheduler
// calls Filter, Prioritize and Bind over HTTP (Handler), and the extender
// answers from a controller-runtime cache of Nodes and Pods.
//
//   - Filter reads every candidate node's devices from HAMi's node
//     annotations (gpu.DecodeNode), what each pod already holds from its
//     annotations (gpu.DecodePodUsage), fits the pod (gpu.Decide), writes the
//     annotations HAMi's Filter writes (gpu.FilterAnnotations) on the pod
//     and returns the chosen node, each unfit node with HAMi's reason. The
//     devices it gives count as used by the next Filter at once, before the
//     cache shows the pod's new annotations, so a burst never over-assigns.
//   - Filter over whole Nodes (kube-scheduler configured nodeCacheCapable
//     false, or cluster-autoscaler simulating a scale-up) fits the pod to
//     the objects sent, as HAMi does since #2046 for template nodes: their
//     devices read from the objects themselves, every device free (such a
//     node may exist only in the caller's snapshot, and no pod runs on it),
//     "node unregistered" for a node without devices, nothing written on
//     the pod or assumed, and the chosen object answered in Nodes, which is
//     where such a caller reads the answer.
//   - Prioritize scores nodes 0–10 by the fit's node score (template nodes
//     as Filter fits them).
//   - Bind runs HAMi's Bind flow (gpu.Binder over kube.BindExecutor): the
//     node lock on Node annotations, bind-phase allocating, the binding, and
//     on failure the locks released and the pod marked failed.
//
// Where HAMi skips a pod whose device annotations do not decode, the
// extender refuses that pod's node for the call, naming the pod: the node's
// real usage is unknown, and fitting it as if the pod held nothing could
// over-assign a device.
//
// No request, however built, stalls the scheduler or exhausts its memory
// (Limits): a body is read within a bound derived from the cluster size it
// allows (one pod plus node names, or Node objects of a bounded size), split
// into its parts in one pass, and each part's bytes and JSON values are
// held to its own bound before it is decoded; a Nodes list is refused at
// its MaxNodes+1st object. A few requests are decoded at a time while the
// others wait their turn, a call naming more candidates than the node cache
// holds is refused before the scheduler's mutex is taken, and template
// nodes are fitted without it: only the decision over cached nodes runs
// under it.
//
// kube-scheduler's configuration names the extender with urlPrefix, the
// verbs "filter", "prioritize" and "bind", nodeCacheCapable true, and the
// device resources as managedResources with ignoredByScheduler true, so
// only pods asking for them reach it. Config.KubeScheduler takes that
// entry: New then refuses, naming the setting to change, verbs Handler does
// not serve, a preemptVerb, a bindVerb without filterVerb, a bindVerb with
// nodeCacheCapable false (template nodes assign no devices, so Bind would
// find none: HAMi's own scheduler cannot bind there either), and
// managedResources that keep device pods from the extender (a device
// type's resource listed without its count) or every node from them (a
// memory or cores resource kube-scheduler does not ignore, which no node
// advertises). A caller that only simulates (cluster-autoscaler) is
// configured nodeCacheCapable false with filterVerb alone.
package extender
