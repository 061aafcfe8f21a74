package kube_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/plancore/plancore/adapters/kube"
	"github.com/plancore/plancore/adapters/kube/kubetest"
	"github.com/plancore/plancore/dag"
)

func jobTemplate(image string) *batchv1.JobTemplateSpec {
	return &batchv1.JobTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "ml"}, Annotations: map[string]string{"note": "from template"}},
		Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{
					Name: "main", Image: image, Command: []string{"run", "--all"},
					Env: []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}},
				}},
				Tolerations: []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			}},
		},
	}
}

// workflowStore keeps a workflow's status as JSON in a ConfigMap, the
// workflow object of these tests, with optimistic concurrency.
type workflowStore struct {
	c      client.Client
	writes int
}

func (s *workflowStore) write(ctx context.Context, namespace, name string, st dag.Status) error {
	var cm corev1.ConfigMap
	if err := s.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &cm); err != nil {
		return err
	}
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data["status"] = string(b)
	s.writes++
	return s.c.Update(ctx, &cm) // carries the read resourceVersion
}

func (s *workflowStore) read(ctx context.Context, namespace, name string) (dag.Status, error) {
	var cm corev1.ConfigMap
	if err := s.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &cm); err != nil {
		return dag.Status{}, err
	}
	var st dag.Status
	if raw := cm.Data["status"]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &st); err != nil {
			return dag.Status{}, err
		}
	}
	return st, nil
}

// kubeletStep advances every unfinished Job of ns by one step, writing its
// status subresource as the job controller and kubelet would: a new Job gets
// an active pod and a start time; a running one succeeds (Complete, with the
// SuccessCriteriaMet condition the 1.31 API server expects first).
func kubeletStep(ctx context.Context, c client.Client, ns string) error {
	var jobs batchv1.JobList
	if err := c.List(ctx, &jobs, client.InNamespace(ns)); err != nil {
		return err
	}
	for i := range jobs.Items {
		j := &jobs.Items[i]
		now := metav1.Now()
		switch kube.JobPhase(j) {
		case dag.JobPhasePending:
			j.Status.Active = 1
			j.Status.StartTime = &now
			ready := int32(1)
			j.Status.Ready = &ready
		case dag.JobPhaseRunning:
			zero := int32(0)
			j.Status.Active, j.Status.Succeeded, j.Status.Ready = 0, 1, &zero
			j.Status.CompletionTime = &now
			j.Status.Conditions = append(j.Status.Conditions,
				batchv1.JobCondition{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now, LastProbeTime: now},
				batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now, LastProbeTime: now})
		default:
			continue
		}
		if err := c.Status().Update(ctx, j); err != nil {
			return fmt.Errorf("job %s status: %w", j.Name, err)
		}
	}
	return nil
}

