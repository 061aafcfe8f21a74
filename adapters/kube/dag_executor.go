package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/plancore/plancore/dag"
	"github.com/plancore/plancore/dag/patch"
)

// ErrNoTemplate is returned (wrapped) by JobExecutor.CreateJob when the
// template of a flow cannot be found; dag.Apply then stops, as Volcano's sync
// does on a missing template.
var ErrNoTemplate = errors.New("kube: job template not found")

// ErrNoClient is returned by a JobExecutor without a Client (its zero value):
// an error, never a panic.
var ErrNoClient = errors.New("kube: JobExecutor.Client is nil")

// BatchTaskName is the task name under which a batch/v1 Job's pod counts are
// reported in dag.Job.TaskStatusCount (a batch/v1 Job has one implicit task).
const BatchTaskName = "job"

// JobExecutor is a dag.Executor that runs each flow as a batch/v1 Job built
// from a caller-supplied template: the template is deep-copied (a cached
// template is never touched), the flow's patch is merged in, and the plan's
// name, labels, annotations and controller owner reference are set.
//
// Creates and deletes act in the plan's namespace (dag.CreateJob.Namespace,
// dag.DeleteJob.Namespace), so one JobExecutor can serve workflows of every
// namespace; Namespace, when set, confines it to one.
type JobExecutor struct {
	// Client creates and deletes Jobs.
	Client client.Client
	// Namespace, when set, is the only namespace this executor acts in: a
	// create or delete of a job in another namespace is refused. It is also
	// the namespace of a delete whose plan names none.
	Namespace string
	// Template returns the template of a flow (dag.CreateJob.Template: the
	// flow's name in the workflow's namespace). A nil template, or an error
	// wrapping ErrNoTemplate, means there is none.
	Template func(ctx context.Context, ref dag.TemplateRef) (*batchv1.JobTemplateSpec, error)
	// Status writes a workflow's complete status. Required when a plan writes
	// status (dag.Plan.WriteStatus); the workflow object is the caller's.
	Status func(ctx context.Context, namespace, name string, status dag.Status) error
	// Recorder, when set, receives Volcano's events on the workflow object (the
	// jobs' owner): Normal "Created" "create a job named <name>!" per create.
	Recorder record.EventRecorder
	// Propagation is the deletion propagation policy; default Background, so
	// a deleted Job's pods are garbage-collected.
	Propagation metav1.DeletionPropagation
	// OwnerAPIVersion and OwnerKind, when set, replace the apiVersion and
	// kind of the plan's owner reference (Volcano's flow.volcano.sh/v1alpha1
	// JobFlow), for workflows stored in another kind of object. The owner's
	// name, UID and controller flags always come from the plan.
	OwnerAPIVersion, OwnerKind string
}

var _ dag.Executor = (*JobExecutor)(nil)

// BuildJob returns the Job CreateJob would create, without creating it.
func (e *JobExecutor) BuildJob(ctx context.Context, c dag.CreateJob) (*batchv1.Job, error) {
	if e.Template == nil {
		return nil, fmt.Errorf("%w: JobExecutor.Template is nil", ErrNoTemplate)
	}
	tmpl, err := e.Template(ctx, c.Template)
	if err != nil {
		return nil, fmt.Errorf("job %s: template %s/%s: %w", c.Name, c.Template.Namespace, c.Template.Name, err)
	}
	if tmpl == nil {
		return nil, fmt.Errorf("job %s: %w: %s/%s", c.Name, ErrNoTemplate, c.Template.Namespace, c.Template.Name)
	}
	t := tmpl.DeepCopy()
	if len(c.Patch) > 0 {
		if t, err = MergeJobTemplate(t, c.Patch); err != nil {
			return nil, fmt.Errorf("job %s: %w", c.Name, err)
		}
	}
	owner := c.Owner
	if e.OwnerAPIVersion != "" {
		owner.APIVersion = e.OwnerAPIVersion
	}
	if e.OwnerKind != "" {
		owner.Kind = e.OwnerKind
	}
	job := &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            c.Name,
			Namespace:       c.Namespace,
			Labels:          t.Labels,
			Annotations:     t.Annotations,
			OwnerReferences: []metav1.OwnerReference{owner},
		},
		Spec: t.Spec,
	}
	// The plan's labels and annotations win over the template's: they are the
	// job's identity (which workflow and flow it belongs to).
	if len(c.Labels) > 0 {
		if job.Labels == nil {
			job.Labels = map[string]string{}
		}
		maps.Copy(job.Labels, c.Labels)
	}
	if len(c.Annotations) > 0 {
		if job.Annotations == nil {
			job.Annotations = map[string]string{}
		}
		maps.Copy(job.Annotations, c.Annotations)
	}
	return job, nil
}

