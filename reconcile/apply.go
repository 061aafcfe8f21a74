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
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"

	"github.com/plancore/plancore"
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

// Applier applies plans like Apply and also keeps the plan's expectations in
// a Tracker, timed by the plan's Now unless Clock is set. Its zero value is
// Apply: no expectations, stop at the first
// failure.
type Applier struct {
	// Expectations, when set, receives the expectation records the plan's
	// actions imply: each is recorded around its call (Begin before, Finish
	// after, per Recording), and the plan's ExpectationOps are applied first.
	// A plan without a ClusterUID is then refused: the records are keyed by
	// the owner's UID. A record that cannot be made fails its action before
	// the call, and one that cannot be concluded fails it after.
	Expectations *expectations.Tracker
	// Recording is when records are made; the default records before the
	// call and rolls back definite failures (KubeRay records after success).
	Recording expectations.Recording
	// Clock, when set, times the records; by default the plan's Now is used.
	Clock clock.PassiveClock
	// TokenPrefix starts the token of every GenerateName create, which Apply
	// stamps on the pod (expectations.TokenAnnotation) so that an ambiguous
	// create is recognised when it appears. Use a per-process random value.
	TokenPrefix string
	// KeepGoing continues after a failed action. By default Apply stops at
	// the first failure like KubeRay (earlier actions stand).
	KeepGoing bool
	// MaxInFlight, above 1, sends each run of independent actions
	// (Plan.Runs) concurrently, at most MaxInFlight calls at a time; 0 or 1
	// applies one action at a time. The Executor and the Tracker must then
	// be safe for concurrent use.
	MaxInFlight int
	// NoSlowStart sends a run of creates at full width at once. By default,
	// with MaxInFlight above 1, a run of creates goes out in batches of 1,
	// 2, 4, … (the ReplicaSet controller's slowStartBatch), so a create bound
	// to fail (a ResourceQuota, an admission webhook) fails once, not
	// MaxInFlight times.
	NoSlowStart bool
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
	// CreateReplicaGroup actions (KubeRay #4540); merge them with UpdateForming.
	Forming []FormingGroup `json:",omitempty"`
	// Stopped is set when Apply stopped early at a failed action.
	Stopped bool
}

