// Command jobflow is a JobFlow controller built on plancore: a
// controller-runtime reconciler that reads a JobFlow custom resource (the
// shape of Volcano's flow.volcano.sh/v1alpha1 JobFlow, with plancore's
// plancore<Field> extensions), plans it with the pure dag core, creates
// batch/v1 Jobs from JobTemplate objects with each flow's patch merged in
// (adapters/kube's JobExecutor), and writes the JobFlow's status subresource.
//
// It runs against a throwaway API server (etcd and kube-apiserver from
// adapters/kube/kubetest; build them once with .ci/kube-apiserver.sh),
// installs the JobFlow and JobTemplate CRDs, and drives a six-flow workflow
// to completion: prepare, then train-a and train-b side by side (a
// diamond), evaluate after both, publish after evaluate, and the finally
// flow report. train-b fails once and is retried.
//
// The API server runs no kubelet and no Job controller, so nothing would
// ever finish a Job: the example itself marks each Job finished (Complete,
// or Failed for train-b's first attempt) and says so in its output. Each
// round calls the reconciler directly, then finishes the Jobs it created, so
// a run takes seconds:
//
//	go run ./examples/jobflow
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/plancore/plancore"
	"github.com/plancore/plancore/adapters/kube"
	"github.com/plancore/plancore/adapters/kube/kubetest"
	"github.com/plancore/plancore/dag"
)

// The kinds of the example's CRDs, in Volcano's group.
var (
	JobFlowGVK     = schema.GroupVersionKind{Group: "flow.volcano.sh", Version: "v1alpha1", Kind: "JobFlow"}
	JobTemplateGVK = schema.GroupVersionKind{Group: "flow.volcano.sh", Version: "v1alpha1", Kind: "JobTemplate"}
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// Reconciler reconciles JobFlows with plancore's dag core.
type Reconciler struct {
	// Client reads and writes JobFlows, JobTemplates and Jobs. The example
	// gives it an uncached client, so every reconcile sees the status it
	// wrote last; a manager's cached client works too, because the dag core
	// tolerates a lagging informer.
	Client  client.Client
	Options dag.Options
	// Created, when set, is called after each Job is created: the example's
	// record of creation order.
	Created func(name string, attempt int)
	// Recorder records each pass's events on the JobFlow: the Jobs created
	// and deleted, and why flows wait.
	Recorder record.EventRecorder
}

// Reconcile implements controller-runtime's reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(JobFlowGVK)
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil // deleted: its Jobs go with it (owner references)
		}
		return ctrl.Result{}, err
	}
	raw, err := obj.MarshalJSON()
	if err != nil {
		return ctrl.Result{}, err
	}
	wf, err := dag.DecodeJobFlow(raw)
	if err != nil {
		// A spec the decoder refuses is refused again on every retry.
		return ctrl.Result{}, kube.TerminalIfInvalid(fmt.Errorf("jobflow %s: %w", req, err))
	}
	jobs, err := kube.ObserveJobs(ctx, r.Client, wf)
	if err != nil {
		return ctrl.Result{}, err
	}
	plan, err := dag.Decide(dag.Snapshot{Flow: wf, Jobs: jobs, Now: time.Now()}, r.Options)
	if err != nil {
		return ctrl.Result{}, kube.TerminalIfInvalid(err)
	}
	exec := &recordingExecutor{JobExecutor: &kube.JobExecutor{Client: r.Client, Template: r.template, Status: r.writeStatus}, created: r.Created}
	report, err := dag.Apply(ctx, plan, exec)
	eventErr := kube.Emit(r.Recorder, obj, kube.DAGEvents(plan, &report))
	if err != nil {
		return ctrl.Result{}, errors.Join(err, eventErr)
	}
	return ctrl.Result{RequeueAfter: plan.RequeueAfter}, eventErr
}

// recordingExecutor is the JobExecutor with a hook after each create.
type recordingExecutor struct {
	*kube.JobExecutor
	created func(name string, attempt int)
}

func (e *recordingExecutor) CreateJob(ctx context.Context, c dag.CreateJob) error {
	if err := e.JobExecutor.CreateJob(ctx, c); err != nil {
		return err
	}
	if e.created != nil {
		e.created(c.Name, c.Attempt)
	}
	return nil
}

