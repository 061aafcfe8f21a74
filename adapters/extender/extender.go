package extender

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	configv1 "k8s.io/kube-scheduler/config/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/plancore/plancore"
	"github.com/plancore/plancore/gpu"
)

// Scheduler answers kube-scheduler's extender calls for pods that ask for
// devices HAMi shares. Build it with New.
type Scheduler struct {
	client   client.Client
	reader   client.Reader
	registry gpu.Registry
	options  gpu.Options
	binder   *gpu.Binder
	clock    clock.PassiveClock
	seed     uint64

	limits Limits
	// filterBody bounds a Filter or Prioritize body: the form the
	// configured kube-scheduler sends, or either.
	filterBody int64

	// decodes holds a token per request being decoded
	// (Limits.MaxConcurrentDecodes); decodeWaiters counts those waiting.
	decodes       chan struct{}
	decodeWaiters atomic.Int64
	// nodeCount is the number of nodes in the node cache when last listed:
	// no call may name more candidates.
	nodeCount atomic.Int64

	// mu serializes Filter: a Filter reads the usage, chooses a node and
	// records the pod's usage as assumed before the next Filter reads. Only
	// the decision runs under it, over a request already decoded and
	// checked against the Limits: never work that grows with the request.
	mu    sync.Mutex
	cache usageCache

	// templateMu guards templateCache, the template nodes of the last
	// Filter or Prioritize given Node objects, decoded (decodeTemplate),
	// and sent, the Node objects of the last body that sent them, indexed
	// to be found by their bytes (sentNodes).
	templateMu    sync.Mutex
	templateCache map[string]decodedTemplate
	sent          sentIndex
}

// Config is what New needs.
type Config struct {
	// Client patches pods (Filter's annotations). Required.
	Client client.Client
	// Reader lists Nodes and Pods, normally the manager's cache (Client when
	// nil). Lists are made with client.UnsafeDisableDeepCopy: the extender
	// never writes to what it reads.
	Reader client.Reader
	// Registry is the device table (gpu.DefaultRegistry() when zero).
	Registry gpu.Registry
	// Options tunes the fit and the Bind flow (gpu.HAMi() is HAMi's).
	Options gpu.Options
	// Bind runs the Bind flow: a gpu.Binder over a kube.BindExecutor with the
	// node lock on Node annotations. Its executor's ForgetAssumed should call
	// Scheduler.Forget so a failed Bind frees the devices Filter assumed.
	// Required.
	Bind *gpu.Binder
	// Clock reads the time of each call (the real clock when nil).
	Clock clock.PassiveClock
	// Seed feeds the Bind retry jitter.
	Seed uint64
	// Limits bounds what one request may cost (the defaults when zero).
	Limits Limits
	// KubeScheduler is this extender's entry in kube-scheduler's
	// KubeSchedulerConfiguration (its extenders list), the same settings
	// kube-scheduler reads. When set, New refuses an entry the extender
	// cannot serve, naming the setting to change: verbs other than the
	// paths Handler serves, a preemptVerb, a bindVerb without the filterVerb
	// or with nodeCacheCapable false (Filter then sees template nodes and
	// assigns no devices), and managedResources that keep device pods from
	// the extender or every node from them. Nil skips the check. Either
	// way, each request is served in the form it comes in: NodeNames
	// (nodeCacheCapable true) or whole Nodes (false). A Filter or
	// Prioritize body is bounded for the form the entry names: node names
	// (about 4.2 MiB by default) when it says nodeCacheCapable true or is
	// nil, Node objects (312 MiB by default) only when it says false, so a
	// kube-scheduler sending Node objects of a large cluster needs the entry.
	KubeScheduler *configv1.Extender
}

// ErrInvalidConfig is returned by New for a configuration it cannot run.
var ErrInvalidConfig = errors.New("extender: invalid config")