// TestJobExecutorDiamond runs a five-flow diamond (a → b, c → d → e, with c
// patched) through dag.Decide and dag.Apply against the real API server, playing
// kubelet by patching Job statuses, until the workflow Succeeds. Each job must
// appear only after its targets completed, carry the plan's labels,
// annotations and controller owner, and c must carry its patch.
func TestJobExecutorDiamond(t *testing.T) {
	env := kubetest.Shared(t)
	ctx := testCtx(t, 2*time.Minute)
	ns := env.Namespace(t)

	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pipeline"}}
	if err := env.Client.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}
	wf := dag.Workflow{Name: "pipeline", Namespace: ns, UID: owner.UID, Spec: dag.Spec{Flows: []dag.Flow{
		{Name: "a"},
		{Name: "b", DependsOn: &dag.DependsOn{Targets: []string{"a"}}},
		{Name: "c", DependsOn: &dag.DependsOn{Targets: []string{"a"}},
			Patch: json.RawMessage(`{"spec":{"template":{"spec":{"containers":[{"name":"main","image":"trainer:v2","env":[{"name":"B","value":"patched"}]}]}}}}`)},
		{Name: "d", DependsOn: &dag.DependsOn{Targets: []string{"b", "c"}}},
		{Name: "e", DependsOn: &dag.DependsOn{Targets: []string{"d"}}},
	}}}
	deps := map[string][]string{"b": {"a"}, "c": {"a"}, "d": {"b", "c"}, "e": {"d"}}
	templates := map[string]*batchv1.JobTemplateSpec{}
	for _, f := range wf.Spec.Flows {
		templates[f.Name] = jobTemplate("trainer:v1")
	}
	store := &workflowStore{c: env.Client}
	exec := &kube.JobExecutor{
		Client: env.Client, Namespace: ns, OwnerAPIVersion: "v1", OwnerKind: "ConfigMap",
		Template: func(_ context.Context, ref dag.TemplateRef) (*batchv1.JobTemplateSpec, error) {
			if ref.Namespace != ns {
				return nil, fmt.Errorf("template namespace %s", ref.Namespace)
			}
			return templates[ref.Name], nil
		},
		Status: store.write,
	}

	phase, created := driveDiamond(ctx, t, env, wf, exec, store, deps)
	if phase != dag.PhaseSucceed {
		t.Fatalf("workflow phase %q after 30 rounds, want Succeed", phase)
	}
	if len(created) != 5 {
		t.Fatalf("created flows %v, want all five", created)
	}
	// a, then b and c together, then d, then e: each wave waits two kubelet
	// steps (start, complete).
	if !(created["a"] < created["b"] && created["b"] == created["c"] && created["c"] < created["d"] && created["d"] < created["e"]) {
		t.Errorf("creation rounds %v, want a < b = c < d < e", created)
	}
	st, err := store.read(ctx, ns, wf.Name)
	if err != nil {
		t.Fatal(err)
	}
	if st.State.Phase != dag.PhaseSucceed || len(st.CompletedJobs) != 5 {
		t.Errorf("stored status: phase %q, completed %v", st.State.Phase, st.CompletedJobs)
	}

	checkDiamondJobs(ctx, t, env, ns, owner.UID, templates)
}

// driveDiamond plans and applies the workflow round by round, playing
// kubelet between rounds, until it Succeeds (or 30 rounds), checking that no
// job is created before its targets completed. It returns the last phase
// and the round each flow's job was created in.
func driveDiamond(ctx context.Context, t *testing.T, env *kubetest.Env, wf dag.Workflow, exec *kube.JobExecutor, store *workflowStore,
	deps map[string][]string) (dag.Phase, map[string]int) {
	t.Helper()
	ns := wf.Namespace
	var phase dag.Phase
	created := map[string]int{} // flow -> round first seen
	for round := 0; round < 30 && phase != dag.PhaseSucceed; round++ {
		st, err := store.read(ctx, ns, wf.Name)
		if err != nil {
			t.Fatal(err)
		}
		wf.Status = st
		jobs, err := kube.ObserveJobs(ctx, env.Client, wf)
		if err != nil {
			t.Fatal(err)
		}
		completed := map[string]bool{}
		for _, j := range jobs {
			if j.Phase == dag.JobPhaseCompleted {
				completed[strings.TrimPrefix(j.Name, "pipeline-")] = true
			}
		}
		res, err := dag.Decide(dag.Snapshot{Flow: wf, Jobs: jobs, Now: time.Now()}, dag.Default())
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range res.Create {
			for _, d := range deps[c.Flow] {
				if !completed[d] {
					t.Errorf("round %d: %s created before its target %s completed", round, c.Flow, d)
				}
			}
			created[c.Flow] = round
		}
		if _, err := dag.Apply(ctx, res, exec); err != nil {
			t.Fatalf("round %d: apply: %v", round, err)
		}
		phase = res.Status.State.Phase
		if err := kubeletStep(ctx, env.Client, ns); err != nil {
			t.Fatal(err)
		}
	}
	return phase, created
}