// template reads the JobTemplate named like the flow. Volcano's JobTemplate
// holds a Volcano Job spec; this one holds a batch/v1 JobSpec, because the
// example creates batch/v1 Jobs.
func (r *Reconciler) template(ctx context.Context, ref dag.TemplateRef) (*batchv1.JobTemplateSpec, error) {
	jt := &unstructured.Unstructured{}
	jt.SetGroupVersionKind(JobTemplateGVK)
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, jt); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: %v", kube.ErrNoTemplate, err)
		}
		return nil, err
	}
	raw, err := json.Marshal(jt.Object["spec"])
	if err != nil {
		return nil, err
	}
	t := &batchv1.JobTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: jt.GetLabels()}}
	if err := json.Unmarshal(raw, &t.Spec); err != nil {
		return nil, fmt.Errorf("jobtemplate %s/%s: spec: %w", ref.Namespace, ref.Name, err)
	}
	return t, nil
}

// writeStatus writes a JobFlow's complete status through the status
// subresource.
func (r *Reconciler) writeStatus(ctx context.Context, namespace, name string, status dag.Status) error {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(JobFlowGVK)
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
		return err
	}
	raw, err := json.Marshal(status)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	obj.Object["status"] = m
	return r.Client.Status().Update(ctx, obj)
}

// outcome is what a run leaves behind, for the test.
type outcome struct {
	// Created lists the created Jobs in creation order, as "name#attempt".
	Created []string
	// Jobs are the workflow's Jobs on the API server at the end.
	Jobs []batchv1.Job
	// Status is the JobFlow's final status.
	Status dag.Status
	// Events are the distinct "type reason" of the events on the JobFlow.
	Events []string
}

// run starts the API server, installs the CRDs, creates the templates and
// the JobFlow, and reconciles until the workflow is final, finishing the
// Jobs in place of a kubelet between rounds.
func run(ctx context.Context, out io.Writer) (outcome, error) {
	var o outcome
	err := drive(ctx, out, &o)
	return o, err
}

func drive(ctx context.Context, out io.Writer, o *outcome) error {
	env, err := kubetest.Start()
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, batchv1.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	if err := installCRDs(ctx, c); err != nil {
		return err
	}
	const ns, name = "default", "train"
	for _, flow := range []string{"prepare", "train-a", "train-b", "evaluate", "publish", "report"} {
		if err := c.Create(ctx, jobTemplate(ns, flow)); err != nil {
			return fmt.Errorf("creating job template %s: %w", flow, err)
		}
	}
	jf, err := jobFlow(ns, name)
	if err != nil {
		return err
	}
	if err := c.Create(ctx, jf); err != nil {
		return fmt.Errorf("creating the jobflow: %w", err)
	}
	fmt.Fprintln(out, "note: envtest runs no kubelet or Job controller; this example marks each Job finished itself")

	// No manager runs here, so the recorder is client-go's own, as a
	// manager's GetEventRecorderFor would give.
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		return err
	}
	events := record.NewBroadcaster()
	defer events.Shutdown()
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	r := &Reconciler{Client: c, Recorder: events.NewRecorder(scheme, corev1.EventSource{Component: "jobflow"}), Created: func(job string, attempt int) {
		o.Created = append(o.Created, fmt.Sprintf("%s#%d", job, attempt))
		fmt.Fprintf(out, "controller: created job %s (attempt %d)\n", job, attempt)
	}}
	if err := refuseInvalid(ctx, out, c, r, ns); err != nil {
		return err
	}
	k := &standInKubelet{c: c, out: out, failOnce: map[string]bool{name + "-train-b": true}}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
	for round := 0; ; round++ {
		if round == 100 {
			return fmt.Errorf("jobflow %s not final after %d rounds", req, round)
		}
		res, err := r.Reconcile(ctx, req)
		if err != nil {
			return err
		}
		st, err := readStatus(ctx, c, req.NamespacedName)
		if err != nil {
			return err
		}
		if p := st.State.Phase; p == dag.PhaseSucceed || p == dag.PhaseFailed {
			fmt.Fprintf(out, "jobflow %s: phase %s, completed jobs %v\n", name, p, st.CompletedJobs)
			o.Status = st
			var jobs batchv1.JobList
			if err := c.List(ctx, &jobs, client.InNamespace(ns)); err != nil {
				return err
			}
			o.Jobs = jobs.Items
			o.Events, err = jobFlowEvents(ctx, c, ns, name)
			return err
		}
		if err := k.finish(ctx, ns, name); err != nil {
			return err
		}
		if err := sleep(ctx, min(res.RequeueAfter, 100*time.Millisecond)); err != nil {
			return err
		}
	}
}