// CreateJob implements dag.Executor. An existing job of the same name returns
// an error wrapping dag.ErrAlreadyExists, which dag.Apply counts as created.
func (e *JobExecutor) CreateJob(ctx context.Context, c dag.CreateJob) error {
	if c.Namespace == "" || (e.Namespace != "" && c.Namespace != e.Namespace) {
		return fmt.Errorf("job %s: namespace %q, but this JobExecutor serves %q", c.Name, c.Namespace, e.Namespace)
	}
	if e.Client == nil {
		return fmt.Errorf("job %s: %w", c.Name, ErrNoClient)
	}
	job, err := e.BuildJob(ctx, c)
	if err != nil {
		return err
	}
	if err := e.Client.Create(ctx, job); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("job %s/%s: %w: %v", c.Namespace, c.Name, dag.ErrAlreadyExists, err)
		}
		return fmt.Errorf("job %s/%s: create: %w", c.Namespace, c.Name, err)
	}
	if e.Recorder != nil {
		e.Recorder.Eventf(ownerRef(c.Namespace, job.OwnerReferences[0]), corev1.EventTypeNormal, "Created", "create a job named %v!", c.Name)
	}
	return nil
}

// ownerRef makes an object reference that a record.EventRecorder accepts for
// the workflow, which this package knows only by its owner reference.
func ownerRef(namespace string, o metav1.OwnerReference) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: o.APIVersion, Kind: o.Kind, Namespace: namespace, Name: o.Name, UID: o.UID}
}

// DeleteJob implements dag.Executor: a delete with the plan's UID as
// precondition, so a re-created job of the same name is never deleted by
// mistake (the API server answers 409 Conflict, returned as an error so the
// caller re-plans). A job already gone returns an error wrapping
// dag.ErrNotFound. The job is looked up in d.Namespace (Namespace when the
// plan names none).
func (e *JobExecutor) DeleteJob(ctx context.Context, d dag.DeleteJob) error {
	if e.Client == nil {
		return fmt.Errorf("job %s: %w", d.Name, ErrNoClient)
	}
	ns := d.Namespace
	if ns == "" {
		ns = e.Namespace
	}
	if ns == "" || (e.Namespace != "" && ns != e.Namespace) {
		return fmt.Errorf("job %s: namespace %q, but this JobExecutor serves %q", d.Name, d.Namespace, e.Namespace)
	}
	prop := e.Propagation
	if prop == "" {
		prop = metav1.DeletePropagationBackground
	}
	opts := []client.DeleteOption{client.PropagationPolicy(prop)}
	if d.UID != "" {
		opts = append(opts, client.Preconditions{UID: &d.UID})
	}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: d.Name}}
	if err := e.Client.Delete(ctx, job, opts...); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("job %s/%s: %w: %v", ns, d.Name, dag.ErrNotFound, err)
		}
		return fmt.Errorf("job %s/%s: delete (%s): %w", ns, d.Name, d.Reason, err)
	}
	return nil
}

// UpdateStatus implements dag.Executor through the Status function.
func (e *JobExecutor) UpdateStatus(ctx context.Context, namespace, name string, status dag.Status) error {
	if e.Status == nil {
		return fmt.Errorf("workflow %s/%s: JobExecutor.Status is nil, cannot write status", namespace, name)
	}
	return e.Status(ctx, namespace, name, status)
}

// MergeJobTemplate merges a flow's patch into a copy of t with dag/patch's
// rules (patch.Merge, the only implementation of the merge): the template
// is encoded to JSON, merged, and decoded into a fresh JobTemplateSpec. A
// merged field that the type does not have is an error naming it, so a
// typo in a patch is not dropped silently. t is not modified.
func MergeJobTemplate(t *batchv1.JobTemplateSpec, p []byte) (*batchv1.JobTemplateSpec, error) {
	base, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	merged, err := patch.Merge(base, p)
	if err != nil {
		return nil, fmt.Errorf("merging patch: %w", err)
	}
	out := &batchv1.JobTemplateSpec{}
	d := json.NewDecoder(bytes.NewReader(merged))
	d.DisallowUnknownFields()
	if err := d.Decode(out); err != nil {
		return nil, fmt.Errorf("merged template: %w", err)
	}
	return out, nil
}