// New returns a Scheduler, or an error wrapping ErrInvalidConfig naming every
// missing part.
func New(c Config) (*Scheduler, error) {
	var errs []error
	if c.Client == nil {
		errs = append(errs, errors.New("client is required"))
	}
	if c.Bind == nil || c.Bind.Exec == nil || c.Bind.Waiter == nil {
		errs = append(errs, errors.New("bind needs a gpu.Binder with Exec and Waiter"))
	}
	if err := c.Options.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Limits.Validate(); err != nil {
		errs = append(errs, err)
	}
	reg := c.Registry
	if len(reg.Types()) == 0 {
		reg = gpu.DefaultRegistry()
	}
	if err := plancore.Invalid(ErrInvalidConfig, checkKubeScheduler(c.KubeScheduler, reg)); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	s := &Scheduler{
		client: c.Client, reader: c.Reader, registry: c.Registry, options: c.Options,
		binder: c.Bind, clock: c.Clock, seed: c.Seed, limits: c.Limits.withDefaults(),
		filterBody: c.Limits.filterBodyBytes(c.KubeScheduler),
	}
	s.decodes = make(chan struct{}, s.limits.MaxConcurrentDecodes)
	if s.reader == nil {
		s.reader = c.Client
	}
	if len(s.registry.Types()) == 0 {
		s.registry = gpu.DefaultRegistry()
	}
	if s.clock == nil {
		s.clock = clock.RealClock{}
	}
	s.cache.init()
	return s, nil
}

// call is a Filter or Prioritize call's arguments: the pod and its
// candidates, by name (NodeNames, kube-scheduler configured
// nodeCacheCapable true) or as Node objects sent whole (Nodes, false).
// Nodes come decoded from the HTTP body (sent) or as the objects a caller
// of Filter or Prioritize passed (objects, decoded once the call is
// checked).
type call struct {
	pod     *corev1.Pod
	names   *[]string
	whole   bool
	sent    []*sentNode
	objects []corev1.Node
}

func argsCall(args *extenderv1.ExtenderArgs) call {
	c := call{pod: args.Pod, names: args.NodeNames}
	if args.Nodes != nil {
		c.whole, c.objects = true, args.Nodes.Items
	}
	return c
}

// count is how many candidates the call names.
func (c *call) count() int {
	switch {
	case c.names != nil:
		return len(*c.names)
	case c.sent != nil:
		return len(c.sent)
	}
	return len(c.objects)
}

// candidates are the call's node names: NodeNames, else the Nodes' names.
func (c *call) candidates() []string {
	if c.names != nil {
		return *c.names
	}
	names := make([]string, 0, c.count())
	for _, n := range c.sent {
		names = append(names, n.name)
	}
	for i := range c.objects {
		names = append(names, c.objects[i].Name)
	}
	return names
}

// wholeNodes are the Nodes sent, decoded.
func (s *Scheduler) wholeNodes(c *call) []*sentNode {
	if c.sent != nil {
		return c.sent
	}
	return s.sentObjects(c.objects)
}

// unseenNodes is how many more candidates than its node cache holds a call
// may name: kube-scheduler's informer can show a new node before this
// extender's cache does, and such a node is answered "not found" while the
// others are fitted, rather than failing the whole call.
const unseenNodes = 100

// checkArgs refuses, before any lock is taken, a call naming more
// candidates than Limits.MaxNodes or, in NodeNames, than the cluster has
// nodes (the node cache's count, listed again when a call names more, plus
// unseenNodes), a call sending both NodeNames and Nodes, and a pod with
// more annotations than the API server stores (256 KiB in all), so that
// what runs under the scheduler's mutex is bounded by the cluster, not by
// the request. Nodes sent whole are never fitted under the mutex: they are
// bounded by Limits alone.
func (s *Scheduler) checkArgs(ctx context.Context, c *call) error {
	if err := apivalidation.ValidateAnnotationsSize(c.pod.Annotations); err != nil {
		return fmt.Errorf("pod %s/%s: %w", c.pod.Namespace, c.pod.Name, err)
	}
	if c.names != nil && c.whole {
		return errors.New("both NodeNames and Nodes are set: kube-scheduler sends NodeNames when nodeCacheCapable is true, Nodes when it is false, never both")
	}
	n := c.count()
	if n > s.limits.MaxNodes {
		return fmt.Errorf("%d candidate nodes, more than the cluster may have (Limits.MaxNodes %d)", n, s.limits.MaxNodes)
	}
	if c.whole || int64(n) <= s.nodeCount.Load()+unseenNodes {
		return nil
	}
	var list corev1.NodeList
	if err := s.reader.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	s.nodeCount.Store(int64(len(list.Items)))
	if n > len(list.Items)+unseenNodes {
		return fmt.Errorf("%d candidate nodes, more than the %d nodes in the scheduler's cache", n, len(list.Items))
	}
	return nil
}