// checkDiamondJobs checks the patched job c (owner, labels, annotations,
// patched container, template left alone) and the unpatched job b.
func checkDiamondJobs(ctx context.Context, t *testing.T, env *kubetest.Env, ns string, ownerUID types.UID, templates map[string]*batchv1.JobTemplateSpec) {
	t.Helper()
	var c batchv1.Job
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pipeline-c"}, &c); err != nil {
		t.Fatal(err)
	}
	yes := true
	wantOwner := []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "pipeline", UID: ownerUID, Controller: &yes, BlockOwnerDeletion: &yes}}
	if diff := cmp.Diff(wantOwner, c.OwnerReferences); diff != "" {
		t.Errorf("owner references (-want +got):\n%s", diff)
	}
	wantLabels := map[string]string{"team": "ml", dag.LabelCreatedByJobFlow: ns + ".pipeline", dag.LabelCreatedByJobTemplate: ns + ".c"}
	if diff := cmp.Diff(wantLabels, c.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if c.Annotations["note"] != "from template" || c.Annotations[dag.LabelCreatedByJobFlow] != ns+".pipeline" {
		t.Errorf("annotations %v", c.Annotations)
	}
	main := c.Spec.Template.Spec.Containers[0]
	wantEnv := []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "patched"}}
	if main.Image != "trainer:v2" || !cmp.Equal(wantEnv, main.Env) || !slices.Equal(main.Command, []string{"run", "--all"}) {
		t.Errorf("patched container: image %q env %v command %v", main.Image, main.Env, main.Command)
	}
	if templates["c"].Spec.Template.Spec.Containers[0].Image != "trainer:v1" {
		t.Error("the cached template was modified by the patch")
	}
	var b batchv1.Job
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pipeline-b"}, &b); err != nil {
		t.Fatal(err)
	}
	if img := b.Spec.Template.Spec.Containers[0].Image; img != "trainer:v1" {
		t.Errorf("unpatched flow b has image %q", img)
	}
}

