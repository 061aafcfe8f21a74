package reconcile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/plancore/plancore/expectations"
)

// Executor performs plan actions against a pod API (Kubernetes, or package
// fake's in-memory store). Methods must be safe to retry: Apply tolerates
// NotFound on delete and AlreadyExists on a create with a fixed name.
// Errors should be Kubernetes API status errors (k8s.io/apimachinery's
// api/errors), so that Apply can tell a definite failure from an ambiguous one.
type Executor interface {
	// CreatePod creates pod (Name or GenerateName set) and returns the created
	// object, whose Name and UID the server assigned.
	CreatePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error)
	// DeletePod deletes the named pod; a non-empty uid is a precondition (a
	// mismatch is a Conflict).
	DeletePod(ctx context.Context, namespace, name string, uid types.UID) error
	// DeleteAllOf deletes every pod of namespace matching selector.
	DeleteAllOf(ctx context.Context, namespace string, selector map[string]string) error
	// PatchPodAnnotations sets annotations on a pod; non-empty uid and
	// resourceVersion are preconditions.
	PatchPodAnnotations(ctx context.Context, namespace, name string, uid types.UID, resourceVersion string, set map[string]string) error
}

// CallStatus is how one action's executor call ended.
type CallStatus string

const (
	// CallDone: the call succeeded.
	CallDone CallStatus = "done"
	// CallAlreadyDone: the state was already as requested (NotFound on a
	// delete that tolerates it, AlreadyExists on a create with a fixed name).
	CallAlreadyDone CallStatus = "already-done"
	// CallFailed: a definite failure; the call had no effect.
	CallFailed CallStatus = "failed"
	// CallAmbiguous: the call may or may not have taken effect (timeout, lost
	// response, server error).
	CallAmbiguous CallStatus = "ambiguous"
	// CallSkipped: not attempted because Apply stopped at an earlier failure.
	CallSkipped CallStatus = "skipped"
)

// ApplyOptions configure Apply.
type ApplyOptions struct {
	// Expectations, when set, receives the expectation records the plan's
	// actions imply: each is recorded around its call (Begin before, Finish
	// after, per Recording), and the plan's ExpectationOps are applied first.
	Expectations *expectations.Tracker
	// Recording is when records are made; the default records before the
	// call and rolls back definite failures (KubeRay records after success).
	Recording expectations.Recording
	// Clock, when set, times the records; by default the plan's Now is used.
	Clock func() time.Time
	// TokenPrefix starts the token of every GenerateName create, which Apply
	// stamps on the pod (expectations.TokenAnnotation) so that an ambiguous
	// create is recognised when it appears. Use a per-process random value.
	TokenPrefix string
	// KeepGoing continues after a failed action. By default Apply stops at
	// the first failure like KubeRay (earlier actions stand).
	KeepGoing bool
}

// ActionResult reports one action.
type ActionResult struct {
	Index  int
	Kind   ActionKind
	Group  string
	Target string
	Status CallStatus
	// Created lists the created pods' names (GenerateName resolved).
	Created []string `json:",omitempty"`
	// Err is the first error, joined with FailureReason like KubeRay's
	// errors.Join(utils.ErrFailed..., err).
	Err error `json:"-"`
}

// Report is what Apply did, action by action.
type Report struct {
	Results []ActionResult
	// Forming holds formation records written or updated by partially failed
	// CreateReplicaGroup actions (D9); merge them with UpdateForming.
	Forming []FormingGroup `json:",omitempty"`
	// Stopped is set when Apply stopped early at a failed action.
	Stopped bool
}

// Err returns the first failed action's error (patches excluded, which KubeRay
// only logs), or nil.
func (r Report) Err() error {
	for _, a := range r.Results {
		if a.Err != nil && a.Kind != KindPatchPodAnnotations && (a.Status == CallFailed || a.Status == CallAmbiguous) {
			return a.Err
		}
	}
	return nil
}

// failureError makes the executor's error KubeRay-shaped: the failure reason,
// a newline, then the API error (errors.Join).
type failureError struct{ reason FailureReason }

func (e failureError) Error() string { return string(e.reason) }

// IsFailure reports whether err carries the given failure reason.
func IsFailure(err error, reason FailureReason) bool {
	var f failureError
	return errors.As(err, &f) && f.reason == reason
}

// classify maps an executor error to a call status with the expectations
// package's rules (expectations.Classify), except that NotFound on a delete
// that does not tolerate it is a failure (KubeRay's head and unhealthy-pod
// deletes, Compat.StrictNotFound).
func classify(act expectations.Action, err error, notFoundOK, fixedName bool) CallStatus {
	switch expectations.Classify(act, err, fixedName) {
	case expectations.CallSucceeded:
		return CallDone
	case expectations.CallAlreadyDone:
		if act == expectations.Delete && !notFoundOK {
			return CallFailed
		}
		return CallAlreadyDone
	case expectations.CallAmbiguous:
		return CallAmbiguous
	}
	return CallFailed
}