// passThrough answers a pod that asks for no device: every candidate passes,
// in the form the scheduler sent them.
func passThrough(c *call) (extenderv1.ExtenderFilterResult, []int) {
	if !c.whole {
		return extenderv1.ExtenderFilterResult{NodeNames: c.names}, nil
	}
	all := make([]int, c.count())
	for i := range all {
		all[i] = i
	}
	return extenderv1.ExtenderFilterResult{}, all
}

// Filter is HAMi's Filter on plancore's fit. Given NodeNames (kube-scheduler
// configured nodeCacheCapable true) it reads the candidates' devices from
// the node cache and what every pod already holds, fits the pod, writes
// HAMi's annotations (hami.io/vgpu-node, hami.io/vgpu-time, each vendor's
// devices-to-allocate) on the pod and returns the one chosen node in
// NodeNames; the chosen devices count as used by the next Filter at once,
// before the cache shows the pod's new annotations. Given whole Nodes
// (nodeCacheCapable false, cluster-autoscaler) it fits the pod to those
// objects as template nodes, with every device free, writes nothing, and
// returns the chosen object in Nodes. Either way every node that does not
// fit is in FailedNodes with HAMi's reason, and a pod that asks for no
// device passes unchanged.
func (s *Scheduler) Filter(ctx context.Context, args extenderv1.ExtenderArgs) extenderv1.ExtenderFilterResult {
	res, chosen := s.filter(ctx, argsCall(&args))
	switch {
	case chosen == nil:
	case len(chosen) == len(args.Nodes.Items): // every node, in order
		res.Nodes = args.Nodes
	default:
		res.Nodes = &corev1.NodeList{Items: make([]corev1.Node, 0, len(chosen))}
		for _, i := range chosen {
			res.Nodes.Items = append(res.Nodes.Items, args.Nodes.Items[i])
		}
	}
	return res
}

// filter is Filter over a call. When Nodes were sent whole, the answer's
// Nodes are the objects at the indexes chosen (not nil, maybe empty), and
// res.Nodes is left for the caller to fill.
func (s *Scheduler) filter(ctx context.Context, c call) (res extenderv1.ExtenderFilterResult, chosen []int) {
	if c.pod == nil {
		return extenderv1.ExtenderFilterResult{Error: "extender filter: no pod in the arguments"}, nil
	}
	if err := s.checkArgs(ctx, &c); err != nil {
		return extenderv1.ExtenderFilterResult{Error: "extender filter: " + err.Error()}, nil
	}
	req, err := gpu.FitRequestFromPod(c.pod, s.registry)
	if err != nil {
		return extenderv1.ExtenderFilterResult{Error: err.Error()}, nil
	}
	if len(req.Requests) == 0 {
		return passThrough(&c)
	}
	if c.whole {
		return s.filterTemplates(s.wholeNodes(&c), req)
	}
	return s.filterNames(ctx, c.pod, *c.names, req), nil
}

// filterNames is Filter over NodeNames: the usage read, the decision and
// the assignment, under the scheduler's mutex.
func (s *Scheduler) filterNames(ctx context.Context, pod *corev1.Pod, names []string, req gpu.FitRequest) extenderv1.ExtenderFilterResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	nodes, failed, err := s.nodesWithUsage(ctx, names, pod.UID, now)
	if err != nil {
		return extenderv1.ExtenderFilterResult{Error: err.Error()}
	}
	plan, err := gpu.Decide(gpu.Input{Nodes: nodes, Request: req}, s.options)
	if err != nil {
		return extenderv1.ExtenderFilterResult{Error: err.Error()}
	}
	unreadable := map[string][]gpu.UnreadableVendor{}
	for _, n := range nodes {
		unreadable[n.Name] = n.Unreadable
	}
	for _, nf := range plan.Nodes {
		if !nf.Fits {
			failed[nf.Node] = nf.Reason.Message
			// A vendor the node's annotations did not let DecodeNode read
			// may be why: name it beside the fit's reason.
			for _, u := range unreadable[nf.Node] {
				failed[nf.Node] += "; " + u.Reason.Message
			}
		}
	}
	res := extenderv1.ExtenderFilterResult{NodeNames: &[]string{}, FailedNodes: failed}
	if plan.Node == "" {
		return res
	}
	chosen := nodes[slices.IndexFunc(nodes, func(n gpu.Node) bool { return n.Name == plan.Node })]
	if err := s.assign(ctx, pod, chosen, plan.Containers, now); err != nil {
		return extenderv1.ExtenderFilterResult{Error: err.Error()}
	}
	res.NodeNames = &[]string{plan.Node}
	return res
}

