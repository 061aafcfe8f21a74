package fake

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Kinds of the pod store's calls, for Faults and the call log.
const (
	KindPodCreate    = "pod.create"
	KindPodDelete    = "pod.delete"
	KindPodDeleteAll = "pod.deleteall"
	KindPodGet       = "pod.get"
	KindPodList      = "pod.list"
)

// podsResource names pods in API errors.
var podsResource = schema.GroupResource{Resource: "pods"}

// PodClient is the pod API an executor writes through: the in-memory
// PodStore here, a controller-runtime client in adapters/kube. Its contract
// (CheckPodClient) is the API server's: a create of an existing name reports
// AlreadyExists and changes nothing, a create with GenerateName gets a fresh
// name with that prefix, a get or delete of a missing pod reports NotFound, a
// delete whose UID precondition names another pod reports Conflict, and a
// delete of a pod that is already terminating succeeds.
type PodClient interface {
	// CreatePod creates pod and returns it as stored (name, UID and
	// resourceVersion filled in).
	CreatePod(ctx context.Context, pod corev1.Pod) (corev1.Pod, error)
	// DeletePod deletes the named pod; it may stay terminating for a while.
	DeletePod(ctx context.Context, namespace, name string, opts DeleteOptions) error
	// GetPod reads the named pod from the API (not from a cache).
	GetPod(ctx context.Context, namespace, name string) (corev1.Pod, error)
	// ListPods reads the namespace's pods matching selector (nil: all) from the
	// API, sorted by name.
	ListPods(ctx context.Context, namespace string, selector labels.Selector) ([]corev1.Pod, error)
}

// DeleteOptions are the preconditions and settings of a delete.
type DeleteOptions struct {
	// UID, when set, makes the delete fail with Conflict unless the pod has
	// that UID, so a recreated pod of the same name is never deleted by mistake.
	UID types.UID
}

// PodStoreOptions configures a PodStore.
type PodStoreOptions struct {
	// Lag is the informer's maximum delay: each change reaches the informer
	// after a seeded delay in [0, Lag], never overtaking an earlier change of the
	// same pod. So at time t the informer shows each pod as it was at some time in
	// [t-Lag, t]. Zero makes the informer current at every read.
	Lag time.Duration
	// DropRate is the probability that a change still waiting for delivery is
	// superseded by the next change of the same pod, so the informer never shows
	// the intermediate state (a pod created and deleted within the lag may never
	// appear). Delivery times stay bounded by Lag.
	DropRate float64
	// GraceMin and GraceMax bound the seeded time a deleted pod stays
	// terminating before it vanishes. Both zero: a deleted pod vanishes at once
	// (as an unscheduled pod does). A pod with finalizers stays terminating until
	// RemoveFinalizers, however long the grace.
	GraceMin, GraceMax time.Duration
}

// PodStore is an in-memory pod API server with a lagging informer. Its writes
// go through World.Do, so they can be failed, delayed or lose their response,
// and every one is in the World's call log. Pod names from GenerateName, UIDs
// and resourceVersions come from counters and the World's seed, so a run is
// reproducible.
type PodStore struct {
	w    *World
	opts PodStoreOptions

	mu      sync.Mutex
	rng     *rand.Rand
	pods    map[objKey]*corev1.Pod
	vanish  map[objKey]time.Time // when a terminating pod without finalizers goes
	nameSeq uint64
	nameMul uint64
	nameAdd uint64
	uidSeq  uint64
	rv      uint64
	inf     *Informer
}

type objKey struct{ namespace, name string }

func (k objKey) String() string { return k.namespace + "/" + k.name }

// NewPodStore returns an empty store on w. Its informer's lag, event drops and
// grace periods are drawn from a generator seeded from w's.
func NewPodStore(w *World, o PodStoreOptions) *PodStore {
	seed := uint64(w.Faults.IntN(1 << 62))
	s := &PodStore{
		w:      w,
		opts:   o,
		rng:    rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d)),
		pods:   map[objKey]*corev1.Pod{},
		vanish: map[objKey]time.Time{},
	}
	// An affine map n -> (mul*n + add) mod 27^5 with mul prime to 27 is a
	// permutation, so generated suffixes look random yet never repeat before
	// 27^5 names.
	s.nameMul = uint64(s.rng.IntN(nameSpace/3))*3 + 1
	s.nameAdd = uint64(s.rng.IntN(nameSpace))
	s.inf = &Informer{store: s, cache: map[objKey]*corev1.Pod{}, last: map[objKey]time.Time{}}
	return s
}

// Informer returns the store's informer: its cached, lagging view of the pods.
func (s *PodStore) Informer() *Informer { return s.inf }

// World returns the world the store runs in.
func (s *PodStore) World() *World { return s.w }

