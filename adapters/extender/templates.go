package extender

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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
	s.templateMu.Lock()
	last := s.templateCache
	s.templateMu.Unlock()
	next := make(map[string]decodedTemplate, len(items))
	defer func() {
		s.templateMu.Lock()
		s.templateCache = next
		s.templateMu.Unlock()
	}()
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
		d, err := s.decodeTemplate(n, last[n.Name], next)
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
	// Template nodes are never bound: the plan needs no Bind options.
	plan, err := gpu.Fit(gpu.Input{Nodes: nodes, Request: req})
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

// decodedTemplate is a template node as last decoded: what gpu.DecodeNode
// read of it, and what it made of that.
type decodedTemplate struct {
	labels, annotations   map[string]string
	capacity, allocatable corev1.ResourceList
	node                  gpu.Node
	err                   error
}

// decodeTemplate is gpu.DecodeNode(n), reusing the last call's result for
// a node of that name whose labels, annotations and resources are equal
// (compared by value): callers send the same nodes call after call, and
// decoding 1,000 registers is most of a Filter's time. The cache holds the
// last call's nodes only, so it is bounded by one request; it is swapped
// under its own mutex, never the scheduler's.
func (s *Scheduler) decodeTemplate(n *corev1.Node, last decodedTemplate, next map[string]decodedTemplate) (gpu.Node, error) {
	if last.annotations != nil && maps.Equal(last.annotations, n.Annotations) && maps.Equal(last.labels, n.Labels) &&
		sameResources(last.capacity, n.Status.Capacity) && sameResources(last.allocatable, n.Status.Allocatable) {
		next[n.Name] = last
		return last.node, last.err
	}
	d := decodedTemplate{labels: n.Labels, annotations: n.Annotations, capacity: n.Status.Capacity, allocatable: n.Status.Allocatable}
	if d.annotations == nil {
		d.annotations = map[string]string{}
	}
	d.node, d.err = gpu.DecodeNode(n, s.registry)
	next[n.Name] = d
	return d.node, d.err
}

func sameResources(a, b corev1.ResourceList) bool {
	return maps.EqualFunc(a, b, func(x, y resource.Quantity) bool { return x.Equal(y) })
}
