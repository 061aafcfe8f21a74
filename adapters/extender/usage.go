package extender

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/plancore/plancore/gpu"
)

// AssumeTimeout is how long the usage Filter assigned to a pod counts while
// the cache does not show the pod at all (it may have been deleted before
// the cache saw the annotations). A pod the cache shows with its
// annotations counts through them instead.
const AssumeTimeout = 5 * time.Minute

// usageCache keeps decoded annotations between calls, keyed by the objects'
// resourceVersion, so a Filter over 1,000 nodes decodes only what changed;
// and the pods Filter assigned that the cache may not show yet. Its maps
// live across calls: each read marks what it lists with its number (read)
// and then drops what it did not list, rather than building the maps
// anew, which with 10,000 pods cost more per pod the more pods there were
// (maps that outgrow the processor's caches, rebuilt and collected on
// every call).
type usageCache struct {
	nodeByName map[string]*decodedNode
	podByUID   map[types.UID]*decodedPod
	// held is, per node name, the usages of its devices the last usage
	// read found, in slices reused from read to read (heldOn).
	held    map[string]*nodeHeld
	assumed map[types.UID]assumedPod
	seq     uint64 // numbers assumed usages, for their identity
	read    uint64 // numbers the reads of nodes and pods
}

// nodeHeld is a node's usages as of the read numbered read. dropped marks
// one no longer in usageCache.held, which a pod's link to it must not use.
type nodeHeld struct {
	read    uint64
	held    []heldBy
	dropped bool
}

// heldBy is one usage of a node's devices: a pod the cache shows (its UID
// and resourceVersion) or an assumed one (its UID and assume number).
type heldBy struct {
	uid     types.UID
	version string
	usage   *gpu.PodUsage
}

// appliedNode is a node's devices with its pods' usage added, reused
// while the node (its decodedNode, replaced when its resourceVersion
// changes) and the usages it was built from are the same (compared by
// value: each usage's identity).
type appliedNode struct {
	held    []heldBy // sorted by uid, the extender's own copy; usage pointers not compared
	devices []gpu.Device
	err     error
	ok      bool // built
}

// sameHolders reports whether two sorted usage lists name the same usages.
func sameHolders(a, b []heldBy) bool {
	return slices.EqualFunc(a, b, func(x, y heldBy) bool { return x.uid == y.uid && x.version == y.version })
}

type decodedNode struct {
	rv      string
	node    gpu.Node
	err     error
	read    uint64 // the last read that listed the node
	applied appliedNode
}

type decodedPod struct {
	// What a read of an unchanged pod touches comes first, together: rv,
	// read (the last read that listed the pod), holder (usage.Node's entry
	// in usageCache.held, so that recording the usage looks up no name:
	// hold), assigned and err.
	rv       string
	read     uint64
	holder   *nodeHeld
	assigned bool
	err      error
	// node is the pod's hami.io/vgpu-node, assigned whether it has one: a
	// pod without one is kept too, so it is not looked at again until it
	// changes.
	node  string
	usage gpu.PodUsage
}

type assumedPod struct {
	usage   gpu.PodUsage
	at      time.Time
	version string // "assumed-<n>", unique per assume
}

func (c *usageCache) init() {
	c.nodeByName = map[string]*decodedNode{}
	c.podByUID = map[types.UID]*decodedPod{}
	c.held = map[string]*nodeHeld{}
	c.assumed = map[types.UID]assumedPod{}
}

func (c *usageCache) assume(uid types.UID, u gpu.PodUsage, now time.Time) {
	c.seq++
	c.assumed[uid] = assumedPod{usage: u, at: now, version: "assumed-" + strconv.FormatUint(c.seq, 10)}
}

func (c *usageCache) forget(uid types.UID) { delete(c.assumed, uid) }

// nodes lists every Node and decodes those whose resourceVersion changed.
// The map returned is the cache's own, valid until the next read.
func (c *usageCache) nodes(ctx context.Context, r client.Reader, reg gpu.Registry) (map[string]*decodedNode, error) {
	var list corev1.NodeList
	if err := r.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("extender: listing nodes: %w", err)
	}
	c.read++
	listed := 0 // entries of nodeByName this read marked
	for i := range list.Items {
		n := &list.Items[i]
		d, ok := c.nodeByName[n.Name]
		if !ok || d.rv != n.ResourceVersion || n.ResourceVersion == "" {
			d = &decodedNode{rv: n.ResourceVersion}
			d.node, d.err = gpu.DecodeNode(n, reg)
			c.nodeByName[n.Name] = d
		}
		if d.read != c.read {
			d.read = c.read
			listed++
		}
	}
	if listed < len(c.nodeByName) { // some node is gone
		for name, d := range c.nodeByName {
			if d.read != c.read {
				delete(c.nodeByName, name)
			}
		}
	}
	return c.nodeByName, nil
}