// TestJobExecutorIdempotence checks the executor's contract at the edges:
// AlreadyExists and NotFound map to dag's sentinels, a stale UID precondition
// protects a re-created job, a missing template is ErrNoTemplate, an executor
// confined to one Namespace refuses another, and the Created event reaches the
// API server.
func TestJobExecutorIdempotence(t *testing.T) {
	env := kubetest.Shared(t)
	ctx := testCtx(t, time.Minute)
	ns := env.Namespace(t)
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	bc := record.NewBroadcaster()
	bc.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events(ns)})
	defer bc.Shutdown()
	exec := &kube.JobExecutor{
		Client: env.Client, Namespace: ns,
		Template: func(_ context.Context, ref dag.TemplateRef) (*batchv1.JobTemplateSpec, error) {
			if ref.Name == "missing" {
				return nil, nil
			}
			return jobTemplate("img"), nil
		},
		Recorder: bc.NewRecorder(env.Scheme, corev1.EventSource{Component: "plancore-dag"}),
	}
	yes := true
	create := dag.CreateJob{Flow: "x", Name: "wf-x", Namespace: ns, Template: dag.TemplateRef{Namespace: ns, Name: "x"},
		Owner: metav1.OwnerReference{APIVersion: "flow.volcano.sh/v1alpha1", Kind: "JobFlow", Name: "wf", UID: "wf-uid", Controller: &yes}}
	if err := exec.CreateJob(ctx, create); err != nil {
		t.Fatal(err)
	}
	if err := exec.CreateJob(ctx, create); !errors.Is(err, dag.ErrAlreadyExists) {
		t.Fatalf("second create: %v, want dag.ErrAlreadyExists", err)
	}
	missing := create
	missing.Name, missing.Template.Name = "wf-missing", "missing"
	if err := exec.CreateJob(ctx, missing); !errors.Is(err, kube.ErrNoTemplate) {
		t.Fatalf("create without template: %v, want ErrNoTemplate", err)
	}
	other := create
	other.Namespace = "elsewhere"
	if err := exec.CreateJob(ctx, other); err == nil {
		t.Fatal("create in another namespace succeeded")
	}
	if err := exec.DeleteJob(ctx, dag.DeleteJob{Name: "wf-x", Namespace: "elsewhere"}); err == nil || errors.Is(err, dag.ErrNotFound) {
		t.Fatalf("delete in another namespace: %v, want a refusal that is not dag.ErrNotFound", err)
	}

	var job batchv1.Job
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "wf-x"}, &job); err != nil {
		t.Fatal(err)
	}
	err = exec.DeleteJob(ctx, dag.DeleteJob{Flow: "x", Name: "wf-x", UID: "not-" + job.UID, Reason: dag.Reason{Code: dag.ReasonRetry}})
	if !apierrors.IsConflict(err) || errors.Is(err, dag.ErrNotFound) {
		t.Fatalf("delete with a stale UID: %v, want a Conflict that is not ErrNotFound", err)
	}
	if err := exec.DeleteJob(ctx, dag.DeleteJob{Flow: "x", Name: "wf-x", UID: job.UID, Reason: dag.Reason{Code: dag.ReasonRetry}}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := exec.DeleteJob(ctx, dag.DeleteJob{Flow: "x", Name: "wf-x", Reason: dag.Reason{Code: dag.ReasonRetention}}); !errors.Is(err, dag.ErrNotFound) {
		t.Fatalf("delete of a deleted job: %v, want dag.ErrNotFound", err)
	}
	if err := exec.UpdateStatus(ctx, ns, "wf", dag.Status{}); err == nil {
		t.Fatal("UpdateStatus without a Status writer succeeded")
	}

	// The event is recorded asynchronously; poll for it.
	deadline := time.Now().Add(20 * time.Second)
	for {
		events, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		found := slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
			return e.Reason == "Created" && e.Message == "create a job named wf-x!" && e.InvolvedObject.Kind == "JobFlow" && e.InvolvedObject.Name == "wf"
		})
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no Created event on the workflow; events: %v", events.Items)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestMergeJobTemplate(t *testing.T) {
	base := jobTemplate("img:1")
	base.Spec.Template.Spec.Tolerations = append(base.Spec.Template.Spec.Tolerations, corev1.Toleration{Key: "spot", Operator: corev1.TolerationOpEqual, Value: "yes"})
	orig := base.DeepCopy()
	for _, tc := range []struct {
		name  string
		patch string
		edit  func(*batchv1.JobTemplateSpec)
		err   bool
	}{
		{name: "empty object changes nothing", patch: `{}`, edit: func(*batchv1.JobTemplateSpec) {}},
		{name: "scalar replaces", patch: `{"spec":{"backoffLimit":7}}`, edit: func(t *batchv1.JobTemplateSpec) {
			n := int32(7)
			t.Spec.BackoffLimit = &n
		}},
		{name: "container and env merge by name, command replaced whole",
			patch: `{"spec":{"template":{"spec":{"containers":[{"name":"main","command":["eval"],"env":[{"name":"C","value":"3"},{"name":"A","value":"9"}]},{"name":"side","image":"s"}]}}}}`,
			edit: func(t *batchv1.JobTemplateSpec) {
				c := &t.Spec.Template.Spec.Containers[0]
				c.Command = []string{"eval"}
				// Matched variables keep the template's order; new ones follow.
				c.Env = []corev1.EnvVar{{Name: "A", Value: "9"}, {Name: "B", Value: "2"}, {Name: "C", Value: "3"}}
				t.Spec.Template.Spec.Containers = append(t.Spec.Template.Spec.Containers, corev1.Container{Name: "side", Image: "s"})
			}},
		{name: "null removes a field", patch: `{"metadata":{"annotations":{"note":null}}}`, edit: func(t *batchv1.JobTemplateSpec) {
			t.Annotations = map[string]string{}
		}},
		{name: "tolerations merge by key; a key-less one is added",
			patch: `{"spec":{"template":{"spec":{"tolerations":[{"key":"spot","value":"no"},{"key":"gpu","effect":"NoExecute"},{"operator":"Exists"}]}}}}`,
			edit: func(t *batchv1.JobTemplateSpec) {
				ts := t.Spec.Template.Spec.Tolerations
				ts[0].Effect = corev1.TaintEffectNoExecute
				ts[1].Value = "no"
				t.Spec.Template.Spec.Tolerations = append(ts, corev1.Toleration{Operator: corev1.TolerationOpExists})
			}},
		{name: "a field the type lacks is an error", patch: `{"spec":{"template":{"spec":{"containers":[{"name":"main","imagee":"x"}]}}}}`, err: true},
		{name: "two sources in one volume is an error", patch: `{"spec":{"template":{"spec":{"volumes":[{"name":"v","emptyDir":{},"secret":{}}]}}}}`, err: true},
		{name: "not an object", patch: `[1]`, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := kube.MergeJobTemplate(base, []byte(tc.patch))
			if tc.err {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := orig.DeepCopy()
			tc.edit(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(orig, base); diff != "" {
				t.Errorf("input modified (-orig +now):\n%s", diff)
			}
		})
	}
}

