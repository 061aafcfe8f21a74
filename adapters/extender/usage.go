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
// and the pods Filter assigned that the cache may not show yet.
type usageCache struct {
	nodeByName map[string]decodedNode
	podByUID   map[types.UID]*decodedPod
	assumed    map[types.UID]assumedPod
	// applied keeps each node's devices with its pods' usage added, reused
	// while the node and the usages it was built from are the same (compared
	// by value: node resourceVersion and each usage's identity).
	applied map[string]appliedNode
	seq     uint64 // numbers assumed usages, for their identity
}

// heldBy is one usage of a node's devices: a pod the cache shows (its UID
// and resourceVersion) or an assumed one (its UID and assume number).
type heldBy struct {
	uid     types.UID
	version string
	usage   *gpu.PodUsage
}

type appliedNode struct {
	rv      string
	held    []heldBy // sorted by uid; usage pointers not compared
	devices []gpu.Device
	err     error
}

// sameHolders reports whether two sorted usage lists name the same usages.
func sameHolders(a, b []heldBy) bool {
	return slices.EqualFunc(a, b, func(x, y heldBy) bool { return x.uid == y.uid && x.version == y.version })
}

type decodedNode struct {
	rv   string
	node gpu.Node
	err  error
}

type decodedPod struct {
	rv string
	// node is the pod's hami.io/vgpu-node, assigned whether it has one: a
	// pod without one is kept too, so it is not looked at again until it
	// changes.
	node     string
	assigned bool
	usage    gpu.PodUsage
	err      error
}

type assumedPod struct {
	usage   gpu.PodUsage
	at      time.Time
	version string // "assumed-<n>", unique per assume
}

func (c *usageCache) init() {
	c.nodeByName = map[string]decodedNode{}
	c.podByUID = map[types.UID]*decodedPod{}
	c.assumed = map[types.UID]assumedPod{}
	c.applied = map[string]appliedNode{}
}

func (c *usageCache) assume(uid types.UID, u gpu.PodUsage, now time.Time) {
	c.seq++
	c.assumed[uid] = assumedPod{usage: u, at: now, version: "assumed-" + strconv.FormatUint(c.seq, 10)}
}

func (c *usageCache) forget(uid types.UID) { delete(c.assumed, uid) }

// nodes lists every Node and decodes those whose resourceVersion changed.
func (c *usageCache) nodes(ctx context.Context, r client.Reader, reg gpu.Registry) (map[string]decodedNode, error) {
	var list corev1.NodeList
	if err := r.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("extender: listing nodes: %w", err)
	}
	seen := make(map[string]decodedNode, len(list.Items))
	for i := range list.Items {
		n := &list.Items[i]
		d, ok := c.nodeByName[n.Name]
		if !ok || d.rv != n.ResourceVersion || n.ResourceVersion == "" {
			d = decodedNode{rv: n.ResourceVersion}
			d.node, d.err = gpu.DecodeNode(n, reg)
		}
		seen[n.Name] = d
	}
	c.nodeByName = seen
	return seen, nil
}

// usage lists every pod and returns, per node, what the pods HAMi assigned
// there hold (hami.io/vgpu-node), plus the assumed pods the cache does not
// show assigned yet. The pod self is left out: its earlier assignment is
// being replaced. A pod whose annotations do not decode makes its node's
// usage unknown: that node is refused, with the pod named, rather than
// fitted as if the pod held nothing.
func (c *usageCache) usage(ctx context.Context, r client.Reader, reg gpu.Registry, self types.UID, now time.Time) (map[string][]heldBy, map[string]string, error) {
	var list corev1.PodList
	if err := r.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, fmt.Errorf("extender: listing pods: %w", err)
	}
	// Sized as the last call's: with 10,000 pods, growing these maps
	// was a fifth of the usage read.
	byNode := make(map[string][]heldBy, len(c.applied))
	bad := map[string]string{}
	seen := make(map[types.UID]*decodedPod, len(c.podByUID))
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
		}
		seen[p.UID] = d
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
			byNode[d.usage.Node] = append(byNode[d.usage.Node], heldBy{uid: p.UID, version: p.ResourceVersion, usage: &d.usage})
		}
	}
	c.podByUID = seen
	for uid, a := range c.assumed {
		switch node, ok := shown[uid]; {
		case ok && node == a.usage.Node:
			delete(c.assumed, uid) // the cache has caught up
		case uid == self:
		case !ok && now.Sub(a.at) > AssumeTimeout:
			delete(c.assumed, uid)
		default:
			byNode[a.usage.Node] = append(byNode[a.usage.Node], heldBy{uid: uid, version: a.version, usage: &a.usage})
		}
	}
	for _, held := range byNode {
		slices.SortFunc(held, func(a, b heldBy) int { return strings.Compare(string(a.uid), string(b.uid)) })
	}
	return byNode, bad, nil
}

// withUsage returns node's devices with held's usage added, reusing the
// last result while the node and its usages are the same.
func (c *usageCache) withUsage(name, rv string, devices []gpu.Device, held []heldBy) ([]gpu.Device, error) {
	if a, ok := c.applied[name]; ok && a.rv == rv && rv != "" && sameHolders(a.held, held) {
		return a.devices, a.err
	}
	usages := make([]gpu.PodUsage, len(held))
	for i, h := range held {
		usages[i] = *h.usage
	}
	out, err := gpu.AddPodUsage(devices, usages...)
	c.applied[name] = appliedNode{rv: rv, held: held, devices: out, err: err}
	return out, err
}
