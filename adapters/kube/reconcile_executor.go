package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/plancore/plancore/reconcile"
)

// Event reasons PodExecutor emits on the cluster object, KubeRay's where it
// has one.
const (
	EventCreatedHeadPod          = "CreatedHeadPod"
	EventCreatedWorkerPod        = "CreatedWorkerPod"
	EventFailedToCreateHeadPod   = "FailedToCreateHeadPod"
	EventFailedToCreateWorkerPod = "FailedToCreateWorkerPod"
	EventDeletedPod              = "DeletedPod"
	EventFailedToDeletePod       = "FailedToDeletePod"
	EventDeletedPods             = "DeletedPods"
	EventFailedToDeletePods      = "FailedToDeletePods"
	EventPatchedPod              = "PatchedPodAnnotations"
)

var podsResource = corev1.Resource("pods")

// PodExecutor is the reconcile.Executor of a Kubernetes cluster: pods are
// created (with GenerateName when the plan leaves the name to the server)
// under a controller owner reference to the cluster object, deleted with the
// plan's UID precondition, deleted in bulk by label selector, and annotated
// under UID and resourceVersion preconditions. Errors are the API server's
// status errors, which reconcile.Apply classifies (definite or ambiguous) to
// keep its expectations right; Apply, not the executor, records them.
//
// It is safe for concurrent use; ApplyConcurrently sends independent actions
// of a plan through it in parallel.
type PodExecutor struct {
	// Client writes pods (create, delete, deletecollection, patch).
	Client client.Client
	// Reader, when set, serves GetPod and ListPods (default Client).
	Reader client.Reader
	// Owner, when set, is the cluster object: every created pod gets a
	// controller owner reference to it (its apiVersion and kind from Scheme),
	// replacing the plan's. A plan whose pods name another controller UID is
	// refused, so pods are never created for the wrong incarnation.
	Owner client.Object
	// Scheme resolves Owner's kind; default Client.Scheme().
	Scheme *runtime.Scheme
	// Recorder, when set, receives an event on Owner (or on the plan's owner
	// reference) per call: created, deleted, failed.
	Recorder record.EventRecorder
}

var _ reconcile.Executor = (*PodExecutor)(nil)

func (e *PodExecutor) reader() client.Reader {
	if e.Reader != nil {
		return e.Reader
	}
	return e.Client
}

// ownerReference returns the controller reference to e.Owner.
func (e *PodExecutor) ownerReference() (metav1.OwnerReference, error) {
	scheme := e.Scheme
	if scheme == nil {
		scheme = e.Client.Scheme()
	}
	gvk, err := apiutil.GVKForObject(e.Owner, scheme)
	if err != nil {
		return metav1.OwnerReference{}, fmt.Errorf("owner %s/%s: %w", e.Owner.GetNamespace(), e.Owner.GetName(), err)
	}
	return *metav1.NewControllerRef(e.Owner, gvk), nil
}

// eventTarget is the object events are recorded on: Owner, else the pod's
// controller, else the pod itself.
func (e *PodExecutor) eventTarget(pod *corev1.Pod) runtime.Object {
	if e.Owner != nil {
		return e.Owner
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		return &corev1.ObjectReference{APIVersion: ref.APIVersion, Kind: ref.Kind, Namespace: pod.Namespace, Name: ref.Name, UID: ref.UID}
	}
	return &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
}

func (e *PodExecutor) event(target runtime.Object, eventType, reason, format string, args ...any) {
	if e.Recorder != nil && target != nil {
		e.Recorder.Eventf(target, eventType, reason, format, args...)
	}
}

// CreatePod implements reconcile.Executor. The plan's pod is not modified.
func (e *PodExecutor) CreatePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	p := pod.DeepCopy()
	if e.Owner != nil {
		ref, err := e.ownerReference()
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if cur := metav1.GetControllerOf(p); cur != nil && cur.UID != ref.UID {
			// A definite failure (4xx): nothing was created.
			return nil, apierrors.NewBadRequest(fmt.Sprintf("pod %s/%s: the plan's controller %s %s (uid %s) is not the executor's owner %s (uid %s)",
				p.Namespace, podNameOrPrefix(p), cur.Kind, cur.Name, cur.UID, ref.Name, ref.UID))
		}
		p.OwnerReferences = slices.DeleteFunc(p.OwnerReferences, func(r metav1.OwnerReference) bool { return r.Controller != nil && *r.Controller })
		p.OwnerReferences = append(p.OwnerReferences, ref)
	}
	kind := "worker"
	if p.Labels[reconcile.LabelNodeType] == "head" {
		kind = "head"
	}
	if err := e.Client.Create(ctx, p); err != nil {
		reason := EventFailedToCreateWorkerPod
		if kind == "head" {
			reason = EventFailedToCreateHeadPod
		}
		e.event(e.eventTarget(p), corev1.EventTypeWarning, reason, "Failed to create %s Pod %s/%s: %v", kind, p.Namespace, podNameOrPrefix(p), err)
		return nil, err
	}
	reason := EventCreatedWorkerPod
	if kind == "head" {
		reason = EventCreatedHeadPod
	}
	e.event(e.eventTarget(p), corev1.EventTypeNormal, reason, "Created %s Pod %s/%s", kind, p.Namespace, p.Name)
	return p, nil
}

