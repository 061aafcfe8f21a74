package extender

import (
	"cmp"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/plancore/plancore/gpu"
)

// nodeUnregistered is HAMi's reason for a node without devices.
const nodeUnregistered = "node unregistered"

// templates reads the devices of Node objects sent whole (kube-scheduler
// configured nodeCacheCapable false, cluster-autoscaler's simulations) from
// the objects themselves, as HAMi does since #2046: such a node may exist
// only in the caller's snapshot (a template of a node group), so neither
// the node cache nor any pod's usage is read, and every device is free. A
// node whose annotations do not decode is failed with why (HAMi skips the
// vendor; plancore refuses the node, as it does for cached nodes), one
// with no device "node unregistered", as HAMi says. The nodes come back
// sorted by name; a name sent twice fails the call.
func (s *Scheduler) templates(items []corev1.Node) ([]gpu.Node, map[string]string, error) {
	nodes := make([]gpu.Node, 0, len(items))
	failed := map[string]string{}
	seen := make(map[string]bool, len(items))
	for i := range items {
		n := &items[i]
		switch {
		case n.Name == "":
			return nil, nil, fmt.Errorf("nodes.items[%d] has no name", i)
		case seen[n.Name]:
			return nil, nil, fmt.Errorf("node %q is sent twice", n.Name)
		}
		seen[n.Name] = true
		d, err := gpu.DecodeNode(n, s.registry)
		switch {
		case err != nil:
			failed[n.Name] = err.Error()
		case len(d.Devices) == 0:
			failed[n.Name] = nodeUnregistered
		default:
			nodes = append(nodes, d)
		}
	}
	slices.SortFunc(nodes, func(a, b gpu.Node) int { return cmp.Compare(a.Name, b.Name) })
	return nodes, failed, nil
}

// filterTemplates is Filter over Node objects sent whole: the pod is fitted
// to the template nodes, nothing is written on it or assumed (HAMi writes
// nothing either: the caller may be simulating), and the answer is in
// Nodes, the chosen object as it was sent, which is where a caller that
// sends Nodes reads it.
func (s *Scheduler) filterTemplates(args *extenderv1.ExtenderArgs, req gpu.FitRequest) extenderv1.ExtenderFilterResult {
	nodes, failed, err := s.templates(args.Nodes.Items)
	if err != nil {
		return extenderv1.ExtenderFilterResult{Error: "extender filter: " + err.Error()}
	}
	plan, err := gpu.Decide(gpu.Input{Nodes: nodes, Request: req}, s.options)
	if err != nil {
		return extenderv1.ExtenderFilterResult{Error: err.Error()}
	}
	for _, nf := range plan.Nodes {
		if !nf.Fits {
			failed[nf.Node] = nf.Reason.Message
		}
	}
	res := extenderv1.ExtenderFilterResult{Nodes: &corev1.NodeList{Items: []corev1.Node{}}, FailedNodes: failed}
	if plan.Node != "" {
		i := slices.IndexFunc(args.Nodes.Items, func(n corev1.Node) bool { return n.Name == plan.Node })
		res.Nodes.Items = append(res.Nodes.Items, args.Nodes.Items[i])
	}
	return res
}