// assign writes Filter's annotations on the pod and records its usage as
// assumed.
func (s *Scheduler) assign(ctx context.Context, pod *corev1.Pod, node gpu.Node, containers []gpu.ContainerAllocation, now time.Time) error {
	annos, err := gpu.FilterAnnotations(gpu.FilterChoice{Pod: pod, Node: node, Containers: containers, Now: now, Registry: s.registry})
	if err != nil {
		return err
	}
	// The patch holds the annotations only, built from them rather than by
	// comparing copies of the pod: this runs under the scheduler's mutex,
	// and the pod is as large as the request that carried it.
	data, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annos}})
	if err != nil {
		return fmt.Errorf("extender filter: %w", err)
	}
	target := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}}
	if err := s.client.Patch(ctx, target, client.RawPatch(types.MergePatchType, data)); err != nil {
		return fmt.Errorf("extender filter: writing %s/%s's annotations: %w", pod.Namespace, pod.Name, err)
	}
	// The pod as the cache will show it, for its usage: only its
	// annotations, phase and init containers are read.
	updated := *pod
	updated.Annotations = maps.Clone(pod.Annotations)
	if updated.Annotations == nil {
		updated.Annotations = map[string]string{}
	}
	maps.Copy(updated.Annotations, annos)
	usage, err := gpu.DecodePodUsage(&updated, s.registry)
	if err != nil {
		return err
	}
	s.cache.assume(pod.UID, usage, now)
	return nil
}

// Prioritize scores each candidate 0–10 by the fit's node score, in the
// direction of the pod's node policy (binpack prefers the fullest node,
// spread the emptiest); nodes that do not fit, and every node for a pod that
// asks for no device, score 0. Nodes sent whole are scored as Filter fits
// them: template nodes with every device free.
func (s *Scheduler) Prioritize(ctx context.Context, args extenderv1.ExtenderArgs) (extenderv1.HostPriorityList, error) {
	return s.prioritize(ctx, argsCall(&args))
}

// prioritize is Prioritize over a call.
func (s *Scheduler) prioritize(ctx context.Context, c call) (extenderv1.HostPriorityList, error) {
	if c.pod != nil {
		if err := s.checkArgs(ctx, &c); err != nil {
			return nil, fmt.Errorf("extender prioritize: %w", err)
		}
	}
	names := c.candidates()
	out := make(extenderv1.HostPriorityList, 0, len(names))
	for _, n := range names {
		out = append(out, extenderv1.HostPriority{Host: n})
	}
	if c.pod == nil {
		return out, errors.New("extender prioritize: no pod in the arguments")
	}
	req, err := gpu.FitRequestFromPod(c.pod, s.registry)
	if err != nil || len(req.Requests) == 0 {
		return out, err
	}
	var nodes []gpu.Node
	if c.whole {
		nodes, _, err = templates(s.wholeNodes(&c))
	} else {
		s.mu.Lock()
		nodes, _, err = s.nodesWithUsage(ctx, names, c.pod.UID, s.clock.Now())
		s.mu.Unlock()
	}
	if err != nil {
		return out, err
	}
	// Prioritize binds nothing: the plan needs no Bind options.
	plan, err := gpu.Fit(gpu.Input{Nodes: nodes, Request: req})
	if err != nil {
		return out, err
	}
	scores := priorities(plan.Nodes, req.NodePolicy)
	for i := range out {
		out[i].Score = scores[out[i].Host]
	}
	return out, nil
}

// priorities maps fitting nodes' scores onto [MinExtenderPriority,
// MaxExtenderPriority], the preferred end at the top.
func priorities(fits []gpu.NodeFit, policy gpu.Policy) map[string]int64 {
	var scores []float64
	for _, f := range fits {
		if f.Fits {
			scores = append(scores, f.Score)
		}
	}
	out := map[string]int64{}
	if len(scores) == 0 {
		return out
	}
	lo, hi := slices.Min(scores), slices.Max(scores)
	for _, f := range fits {
		if !f.Fits {
			continue
		}
		if hi == lo {
			out[f.Node] = extenderv1.MaxExtenderPriority
			continue
		}
		frac := (f.Score - lo) / (hi - lo)
		if policy == gpu.Spread {
			frac = 1 - frac
		}
		out[f.Node] = int64(frac*float64(extenderv1.MaxExtenderPriority) + 0.5)
	}
	return out
}

