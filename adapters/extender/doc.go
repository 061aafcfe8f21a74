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
//   - Prioritize scores nodes 0–10 by the fit's node score.
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
// allows (node names, as kube-scheduler sends with nodeCacheCapable true,
// plus one pod), its JSON values are counted before it is decoded, a few
// requests are decoded at a time while the others wait their turn, and a
// call naming more candidates than the node cache holds is refused before
// the scheduler's mutex is taken: only the decision runs under it.
//
// kube-scheduler's configuration names the extender with urlPrefix, the
// verbs "filter", "prioritize" and "bind", nodeCacheCapable true, and the
// device resources as managedResources, so only pods asking for them reach
// it.
package extender
