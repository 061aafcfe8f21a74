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
func templates(sent []*sentNode) ([]gpu.Node, map[string]string, error) {
	nodes := make([]gpu.Node, 0, len(sent))
	failed := map[string]string{}
	seen := make(map[string]bool, len(sent))
	for i, n := range sent {
		switch {
		case n.name == "":
			return nil, nil, fmt.Errorf("nodes.items[%d] has no name", i)
		case seen[n.name]:
			return nil, nil, fmt.Errorf("node %q is sent twice", n.name)
		}
		seen[n.name] = true
		switch {
		case n.err != nil:
			failed[n.name] = n.err.Error()
		case len(n.node.Devices) == 0:
			failed[n.name] = nodeUnregistered
		default:
			nodes = append(nodes, n.node)
		}
	}
	slices.SortFunc(nodes, func(a, b gpu.Node) int { return cmp.Compare(a.Name, b.Name) })
	return nodes, failed, nil
}

// sentObjects decodes Node objects a caller passed to Filter or
// Prioritize (decodeTemplate).
func (s *Scheduler) sentObjects(items []corev1.Node) []*sentNode {
	s.templateMu.Lock()
	last := s.templateCache
	s.templateMu.Unlock()
	next := make(map[string]decodedTemplate, len(items))
	out := make([]*sentNode, len(items))
	for i := range items {
		n := &items[i]
		d := &sentNode{name: n.Name}
		d.node, d.err = s.decodeTemplate(n, last[n.Name], next)
		out[i] = d
	}
	s.templateMu.Lock()
	s.templateCache = next
	s.templateMu.Unlock()
	return out
}

// filterTemplates is Filter over Node objects sent whole: the pod is fitted
// to the template nodes, nothing is written on it or assumed (HAMi writes
// nothing either: the caller may be simulating), and the answer is in
// Nodes, the chosen object as it was sent (its index in sent), which is
// where a caller that sends Nodes reads it.
func (s *Scheduler) filterTemplates(sent []*sentNode, req gpu.FitRequest) (extenderv1.ExtenderFilterResult, []int) {
	nodes, failed, err := templates(sent)
	if err != nil {
		return extenderv1.ExtenderFilterResult{Error: "extender filter: " + err.Error()}, nil
	}
	// Template nodes are never bound: the plan needs no Bind options.
	plan, err := gpu.Fit(gpu.Input{Nodes: nodes, Request: req})
	if err != nil {
		return extenderv1.ExtenderFilterResult{Error: err.Error()}, nil
	}
	for _, nf := range plan.Nodes {
		if !nf.Fits {
			failed[nf.Node] = nf.Reason.Message
		}
	}
	res := extenderv1.ExtenderFilterResult{FailedNodes: failed}
	if plan.Node == "" {
		return res, []int{}
	}
	return res, []int{slices.IndexFunc(sent, func(n *sentNode) bool { return n.name == plan.Node })}
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