func TestJobPhase(t *testing.T) {
	cond := func(ty batchv1.JobConditionType, s corev1.ConditionStatus) batchv1.JobCondition {
		return batchv1.JobCondition{Type: ty, Status: s}
	}
	now := metav1.Now()
	for _, tc := range []struct {
		name string
		job  batchv1.Job
		want dag.JobPhase
	}{
		{"new", batchv1.Job{}, dag.JobPhasePending},
		{"active", batchv1.Job{Status: batchv1.JobStatus{Active: 2}}, dag.JobPhaseRunning},
		{"complete", batchv1.Job{Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet, "True"), cond(batchv1.JobComplete, "True")}}}, dag.JobPhaseCompleted},
		{"failed", batchv1.Job{Status: batchv1.JobStatus{Active: 1, Conditions: []batchv1.JobCondition{cond(batchv1.JobFailed, "True")}}}, dag.JobPhaseFailed},
		{"false conditions do not count", batchv1.Job{Status: batchv1.JobStatus{Active: 1, Conditions: []batchv1.JobCondition{cond(batchv1.JobFailed, "False")}}}, dag.JobPhaseRunning},
		{"success criteria met", batchv1.Job{Status: batchv1.JobStatus{Active: 1, Conditions: []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet, "True")}}}, dag.JobPhaseCompleting},
		{"failure target", batchv1.Job{Status: batchv1.JobStatus{Active: 1, Conditions: []batchv1.JobCondition{cond(batchv1.JobFailureTarget, "True")}}}, dag.JobPhaseTerminating},
		{"being deleted", batchv1.Job{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Status: batchv1.JobStatus{Active: 1}}, dag.JobPhaseTerminating},
		{"suspended", batchv1.Job{Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{cond(batchv1.JobSuspended, "True")}}}, dag.JobPhasePending},
	} {
		if got := kube.JobPhase(&tc.job); got != tc.want {
			t.Errorf("%s: JobPhase = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestJobExecutorZeroValue: a JobExecutor without a Client returns
// ErrNoClient, never panics.
func TestJobExecutorZeroValue(t *testing.T) {
	var e kube.JobExecutor
	ctx := context.Background()
	if err := e.CreateJob(ctx, dag.CreateJob{Name: "wf-a", Namespace: "ns"}); !errors.Is(err, kube.ErrNoClient) {
		t.Errorf("CreateJob: %v", err)
	}
	if err := e.DeleteJob(ctx, dag.DeleteJob{Name: "wf-a", Namespace: "ns"}); !errors.Is(err, kube.ErrNoClient) {
		t.Errorf("DeleteJob: %v", err)
	}
	if _, err := dag.Apply(ctx, dag.Plan{Create: []dag.CreateJob{{Name: "wf-a", Namespace: "ns"}}}, &e); !errors.Is(err, kube.ErrNoClient) {
		t.Errorf("Apply: %v", err)
	}
}