// JobPhase maps a batch/v1 Job to dag's (Volcano's) job phase vocabulary:
//   - condition Complete=True → Completed; Failed=True → Failed (final);
//   - SuccessCriteriaMet=True (pods still finishing) → Completing;
//     FailureTarget=True (pods still terminating) → Terminating, which ends
//     as Failed;
//   - being deleted → Terminating;
//   - active pods → Running; anything else (new, suspended, no pods) → Pending.
func JobPhase(j *batchv1.Job) dag.JobPhase {
	var successCriteria, failureTarget bool
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return dag.JobPhaseCompleted
		case batchv1.JobFailed:
			return dag.JobPhaseFailed
		case batchv1.JobSuccessCriteriaMet:
			successCriteria = true
		case batchv1.JobFailureTarget:
			failureTarget = true
		}
	}
	switch {
	case successCriteria:
		return dag.JobPhaseCompleting
	case failureTarget, j.DeletionTimestamp != nil:
		return dag.JobPhaseTerminating
	case j.Status.Active > 0:
		return dag.JobPhaseRunning
	}
	return dag.JobPhasePending
}

// ObservedJob converts a batch/v1 Job into dag's observation: phase by
// JobPhase, running duration from start to completion (absent while running),
// pod counts under BatchTaskName, and failed pods as the retry count.
func ObservedJob(j *batchv1.Job) dag.Job {
	out := dag.Job{
		Name:         j.Name,
		UID:          j.UID,
		Labels:       maps.Clone(j.Labels),
		Phase:        JobPhase(j),
		CreationTime: j.CreationTimestamp.Time,
		RetryCount:   j.Status.Failed,
	}
	if s, c := j.Status.StartTime, j.Status.CompletionTime; s != nil && c != nil {
		d := c.Sub(s.Time)
		out.RunningDuration = &d
	}
	counts := map[string]int32{}
	for phase, n := range map[corev1.PodPhase]int32{corev1.PodRunning: j.Status.Active, corev1.PodSucceeded: j.Status.Succeeded, corev1.PodFailed: j.Status.Failed} {
		if n > 0 {
			counts[string(phase)] = n
		}
	}
	if len(counts) > 0 {
		out.TaskStatusCount = map[string]dag.TaskState{BatchTaskName: {Phase: counts}}
	}
	return out
}

// ObserveJobs reads the jobs dag.Decide needs for wf: every Job in the
// workflow's namespace carrying its createdByJobFlow label, plus any Job named
// like one of its flows (<workflow>-<flow>) without the label, so the planner
// can report name conflicts. The result is sorted by name.
//
// When r is a controller-runtime cache the listed Jobs are not deep-copied:
// ObservedJob only reads them and copies what dag.Job keeps (the labels), so
// nothing returned shares memory with the cache. See the package doc.
func ObserveJobs(ctx context.Context, r client.Reader, wf dag.Workflow) ([]dag.Job, error) {
	var list batchv1.JobList
	// UnsafeDisableDeepCopy: the items are only read, by ObservedJob.
	if err := r.List(ctx, &list, client.InNamespace(wf.Namespace), client.UnsafeDisableDeepCopy,
		client.MatchingLabels{dag.LabelCreatedByJobFlow: wf.Namespace + "." + wf.Name}); err != nil {
		return nil, fmt.Errorf("workflow %s/%s: list jobs: %w", wf.Namespace, wf.Name, err)
	}
	seen := map[string]bool{}
	var out []dag.Job
	for i := range list.Items {
		seen[list.Items[i].Name] = true
		out = append(out, ObservedJob(&list.Items[i]))
	}
	for _, f := range slices.Concat(wf.Spec.Flows, wf.Spec.Finally) {
		name := wf.Name + "-" + f.Name
		if seen[name] {
			continue
		}
		seen[name] = true
		var j batchv1.Job
		err := r.Get(ctx, client.ObjectKey{Namespace: wf.Namespace, Name: name}, &j)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("workflow %s/%s: get job %s: %w", wf.Namespace, wf.Name, name, err)
		default:
			out = append(out, ObservedJob(&j))
		}
	}
	slices.SortFunc(out, func(a, b dag.Job) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