// Err joins the errors of the failed actions (patches excluded, which KubeRay
// only logs; their errors stay in the report), or returns nil. It is the
// error Apply returned, less any failure to apply ExpectationOps.
func (r Report) Err() error {
	var errs []error
	for _, a := range r.Results {
		if a.Err != nil && a.Kind != ActionPatchPodAnnotations {
			errs = append(errs, a.Err)
		}
	}
	return errors.Join(errs...)
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
// head, then groups in spec order, deletes before creates) through exec,
// without expectations: it is Applier{}.Apply.
func Apply(ctx context.Context, p Plan, exec Executor) (Report, error) {
	return Applier{}.Apply(ctx, p, exec)
}

// Apply executes the plan in its order. It records each action's
// expectations around its call, tolerates NotFound on deletes that allow it
// and AlreadyExists on creates with a fixed name, and reports every action.
// It stops at the first failed action unless KeepGoing; a failed annotation
// patch never stops it (KubeRay only logs it). A CreateReplicaGroup attempts
// every member even if one fails, and reports the partial group in
// Report.Forming, unless the plan asks for KubeRay's serial creation.
//
// The error joins every failed action's error (each wraps the executor's
// error, or ErrExpectation for a record that could not be kept) and the
// failures to apply ExpectationOps; failed patches are in the report only. A
// nil exec (ErrNilExecutor) or, with Expectations, a plan without ClusterUID
// (ErrInvalidPlan) is refused before anything is done.
func (o Applier) Apply(ctx context.Context, p Plan, exec Executor) (Report, error) {
	if plancore.IsNil(exec) {
		return Report{}, ErrNilExecutor
	}
	if o.MaxInFlight > 1 {
		return o.applyConcurrently(ctx, p, exec)
	}
	if o.Expectations != nil && p.ClusterUID == "" {
		return Report{}, plancore.Invalid(ErrInvalidPlan, field.ErrorList{field.Required(field.NewPath("clusterUID"),
			"expectations are keyed by the cluster's UID; without it the next pass would repeat these actions")})
	}
	rep := Report{Results: make([]ActionResult, 0, len(p.Actions))}
	ns, name, _ := strings.Cut(p.Cluster, "/")
	ap := &applier{ctx: ctx, exec: exec, o: o, plan: &p, owner: expectations.Owner{Namespace: ns, Name: name, UID: p.ClusterUID}}
	opsErr := ap.expectationOps()
	for i := range p.Actions {
		a := &p.Actions[i]
		res := ActionResult{Index: i, Kind: a.Kind, Group: a.Group}
		if rep.Stopped || ctx.Err() != nil {
			res.Status = CallSkipped
			res.Target = target(a)
			rep.Results = append(rep.Results, res)
			continue
		}
		// A call that found its work done returns no error, unless its
		// expectation could not be kept, which fails the action.
		if err := ap.do(a, i, &res, &rep); err != nil {
			if res.Status == "" || res.Status == CallDone {
				res.Status = CallFailed
			}
			if a.FailureReason != "" {
				err = errors.Join(failureError{a.FailureReason}, err)
			}
			res.Err = err
			if a.Kind != ActionPatchPodAnnotations && !o.KeepGoing {
				rep.Stopped = true
			}
		}
		rep.Results = append(rep.Results, res)
	}
	return rep, errors.Join(opsErr, rep.Err())
}

// expectationOps applies the plan's drops and cluster clear to the tracker.
func (ap *applier) expectationOps() error {
	tr := ap.o.Expectations
	if tr == nil {
		return nil
	}
	var errs []error
	for _, ref := range ap.plan.ExpectationOps.Drop {
		if _, err := tr.Rollback(ref); err != nil {
			errs = append(errs, fmt.Errorf("%w: dropping %s/%s: %w", ErrExpectation, ref.Group, cmpOr(ref.Pod, ref.Token), err))
		}
	}
	if ap.plan.ExpectationOps.ClearCluster {
		if _, err := tr.Forget(expectations.Owner{Namespace: ap.owner.Namespace, Name: ap.owner.Name}); err != nil {
			errs = append(errs, fmt.Errorf("%w: clearing the cluster: %w", ErrExpectation, err))
		}
	}
	return errors.Join(errs...)
}

// do performs action i, filling in res.Target and res.Status.
func (ap *applier) do(a *Action, i int, res *ActionResult, rep *Report) error {
	ctx, exec := ap.ctx, ap.exec
	switch a.Kind {
	case ActionPatchPodAnnotations:
		if a.Patch == nil {
			return fmt.Errorf("%w: action %d has no Patch", ErrInvalidPlan, i)
		}
		res.Target = a.Patch.Name
		err := exec.PatchPodAnnotations(ctx, a.Patch.Namespace, a.Patch.Name, a.Patch.UID, a.Patch.ResourceVersion, a.Patch.Set)
		res.Status = classify(expectations.Create, err, false, false)
		return err
	case ActionDeleteAllOf:
		if a.DeleteAll == nil {
			return fmt.Errorf("%w: action %d has no DeleteAll", ErrInvalidPlan, i)
		}
		res.Target = a.DeleteAll.SelectorString()
		return ap.deleteAllOf(a, res)
	case ActionDeletePod:
		if a.Delete == nil {
			return fmt.Errorf("%w: action %d has no Delete", ErrInvalidPlan, i)
		}
		res.Target = a.Delete.Name
		var err error
		res.Status, err = ap.deleteOne(a)
		return err
	case ActionCreatePod:
		if a.Create == nil || a.Create.Pod == nil {
			return fmt.Errorf("%w: action %d has no Create", ErrInvalidPlan, i)
		}
		res.Target = podNameOrPrefix(a.Create.Pod)
		st, name, err := ap.createOne(a, i, 0, a.Create.Pod)
		res.Status = st
		if name != "" {
			res.Created = append(res.Created, name)
		}
		return err
	case ActionCreateReplicaGroup:
		if a.CreateGroup == nil {
			return fmt.Errorf("%w: action %d has no CreateGroup", ErrInvalidPlan, i)
		}
		res.Target = a.CreateGroup.ReplicaName
		var err error
		res.Status, err = ap.createGroup(a, i, res, rep)
		return err
	}
	return fmt.Errorf("%w: action %d has unknown kind %q", ErrInvalidPlan, i, a.Kind)
}

// deleteOne deletes one pod, recording its expectation around the call.
func (ap *applier) deleteOne(a *Action) (CallStatus, error) {
	d := a.Delete
	tk, recorded, err := ap.begin(a, 0, d.Name, d.UID, "")
	if err != nil {
		return CallFailed, err
	}
	err = ap.exec.DeletePod(ap.ctx, d.Namespace, d.Name, d.UID)
	// A UID precondition that fails means the pod we meant is gone.
	if err != nil && d.UID != "" && apierrors.IsConflict(err) {
		err = apierrors.NewNotFound(corev1.Resource("pods"), d.Name)
	}
	st := classify(expectations.Delete, err, d.NotFoundIsSuccess, false)
	var ferr error
	if recorded {
		ferr = ap.finish(tk, expectations.Delete, err, false, d.Name, "")
	}
	if st == CallAlreadyDone {
		err = nil // NotFound on a delete that tolerates it: done
	}
	return st, errors.Join(err, ferr)
}

// deleteAllOf sends a DeleteAllOf, recording a delete expectation for each
// pod the plan saw it remove before the call and concluding them after it.
// If a record cannot be begun, the call is not made and the records already
// begun are concluded as not attempted.
func (ap *applier) deleteAllOf(a *Action, res *ActionResult) error {
	d := a.DeleteAll
	tickets := make([]expectations.Ticket, 0, len(a.Expect))
	for k := range a.Expect {
		tk, recorded, err := ap.begin(a, k, a.Expect[k].Pod, "", "")
		if err != nil {
			errs := []error{err}
			for _, t := range tickets {
				if ferr := ap.o.Expectations.Finish(ap.now(), t, expectations.CallNotAttempted, t.Record.Pod, ""); ferr != nil {
					errs = append(errs, fmt.Errorf("%w: concluding delete %s: %w", ErrExpectation, t.Record.Pod, ferr))
				}
			}
			res.Status = CallFailed
			return errors.Join(errs...)
		}
		if recorded {
			tickets = append(tickets, tk)
		}
	}
	err := ap.exec.DeleteAllOf(ap.ctx, d.Namespace, d.Selector)
	res.Status = classify(expectations.Create, err, false, false)
	errs := []error{err}
	for _, t := range tickets {
		errs = append(errs, ap.finish(t, expectations.Delete, err, false, t.Record.Pod, ""))
	}
	return errors.Join(errs...)
}

// applier carries one Apply call's state.
type applier struct {
	ctx   context.Context
	exec  Executor
	o     Applier
	plan  *Plan
	owner expectations.Owner
}

func (ap *applier) now() time.Time {
	if ap.o.Clock != nil {
		return ap.o.Clock.Now()
	}
	return ap.plan.Now
}

// begin records the k-th expectation of a before its call. It reports
// whether a record was begun, and an error wrapping ErrExpectation when it
// could not be: the call must then not be made.
func (ap *applier) begin(a *Action, k int, pod string, uid types.UID, token string) (expectations.Ticket, bool, error) {
	tr := ap.o.Expectations
	if tr == nil || k >= len(a.Expect) {
		return expectations.Ticket{}, false, nil
	}
	e := a.Expect[k]
	r := expectations.Record{Owner: ap.owner, Group: e.Group, Pod: pod, Token: token, Seen: e.Seen}
	if e.Kind == ExpectCreate {
		r.Action = expectations.Create
	} else {
		r.Action, r.PodUID = expectations.Delete, uid
	}
	tk, err := tr.Begin(ap.now(), r, ap.o.Recording)
	if err != nil {
		return tk, false, fmt.Errorf("%w: %s %s: %w", ErrExpectation, r.Action, cmpOr(pod, token), err)
	}
	return tk, true, nil
}

// finish concludes a record begun before the call; an error wraps
// ErrExpectation.
func (ap *applier) finish(tk expectations.Ticket, act expectations.Action, err error, fixedName bool, name string, uid types.UID) error {
	if ferr := ap.o.Expectations.Finish(ap.now(), tk, expectations.Classify(act, err, fixedName), name, uid); ferr != nil {
		return fmt.Errorf("%w: concluding %s %s: %w", ErrExpectation, act, cmpOr(name, tk.Record.Token), ferr)
	}
	return nil
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
	tk, recorded, err := ap.begin(a, k, pod.Name, "", token)
	if err != nil {
		return CallFailed, "", err
	}
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
	var ferr error
	if recorded {
		ferr = ap.finish(tk, expectations.Create, err, fixed, name, uid)
	}
	if st == CallAlreadyDone {
		err = nil
	}
	return st, name, errors.Join(err, ferr)
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
		// The group is partial: write or update its formation record (KubeRay #4540).
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
		if res.Kind == ActionCreateReplicaGroup && res.Status == CallDone {
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