// nameAlphabet is the alphabet of Kubernetes' generated name suffixes
// (k8s.io/apimachinery/pkg/util/rand.String).
const nameAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// nameSpace is the number of distinct 5-character suffixes.
const nameSpace = 27 * 27 * 27 * 27 * 27

// maxGeneratedPrefix is the longest GenerateName prefix kept, as in the API
// server (63 characters minus the 5-character suffix).
const maxGeneratedPrefix = 58

func (s *PodStore) generateName(prefix string) string {
	if len(prefix) > maxGeneratedPrefix {
		prefix = prefix[:maxGeneratedPrefix]
	}
	x := (s.nameMul*s.nameSeq + s.nameAdd) % nameSpace
	s.nameSeq++
	var suf [5]byte
	for i := range suf {
		suf[i] = nameAlphabet[x%27]
		x /= 27
	}
	return prefix + string(suf[:])
}

// tick applies what happened by now: terminating pods whose grace has passed
// vanish (at the time they were due). It must hold s.mu.
func (s *PodStore) tick() {
	now := s.w.Clock.Now()
	due := make([]objKey, 0)
	for k, at := range s.vanish {
		if !at.After(now) {
			due = append(due, k)
		}
	}
	slices.SortFunc(due, func(a, b objKey) int {
		if c := s.vanish[a].Compare(s.vanish[b]); c != 0 {
			return c
		}
		return cmp.Compare(a.String(), b.String())
	})
	for _, k := range due {
		at := s.vanish[k]
		delete(s.vanish, k)
		if p, ok := s.pods[k]; ok && len(p.Finalizers) == 0 {
			delete(s.pods, k)
			s.emit(at, watchDeleted, p)
		}
	}
}

func (s *PodStore) nextRV() string {
	s.rv++
	return strconv.FormatUint(s.rv, 10)
}

// CreatePod implements PodClient.
func (s *PodStore) CreatePod(ctx context.Context, pod corev1.Pod) (corev1.Pod, error) {
	if err := ctx.Err(); err != nil {
		return corev1.Pod{}, err
	}
	target := pod.Namespace + "/" + pod.Name
	if pod.Name == "" {
		target = pod.Namespace + "/" + pod.GenerateName + "*"
	}
	var out corev1.Pod
	err := s.w.Do(KindPodCreate, target, func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.tick()
		if pod.Namespace == "" {
			return apierrors.NewBadRequest("the pod's namespace is empty")
		}
		p := pod.DeepCopy()
		if p.Name == "" {
			if p.GenerateName == "" {
				return apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "", nil)
			}
			for {
				p.Name = s.generateName(p.GenerateName)
				if _, taken := s.pods[objKey{p.Namespace, p.Name}]; !taken {
					break
				}
			}
		}
		k := objKey{p.Namespace, p.Name}
		if _, ok := s.pods[k]; ok {
			return apierrors.NewAlreadyExists(podsResource, p.Name)
		}
		s.uidSeq++
		p.UID = types.UID(fmt.Sprintf("pod-uid-%d", s.uidSeq))
		p.ResourceVersion = s.nextRV()
		p.CreationTimestamp = metav1.NewTime(s.w.Clock.Now())
		p.DeletionTimestamp = nil
		if p.Status.Phase == "" {
			p.Status.Phase = corev1.PodPending
		}
		s.pods[k] = p
		s.emit(s.w.Clock.Now(), watchAdded, p)
		out = *p.DeepCopy()
		return nil
	})
	if err != nil {
		return corev1.Pod{}, err
	}
	return out, nil
}

// DeletePod implements PodClient. The pod becomes terminating for a seeded
// grace period (and while it has finalizers), then vanishes.
func (s *PodStore) DeletePod(ctx context.Context, namespace, name string, opts DeleteOptions) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.w.Do(KindPodDelete, namespace+"/"+name, func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.tick()
		k := objKey{namespace, name}
		p, ok := s.pods[k]
		if !ok {
			return apierrors.NewNotFound(podsResource, name)
		}
		if opts.UID != "" && opts.UID != p.UID {
			return apierrors.NewConflict(podsResource, name, fmt.Errorf("precondition failed: UID in precondition: %s, UID in object meta: %s", opts.UID, p.UID))
		}
		s.markDeleted(k, p)
		return nil
	})
}

// markDeleted starts the deletion of p (a no-op if it is already
// terminating). It must hold s.mu.
func (s *PodStore) markDeleted(k objKey, p *corev1.Pod) {
	if p.DeletionTimestamp != nil {
		return
	}
	now := s.w.Clock.Now()
	grace := s.opts.GraceMin
	if s.opts.GraceMax > s.opts.GraceMin {
		grace += time.Duration(s.rng.Int64N(int64(s.opts.GraceMax-s.opts.GraceMin) + 1))
	}
	if grace <= 0 && len(p.Finalizers) == 0 {
		delete(s.pods, k)
		s.emit(now, watchDeleted, p)
		return
	}
	ts := metav1.NewTime(now.Add(grace))
	p.DeletionTimestamp = &ts
	p.ResourceVersion = s.nextRV()
	s.vanish[k] = now.Add(grace)
	s.emit(now, watchModified, p)
}