// refuseInvalid creates a JobFlow whose retry policy has a misspelt field
// (the CRD keeps it; the dag core's decoder refuses it) and reconciles it:
// the error is terminal, so controller-runtime would not requeue it.
func refuseInvalid(ctx context.Context, out io.Writer, c client.Client, r *Reconciler, ns string) error {
	jf, err := jobFlow(ns, "broken")
	if err != nil {
		return err
	}
	jf.Object["spec"].(map[string]any)["plancoreRetry"] = map[string]any{"maxRetry": int64(3)}
	if err := c.Create(ctx, jf); err != nil {
		return err
	}
	_, err = r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(jf)})
	var inv *plancore.InvalidError
	if !errors.As(err, &inv) {
		return fmt.Errorf("reconciling an invalid JobFlow: %v, want an invalid-input error", err)
	}
	fmt.Fprintf(out, "invalid JobFlow refused at %v; requeued: %v\n", inv.Fields(), !errors.Is(err, crreconcile.TerminalError(nil)))
	return c.Delete(ctx, jf)
}

// jobFlowEvents waits until the recorder's events of a whole run (jobs
// created, a retry, waiting flows) are on the API server and returns the
// distinct "type reason" of those on the JobFlow, sorted.
func jobFlowEvents(ctx context.Context, c client.Client, ns, name string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var got []string
	var listErr error
	err := waitFor(ctx, func() bool {
		var list corev1.EventList
		if listErr = c.List(ctx, &list, client.InNamespace(ns), client.MatchingFields{"involvedObject.name": name}); listErr != nil {
			return false
		}
		got = got[:0]
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == JobFlowGVK.Kind {
				got = append(got, e.Type+" "+e.Reason)
			}
		}
		slices.Sort(got)
		got = slices.Compact(got)
		return slices.Contains(got, "Normal "+string(dag.ReasonFinally))
	})
	if err != nil {
		return got, fmt.Errorf("waiting for the events on jobflow %s (have %v): %w", name, got, errors.Join(err, listErr))
	}
	return got, nil
}

// readStatus reads a JobFlow's status as the dag core sees it.
func readStatus(ctx context.Context, c client.Client, key types.NamespacedName) (dag.Status, error) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(JobFlowGVK)
	if err := c.Get(ctx, key, obj); err != nil {
		return dag.Status{}, err
	}
	raw, err := obj.MarshalJSON()
	if err != nil {
		return dag.Status{}, err
	}
	wf, err := dag.DecodeJobFlow(raw)
	return wf.Status, err
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// standInKubelet does what a kubelet and the Job controller would: it
// finishes every unfinished Job of the workflow, marking it Failed the first
// time for a name in failOnce and Complete otherwise.
type standInKubelet struct {
	c        client.Client
	out      io.Writer
	failOnce map[string]bool
}

func (k *standInKubelet) finish(ctx context.Context, ns, workflow string) error {
	var list batchv1.JobList
	if err := k.c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{dag.LabelCreatedByJobFlow: ns + "." + workflow}); err != nil {
		return err
	}
	slices.SortFunc(list.Items, func(a, b batchv1.Job) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	for i := range list.Items {
		j := &list.Items[i]
		if j.DeletionTimestamp != nil || kube.JobPhase(j) == dag.JobPhaseCompleted || kube.JobPhase(j) == dag.JobPhaseFailed {
			continue
		}
		fail := k.failOnce[j.Name]
		delete(k.failOnce, j.Name)
		markFinished(j, fail, time.Now())
		if err := k.c.Status().Update(ctx, j); err != nil {
			return fmt.Errorf("marking job %s finished: %w", j.Name, err)
		}
		word := "Complete"
		if fail {
			word = "Failed"
		}
		fmt.Fprintf(k.out, "stand-in kubelet: marked job %s %s\n", j.Name, word)
	}
	return nil
}

// markFinished sets the status a Job controller writes for a finished Job
// of one pod, with the interim condition (SuccessCriteriaMet or
// FailureTarget) the API server requires before the final one.
func markFinished(j *batchv1.Job, fail bool, now time.Time) {
	t := metav1.NewTime(now)
	cond := func(ty batchv1.JobConditionType, reason string) batchv1.JobCondition {
		return batchv1.JobCondition{Type: ty, Status: corev1.ConditionTrue, Reason: reason, LastProbeTime: t, LastTransitionTime: t}
	}
	j.Status.StartTime = &t
	j.Status.Active = 0
	if fail {
		j.Status.Failed = 1
		j.Status.Conditions = append(j.Status.Conditions, cond(batchv1.JobFailureTarget, batchv1.JobReasonBackoffLimitExceeded), cond(batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded))
		return
	}
	j.Status.Succeeded = 1
	j.Status.CompletionTime = &t
	j.Status.Conditions = append(j.Status.Conditions, cond(batchv1.JobSuccessCriteriaMet, batchv1.JobReasonCompletionsReached), cond(batchv1.JobComplete, batchv1.JobReasonCompletionsReached))
}