// Apply executes the plan in its order (annotation patches, DeleteAllOf,
// head, then groups in spec order, deletes before creates). It records each
// action's expectations around its call, tolerates NotFound on deletes that
// allow it and AlreadyExists on creates with a fixed name, and reports every
// action. It stops at the first failed action unless KeepGoing; a failed
// annotation patch never stops it (KubeRay only logs it). A CreateReplicaGroup
// attempts every member even if one fails, and reports the partial group in
// Report.Forming (D9), unless the plan asks for KubeRay's serial creation.
func Apply(ctx context.Context, p Plan, exec Executor, o ApplyOptions) Report {
	rep := Report{Results: make([]ActionResult, 0, len(p.Actions))}
	ns, name, _ := strings.Cut(p.Cluster, "/")
	ap := &applier{ctx: ctx, exec: exec, o: o, plan: &p, owner: expectations.Owner{Namespace: ns, Name: name, UID: p.ClusterUID}}
	if tr := o.Expectations; tr != nil {
		for _, ref := range p.ExpectationOps.Drop {
			_, _ = tr.Rollback(ref)
		}
		if p.ExpectationOps.ClearCluster {
			_, _ = tr.Forget(expectations.Owner{Namespace: ns, Name: name})
		}
	}
	for i := range p.Actions {
		a := &p.Actions[i]
		res := ActionResult{Index: i, Kind: a.Kind, Group: a.Group}
		if rep.Stopped || ctx.Err() != nil {
			res.Status = CallSkipped
			res.Target = target(a)
			rep.Results = append(rep.Results, res)
			continue
		}
		var err error
		switch a.Kind {
		case KindPatchPodAnnotations:
			if a.Patch == nil {
				err = fmt.Errorf("%w: action %d has no Patch", ErrInvalidPlan, i)
				break
			}
			res.Target = a.Patch.Name
			err = exec.PatchPodAnnotations(ctx, a.Patch.Namespace, a.Patch.Name, a.Patch.UID, a.Patch.ResourceVersion, a.Patch.Set)
			res.Status = classify(expectations.Create, err, false, false)
		case KindDeleteAllOf:
			if a.DeleteAll == nil {
				err = fmt.Errorf("%w: action %d has no DeleteAll", ErrInvalidPlan, i)
				break
			}
			res.Target = a.DeleteAll.SelectorString()
			err = exec.DeleteAllOf(ctx, a.DeleteAll.Namespace, a.DeleteAll.Selector)
			res.Status = classify(expectations.Create, err, false, false)
		case KindDeletePod:
			if a.Delete == nil {
				err = fmt.Errorf("%w: action %d has no Delete", ErrInvalidPlan, i)
				break
			}
			d := a.Delete
			res.Target = d.Name
			tk, recorded := ap.begin(a, 0, d.Name, d.UID, "")
			err = exec.DeletePod(ctx, d.Namespace, d.Name, d.UID)
			// A UID precondition that fails means the pod we meant is gone.
			if err != nil && d.UID != "" && apierrors.IsConflict(err) {
				err = apierrors.NewNotFound(corev1.Resource("pods"), d.Name)
			}
			res.Status = classify(expectations.Delete, err, d.NotFoundIsSuccess, false)
			if recorded {
				ap.finish(tk, expectations.Delete, err, false, d.Name, "")
			}
		case KindCreatePod:
			if a.Create == nil || a.Create.Pod == nil {
				err = fmt.Errorf("%w: action %d has no Create", ErrInvalidPlan, i)
				break
			}
			res.Target = podNameOrPrefix(a.Create.Pod)
			var name string
			res.Status, name, err = ap.createOne(a, i, 0, a.Create.Pod)
			if name != "" {
				res.Created = append(res.Created, name)
			}
		case KindCreateReplicaGroup:
			if a.CreateGroup == nil {
				err = fmt.Errorf("%w: action %d has no CreateGroup", ErrInvalidPlan, i)
				break
			}
			res.Target = a.CreateGroup.ReplicaName
			res.Status, err = ap.createGroup(a, i, &res, &rep)
		default:
			err = fmt.Errorf("%w: action %d has unknown kind %q", ErrInvalidPlan, i, a.Kind)
		}
		if err != nil && res.Status != CallAlreadyDone {
			if res.Status == "" || res.Status == CallDone {
				res.Status = CallFailed
			}
			if a.FailureReason != "" {
				err = errors.Join(failureError{a.FailureReason}, err)
			}
			res.Err = err
			if a.Kind != KindPatchPodAnnotations && !o.KeepGoing {
				rep.Stopped = true
			}
		}
		rep.Results = append(rep.Results, res)
	}
	return rep
}

// applier carries one Apply call's state.
type applier struct {
	ctx   context.Context
	exec  Executor
	o     ApplyOptions
	plan  *Plan
	owner expectations.Owner
}

func (ap *applier) now() time.Time {
	if ap.o.Clock != nil {
		return ap.o.Clock()
	}
	return ap.plan.Now
}