// DeleteAllOf deletes every pod of namespace matching selector (nil: all)
// that is not already terminating, as one call of kind pod.deleteall, and
// returns how many it deleted.
func (s *PodStore) DeleteAllOf(ctx context.Context, namespace string, selector labels.Selector) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	n := 0
	err := s.w.Do(KindPodDeleteAll, namespace+"/"+selectorString(selector), func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.tick()
		for _, p := range s.sortedLocked(namespace, selector) {
			if p.DeletionTimestamp == nil {
				s.markDeleted(objKey{p.Namespace, p.Name}, p)
				n++
			}
		}
		return nil
	})
	return n, err
}

func selectorString(sel labels.Selector) string {
	if sel == nil {
		return "*"
	}
	return sel.String()
}

// GetPod implements PodClient.
func (s *PodStore) GetPod(ctx context.Context, namespace, name string) (corev1.Pod, error) {
	if err := ctx.Err(); err != nil {
		return corev1.Pod{}, err
	}
	var out corev1.Pod
	err := s.w.Do(KindPodGet, namespace+"/"+name, func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.tick()
		p, ok := s.pods[objKey{namespace, name}]
		if !ok {
			return apierrors.NewNotFound(podsResource, name)
		}
		out = *p.DeepCopy()
		return nil
	})
	if err != nil {
		return corev1.Pod{}, err
	}
	return out, nil
}

// ListPods implements PodClient.
func (s *PodStore) ListPods(ctx context.Context, namespace string, selector labels.Selector) ([]corev1.Pod, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []corev1.Pod
	err := s.w.Do(KindPodList, namespace+"/"+selectorString(selector), func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.tick()
		out = copyPods(s.sortedLocked(namespace, selector))
		return nil
	})
	return out, err
}

// sortedLocked returns the stored pods of namespace ("" for all) matching
// selector, sorted by namespace and name. It must hold s.mu.
func (s *PodStore) sortedLocked(namespace string, selector labels.Selector) []*corev1.Pod {
	return sortedMatching(s.pods, namespace, selector)
}

func sortedMatching(m map[objKey]*corev1.Pod, namespace string, selector labels.Selector) []*corev1.Pod {
	var out []*corev1.Pod
	for k, p := range m {
		if namespace != "" && k.namespace != namespace {
			continue
		}
		if selector != nil && !selector.Matches(labels.Set(p.Labels)) {
			continue
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *corev1.Pod) int {
		if c := cmp.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out
}

func copyPods(ps []*corev1.Pod) []corev1.Pod {
	out := make([]corev1.Pod, len(ps))
	for i, p := range ps {
		p.DeepCopyInto(&out[i])
	}
	return out
}

// Pods returns the API's true state: every pod of namespace ("" for all),
// sorted, without going through World.Do. Tests use it to check invariants.
func (s *PodStore) Pods(namespace string) []corev1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tick()
	return copyPods(s.sortedLocked(namespace, nil))
}

// Mutate changes a stored pod as the rest of the cluster would (a kubelet
// setting the phase, a user adding a finalizer), outside World.Do. The change
// reaches the informer like any other. It reports NotFound for a missing pod.
// f must not change the pod's namespace, name or UID.
func (s *PodStore) Mutate(namespace, name string, f func(*corev1.Pod)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tick()
	k := objKey{namespace, name}
	p, ok := s.pods[k]
	if !ok {
		return apierrors.NewNotFound(podsResource, name)
	}
	f(p)
	p.Namespace, p.Name = k.namespace, k.name
	p.ResourceVersion = s.nextRV()
	s.emit(s.w.Clock.Now(), watchModified, p)
	if p.DeletionTimestamp != nil && len(p.Finalizers) == 0 {
		if _, ok := s.vanish[k]; !ok {
			s.vanish[k] = s.w.Clock.Now()
		}
		s.tick()
	}
	return nil
}

// SetPhase sets a stored pod's phase (a kubelet's report).
func (s *PodStore) SetPhase(namespace, name string, phase corev1.PodPhase) error {
	return s.Mutate(namespace, name, func(p *corev1.Pod) { p.Status.Phase = phase })
}

// RemoveFinalizers clears a pod's finalizers; a terminating pod whose grace
// has passed then vanishes.
func (s *PodStore) RemoveFinalizers(namespace, name string) error {
	return s.Mutate(namespace, name, func(p *corev1.Pod) { p.Finalizers = nil })
}