// Bind runs HAMi's Bind flow (node lock, bind-phase allocating, the binding,
// rollback and bind-phase failed on failure) and answers with its error.
func (s *Scheduler) Bind(ctx context.Context, args extenderv1.ExtenderBindingArgs) extenderv1.ExtenderBindingResult {
	in := gpu.BindInput{
		Pod: gpu.PodRef{Namespace: args.PodNamespace, Name: args.PodName, UID: string(args.PodUID)},
		// No Now: the Bind flow takes its time from the binder's Waiter.
		Node: args.Node, Registry: s.registry, Options: s.options, Seed: s.seed,
	}
	out, err := s.binder.Bind(ctx, in)
	if out.Err == nil && err != nil {
		return extenderv1.ExtenderBindingResult{Error: err.Error()}
	}
	return extenderv1.ExtenderBindingResult{Error: out.ExtenderError()}
}

// Forget drops the usage Filter assumed for a pod; wire it as the
// kube.BindExecutor's Forget so a failed Bind frees those devices.
func (s *Scheduler) Forget(_ context.Context, pod gpu.PodRef) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cache.forget(types.UID(pod.UID))
	return nil
}

// nodesWithUsage reads the named nodes' devices and adds what every pod
// holds, the pod being scheduled excepted (its earlier assignment is
// replaced). A node that is missing or whose annotations or pods do not
// decode is returned in failed with the reason, never fitted.
func (s *Scheduler) nodesWithUsage(ctx context.Context, names []string, self types.UID, now time.Time) ([]gpu.Node, map[string]string, error) {
	byName, err := s.cache.nodes(ctx, s.reader, s.registry)
	if err != nil {
		return nil, nil, err
	}
	s.nodeCount.Store(int64(len(byName)))
	bad, err := s.cache.usage(ctx, s.reader, s.registry, self, now)
	if err != nil {
		return nil, nil, err
	}
	failed := map[string]string{}
	nodes := make([]gpu.Node, 0, len(names))
	for _, name := range names {
		d, ok := byName[name]
		switch {
		case !ok:
			failed[name] = "node not found in the scheduler's cache"
			continue
		case d.err != nil:
			failed[name] = d.err.Error()
			continue
		case bad[name] != "":
			failed[name] = bad[name]
			continue
		}
		// Usage first, then the stale vendors go: a pod may still hold a
		// device of a vendor whose plugin stopped answering, and that must
		// not make the node's usage unreadable (HAMi skips such devices).
		n := d.node
		devices, err := s.cache.withUsage(d, withoutUnreadable(s.cache.heldOn(name), n.Unreadable))
		if err != nil {
			failed[name] = err.Error()
			continue
		}
		n.Devices = devices
		n = gpu.DropStaleVendors(n, now)
		nodes = append(nodes, n)
	}
	slices.SortFunc(nodes, func(a, b gpu.Node) int { return cmp.Compare(a.Name, b.Name) })
	return nodes, failed, nil
}

// withoutUnreadable returns held without the allocations of the vendors
// the node's annotations did not let DecodeNode read: their devices are not
// offered, so what pods hold on them cannot make a device that was read
// look used or free, and must not make the node's other vendors unusable.
func withoutUnreadable(held []heldBy, unreadable []gpu.UnreadableVendor) []heldBy {
	if len(unreadable) == 0 {
		return held
	}
	skip := map[string]bool{}
	for _, u := range unreadable {
		skip[u.Type] = true
	}
	keep := func(a gpu.Allocation) bool { return !skip[a.Type] }
	out := make([]heldBy, len(held))
	for i, h := range held {
		u := *h.usage
		u.Allocations = slices.DeleteFunc(slices.Clone(u.Allocations), func(a gpu.Allocation) bool { return !keep(a) })
		u.MIG = slices.DeleteFunc(slices.Clone(u.MIG), func(a gpu.Allocation) bool { return !keep(a) })
		out[i] = heldBy{uid: h.uid, version: h.version, usage: &u}
	}
	return out
}