// begin records the k-th expectation of a before its call.
func (ap *applier) begin(a *Action, k int, pod string, uid types.UID, token string) (expectations.Ticket, bool) {
	tr := ap.o.Expectations
	if tr == nil || k >= len(a.Expect) {
		return expectations.Ticket{}, false
	}
	e := a.Expect[k]
	r := expectations.Record{Owner: ap.owner, Group: e.Group, Pod: pod, Token: token, Seen: e.Seen}
	if e.Kind == ExpectCreate {
		r.Action = expectations.Create
	} else {
		r.Action, r.PodUID = expectations.Delete, uid
	}
	tk, err := tr.Begin(ap.now(), r, ap.o.Recording)
	return tk, err == nil
}

func (ap *applier) finish(tk expectations.Ticket, act expectations.Action, err error, fixedName bool, name string, uid types.UID) {
	_ = ap.o.Expectations.Finish(ap.now(), tk, expectations.Classify(act, err, fixedName), name, uid)
}

// createOne creates one pod (the k-th of action i), recording its expectation
// around the call; a GenerateName pod is stamped with a token first.
func (ap *applier) createOne(a *Action, i, k int, pod *corev1.Pod) (CallStatus, string, error) {
	pod = pod.DeepCopy()
	fixed := pod.Name != ""
	token := ""
	if !fixed && ap.o.Expectations != nil {
		token = fmt.Sprintf("%s%x-%d-%d", ap.o.TokenPrefix, ap.plan.Now.UnixNano(), i, k)
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[expectations.TokenAnnotation] = token
	}
	tk, recorded := ap.begin(a, k, pod.Name, "", token)
	out, err := ap.exec.CreatePod(ap.ctx, pod)
	st := classify(expectations.Create, err, false, fixed)
	var name string
	var uid types.UID
	switch {
	case err == nil && out != nil:
		name, uid = out.Name, out.UID
	case st == CallAlreadyDone:
		name = pod.Name
	}
	if recorded {
		ap.finish(tk, expectations.Create, err, fixed, name, uid)
	}
	if st == CallAlreadyDone {
		err = nil
	}
	return st, name, err
}

// createGroup creates the members of one replica group. By default every member
// is attempted and a partial result becomes a formation record; with the
// anchor's serial creation (CreateReplicaGroup.Serial) it stops at the first
// failure and records nothing.
func (ap *applier) createGroup(a *Action, i int, res *ActionResult, rep *Report) (CallStatus, error) {
	cg := a.CreateGroup
	var firstErr error
	var missing []int
	status := CallDone
	for k, pod := range cg.Pods {
		if cg.Serial && firstErr != nil {
			missing = append(missing, cg.Hosts[k])
			continue
		}
		st, name, err := ap.createOne(a, i, k, pod)
		if name != "" {
			res.Created = append(res.Created, name)
		}
		if err != nil {
			missing = append(missing, cg.Hosts[k])
			if firstErr == nil {
				firstErr = err
				status = st
			}
		}
	}
	if firstErr == nil {
		return CallDone, nil
	}
	created := len(cg.Pods) - len(missing)
	if !cg.Serial && (created > 0 || cg.Retry) {
		// The group is partial: write or update its formation record (D9).
		now := ap.now()
		f := FormingGroup{Group: a.Group, ReplicaName: cg.ReplicaName, ReplicaIndex: cg.ReplicaIndex,
			Missing: missing, Attempts: cg.Attempts + 1, FirstFailure: now, LastAttempt: now, LastError: firstErr.Error()}
		if cg.Retry && !cg.FirstFailure.IsZero() {
			f.FirstFailure = cg.FirstFailure
		}
		rep.Forming = append(rep.Forming, f)
	}
	return status, firstErr
}

// UpdateForming merges a plan's drops and a report's formation records into
// the records a caller keeps between passes, sorted by group and replica.
func UpdateForming(current []FormingGroup, p Plan, r Report) []FormingGroup {
	out := make([]FormingGroup, 0, len(current)+len(r.Forming))
	drop := func(g, rn string) bool {
		if slices.Contains(p.ExpectationOps.DropForming, FormingKey{Group: g, ReplicaName: rn}) {
			return true
		}
		return slices.ContainsFunc(r.Forming, func(f FormingGroup) bool { return f.Group == g && f.ReplicaName == rn })
	}
	for _, f := range current {
		if !drop(f.Group, f.ReplicaName) {
			out = append(out, f)
		}
	}
	out = append(out, r.Forming...)
	// A retry that succeeded completes the group: its record goes.
	for _, res := range r.Results {
		if res.Kind == KindCreateReplicaGroup && res.Status == CallDone {
			out = slices.DeleteFunc(out, func(f FormingGroup) bool { return f.Group == res.Group && f.ReplicaName == res.Target })
		}
	}
	slices.SortFunc(out, func(a, b FormingGroup) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.ReplicaName, b.ReplicaName))
	})
	return out
}

func target(a *Action) string {
	switch {
	case a.Create != nil && a.Create.Pod != nil:
		return podNameOrPrefix(a.Create.Pod)
	case a.CreateGroup != nil:
		return a.CreateGroup.ReplicaName
	case a.Delete != nil:
		return a.Delete.Name
	case a.DeleteAll != nil:
		return a.DeleteAll.SelectorString()
	case a.Patch != nil:
		return a.Patch.Name
	}
	return ""
}