// usage lists every pod and records, per node, what the pods HAMi assigned
// there hold (hami.io/vgpu-node), plus the assumed pods the cache does not
// show assigned yet (read them with heldOn). The pod self is left out: its
// earlier assignment is being replaced. A pod whose annotations do not
// decode makes its node's usage unknown: that node is refused, with the pod
// named, rather than fitted as if the pod held nothing.
func (c *usageCache) usage(ctx context.Context, r client.Reader, reg gpu.Registry, self types.UID, now time.Time) (map[string]string, error) {
	var list corev1.PodList
	if err := r.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("extender: listing pods: %w", err)
	}
	c.read++
	listed := 0 // entries of podByUID this read marked
	bad := map[string]string{}
	shown := make(map[types.UID]string, len(c.assumed)) // assumed pods the cache shows assigned, by node
	for i := range list.Items {
		p := &list.Items[i]
		if p.UID == self {
			continue
		}
		// A pod unchanged since the last call is not read again, not even
		// its annotations: with 10,000 pods, looking each one's up was
		// most of the read.
		d, ok := c.podByUID[p.UID]
		if !ok || d.rv != p.ResourceVersion || p.ResourceVersion == "" {
			d = &decodedPod{rv: p.ResourceVersion}
			if d.node, d.assigned = p.Annotations[gpu.AnnoAssignedNode]; d.assigned {
				d.usage, d.err = gpu.DecodePodUsage(p, reg)
			}
			c.podByUID[p.UID] = d
		}
		if d.read != c.read {
			d.read = c.read
			listed++
		}
		if !d.assigned {
			continue
		}
		node := d.node
		if _, ok := c.assumed[p.UID]; ok {
			shown[p.UID] = node
		}
		if d.err != nil {
			bad[node] = fmt.Sprintf("pod %s/%s holds devices that cannot be read: %v", p.Namespace, p.Name, d.err)
			continue
		}
		if d.usage.Node != "" {
			d.holder = c.hold(d.holder, d.usage.Node, heldBy{uid: p.UID, version: p.ResourceVersion, usage: &d.usage})
		}
	}
	if listed < len(c.podByUID) { // some pod is gone
		for uid, d := range c.podByUID {
			if d.read != c.read {
				delete(c.podByUID, uid)
			}
		}
	}
	for uid, a := range c.assumed {
		switch node, ok := shown[uid]; {
		case ok && node == a.usage.Node:
			delete(c.assumed, uid) // the cache has caught up
		case uid == self:
		case !ok && now.Sub(a.at) > AssumeTimeout:
			delete(c.assumed, uid)
		default:
			c.hold(nil, a.usage.Node, heldBy{uid: uid, version: a.version, usage: &a.usage})
		}
	}
	for name, h := range c.held {
		if h.read != c.read {
			h.dropped = true
			delete(c.held, name)
			continue
		}
		slices.SortFunc(h.held, func(a, b heldBy) int { return strings.Compare(string(a.uid), string(b.uid)) })
	}
	return bad, nil
}

// hold records u as a usage of node's devices in this read, in h, node's
// entry, when the caller has it (looked up by name when h is nil or
// dropped), and returns the entry.
func (c *usageCache) hold(h *nodeHeld, node string, u heldBy) *nodeHeld {
	if h == nil || h.dropped {
		h = c.held[node]
	}
	if h == nil {
		h = &nodeHeld{}
		c.held[node] = h
	}
	if h.read != c.read {
		h.read, h.held = c.read, h.held[:0]
	}
	h.held = append(h.held, u)
	return h
}

// heldOn is what the last usage read found held on node's devices, sorted
// by pod UID; valid until the next read.
func (c *usageCache) heldOn(node string) []heldBy {
	if h := c.held[node]; h != nil && h.read == c.read {
		return h.held
	}
	return nil
}

// withUsage returns d's devices with held's usage added, reusing the
// last result while d and its usages are the same.
func (c *usageCache) withUsage(d *decodedNode, held []heldBy) ([]gpu.Device, error) {
	if a := d.applied; a.ok && d.rv != "" && sameHolders(a.held, held) {
		return a.devices, a.err
	}
	usages := make([]gpu.PodUsage, len(held))
	for i, h := range held {
		usages[i] = *h.usage
	}
	out, err := gpu.AddPodUsage(d.node.Devices, usages...)
	// held's slice is reused by the next read: the entry keeps a copy.
	d.applied = appliedNode{held: slices.Clone(held), devices: out, err: err, ok: true}
	return out, err
}