func podNameOrPrefix(p *corev1.Pod) string {
	if p.Name != "" {
		return p.Name
	}
	return p.GenerateName + "*"
}

// DeletePod implements reconcile.Executor: a non-empty uid is a precondition
// (409 Conflict when the name now belongs to another pod). NotFound is
// returned as is; reconcile.Apply decides whether it counts as done.
func (e *PodExecutor) DeletePod(ctx context.Context, namespace, name string, uid types.UID) error {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: uid}}
	var opts []client.DeleteOption
	if uid != "" {
		opts = append(opts, client.Preconditions{UID: &uid})
	}
	err := e.Client.Delete(ctx, pod, opts...)
	switch {
	case err == nil:
		e.event(e.eventTarget(pod), corev1.EventTypeNormal, EventDeletedPod, "Deleted Pod %s/%s", namespace, name)
	case !apierrors.IsNotFound(err):
		e.event(e.eventTarget(pod), corev1.EventTypeWarning, EventFailedToDeletePod, "Failed to delete Pod %s/%s: %v", namespace, name, err)
	}
	return err
}

// DeleteAllOf implements reconcile.Executor with one deletecollection call. An
// empty selector is refused (400): it would delete every pod of the namespace.
func (e *PodExecutor) DeleteAllOf(ctx context.Context, namespace string, selector map[string]string) error {
	if len(selector) == 0 {
		return apierrors.NewBadRequest(fmt.Sprintf("refusing to delete all pods of namespace %q: empty label selector", namespace))
	}
	err := e.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(namespace), client.MatchingLabels(selector))
	target := e.Owner
	sel := labels.SelectorFromSet(selector).String()
	if target != nil {
		if err != nil {
			e.event(target, corev1.EventTypeWarning, EventFailedToDeletePods, "Failed to delete Pods of %s matching %s: %v", namespace, sel, err)
		} else {
			e.event(target, corev1.EventTypeNormal, EventDeletedPods, "Deleted Pods of %s matching %s", namespace, sel)
		}
	}
	return err
}

// PatchPodAnnotations implements reconcile.Executor: one JSON merge patch
// that sets the annotations and carries metadata.resourceVersion (when given),
// so the API server refuses it with 409 Conflict if the pod changed since it
// was read, and metadata.uid (when given), which the server refuses if the
// name now belongs to another pod; that refusal (422 on an immutable field) is
// returned as 409 Conflict, the precondition failure it is.
func (e *PodExecutor) PatchPodAnnotations(ctx context.Context, namespace, name string, uid types.UID, resourceVersion string, set map[string]string) error {
	md := map[string]any{"annotations": set}
	if resourceVersion != "" {
		md["resourceVersion"] = resourceVersion
	}
	if uid != "" {
		md["uid"] = uid
	}
	body, err := json.Marshal(map[string]any{"metadata": md})
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	err = e.Client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, body))
	if uid != "" && apierrors.IsInvalid(err) && strings.Contains(err.Error(), "metadata.uid") {
		return apierrors.NewConflict(podsResource, name, fmt.Errorf("precondition failed: UID %s: %w", uid, err))
	}
	if err == nil {
		keys := slices.Sorted(maps.Keys(set))
		e.event(e.eventTarget(pod), corev1.EventTypeNormal, EventPatchedPod, "Set annotations %s on Pod %s/%s", strings.Join(keys, ","), namespace, name)
	}
	return err
}

// GetPod reads a pod through Reader.
func (e *PodExecutor) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	var p corev1.Pod
	if err := e.reader().Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// ListPods reads the namespace's pods matching selector (nil: all) through
// Reader, sorted by name.
//
// When Reader is a controller-runtime cache the pods are not copied: each
// returned Pod shares its maps, slices and pointers with the cached object,
// so the caller must treat them as read-only (DeepCopy before changing one).
// Feeding them to reconcile.Decide and expectations is safe: the cores never
// mutate their input, and PodExecutor copies a plan's pod before creating it
// and otherwise sends only names, UIDs and new maps. See the package doc.
func (e *PodExecutor) ListPods(ctx context.Context, namespace string, selector labels.Selector) ([]corev1.Pod, error) {
	var list corev1.PodList
	// UnsafeDisableDeepCopy: read-only use, see above; ignored by a
	// client that reads the API server directly.
	opts := []client.ListOption{client.InNamespace(namespace), client.UnsafeDisableDeepCopy}
	if selector != nil {
		opts = append(opts, client.MatchingLabelsSelector{Selector: selector})
	}
	if err := e.reader().List(ctx, &list, opts...); err != nil {
		return nil, err
	}
	return sortedByName(list.Items), nil
}

// sortedByName returns pods in ascending order of name. A Pod is about a
// kilobyte, so sorting the slice in place moves n log n kilobytes (25 ms for
// 10,000 pods, ten times reconcile.Decide on them; BenchmarkSteadyPass10k);
// sorting pointers and copying each pod once into a new slice does not.
func sortedByName(pods []corev1.Pod) []corev1.Pod {
	byName := func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) }
	ptrs := make([]*corev1.Pod, len(pods))
	for i := range pods {
		ptrs[i] = &pods[i]
	}
	if slices.IsSortedFunc(ptrs, byName) {
		return pods
	}
	slices.SortFunc(ptrs, byName)
	out := make([]corev1.Pod, len(pods))
	for i, p := range ptrs {
		out[i] = *p
	}
	return out
}
