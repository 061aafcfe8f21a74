package extender

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plancore/plancore/gpu"
)

// This file is the one fast path of Filter and Prioritize over Node
// objects sent whole (kube-scheduler configured nodeCacheCapable false):
// kube-scheduler sends the same objects call after call, so an object
// byte for byte equal to one the last call sent is neither scanned, nor
// decoded, nor copied again. BenchmarkFilter1000Nodes/Nodes measures it;
// TestTemplateBytesReused and TestPropSentReuse check that only equal
// bytes are reused.

// sentNode is a Node object sent whole: its bytes as sent, in a string the
// extender owns (never a slice of a request body, so that the body can be
// reused once parsed), and what the fit makes of it (gpu.DecodeNode of the
// parts templateWire reads). It is shared by the calls that send the same
// bytes: nothing may modify it.
type sentNode struct {
	raw  string
	name string
	node gpu.Node
	err  error
}

// sentKeyBytes is how much of an object's start keys it in a sentIndex:
// kube-scheduler writes metadata.name first, so a node's start is its own.
const sentKeyBytes = 128

// sentIndex finds, by their first sentKeyBytes bytes, the objects the
// last call sent. The key only points at one object to compare: an object
// is reused when all its bytes are equal, never on the key alone. Objects
// shorter than the key are not indexed (they cost little to read again);
// of objects sharing a start, the index holds the last one.
type sentIndex map[string]*sentNode

// at is the indexed object that rest starts with, byte for byte, or nil.
// Only objects (a '{' first) are indexed, and an object's bytes end where
// the scanner ends it whatever follows, so the scanner would read the same
// item there, which passed the same Limits when it was first decoded.
func (x sentIndex) at(rest []byte) *sentNode {
	if len(rest) < sentKeyBytes {
		return nil
	}
	if n := x[string(rest[:sentKeyBytes])]; n != nil && len(rest) >= len(n.raw) && string(rest[:len(n.raw)]) == n.raw {
		return n
	}
	return nil
}

// add indexes n under its start.
func (x sentIndex) add(n *sentNode) {
	if len(n.raw) >= sentKeyBytes && n.raw[0] == '{' {
		x[n.raw[:sentKeyBytes]] = n
	}
}

// sentNodes reads the Node objects split from a body: each one the last
// call sent byte for byte is reused, the others are decoded within the
// Limits and copied out of the body. The index of this call's objects
// replaces the last call's, so it holds one request's objects at most.
func (s *Scheduler) sentNodes(items []itemPart, last sentIndex) ([]*sentNode, error) {
	l := s.limits
	out := make([]*sentNode, len(items))
	next := make(sentIndex, len(items))
	for i, item := range items {
		n := item.known
		if n == nil {
			n = last.at(item.raw)
			if n != nil && len(n.raw) != len(item.raw) {
				n = nil
			}
		}
		if n == nil {
			var w templateWire
			if err := within(fmt.Sprintf("nodes.items[%d]", i), item.raw, l.MaxNodeBytes, l.MaxNodeValues, &w); err != nil {
				return nil, err
			}
			obj := w.node()
			n = &sentNode{raw: string(item.raw), name: obj.Name}
			n.node, n.err = gpu.DecodeNode(&obj, s.registry)
		}
		next.add(n)
		out[i] = n
	}
	s.templateMu.Lock()
	s.sent = next
	s.templateMu.Unlock()
	return out, nil
}

// templateWire is what the fit reads of a Node object (gpu.DecodeNode):
// the rest of the object is skipped unread.
type templateWire struct {
	Metadata struct {
		Name        string            `json:"name"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Status struct {
		Capacity    corev1.ResourceList `json:"capacity"`
		Allocatable corev1.ResourceList `json:"allocatable"`
	} `json:"status"`
}

func (t *templateWire) node() corev1.Node {
	return corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: t.Metadata.Name, Labels: t.Metadata.Labels, Annotations: t.Metadata.Annotations},
		Status:     corev1.NodeStatus{Capacity: t.Status.Capacity, Allocatable: t.Status.Allocatable},
	}
}

// rawNodeList is a corev1.NodeList of objects as they were sent.
type rawNodeList struct {
	Items []json.RawMessage `json:"items"`
}

// rawNodes is the objects of sent at the indexes chosen, as they were
// sent.
func rawNodes(sent []*sentNode, chosen []int) *rawNodeList {
	out := &rawNodeList{Items: make([]json.RawMessage, 0, len(chosen))}
	for _, i := range chosen {
		out.Items = append(out.Items, json.RawMessage(sent[i].raw))
	}
	return out
}
