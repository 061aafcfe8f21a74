package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/plancore/plancore/adapters/kube"
	"github.com/plancore/plancore/dag"
)

// TestRun runs the example controller end to end against a real API server
// and checks the Jobs it created, their order (the example's own record),
// the merged patch, the final status and what it printed.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out bytes.Buffer
	o, err := run(ctx, &out)
	if err != nil {
		t.Fatalf("%v\noutput so far:\n%s", err, out.String())
	}

	// Order: prepare, then the diamond's two sides in spec order, train-b's
	// retry after its failure, then evaluate, publish and the finally flow.
	wantCreated := []string{"train-prepare#1", "train-train-a#1", "train-train-b#1", "train-train-b#2",
		"train-evaluate#1", "train-publish#1", "train-report#1"}
	if !slices.Equal(o.Created, wantCreated) {
		t.Errorf("created %v, want %v", o.Created, wantCreated)
	}

	// The Jobs on the API server: one per flow, each complete, owned by the
	// JobFlow, labelled as Volcano labels them; train-a carries its patch.
	wantJobs := []string{"train-evaluate", "train-prepare", "train-publish", "train-report", "train-train-a", "train-train-b"}
	var names []string
	for i := range o.Jobs {
		j := &o.Jobs[i]
		names = append(names, j.Name)
		if ph := kube.JobPhase(j); ph != dag.JobPhaseCompleted {
			t.Errorf("job %s: phase %s, want Completed", j.Name, ph)
		}
		if len(j.OwnerReferences) != 1 || j.OwnerReferences[0].Kind != "JobFlow" || j.OwnerReferences[0].Name != "train" {
			t.Errorf("job %s: owner references %v, want the JobFlow train", j.Name, j.OwnerReferences)
		}
		if got := j.Labels[dag.LabelCreatedByJobFlow]; got != "default.train" {
			t.Errorf("job %s: label %s=%q", j.Name, dag.LabelCreatedByJobFlow, got)
		}
		env := j.Spec.Template.Spec.Containers[0].Env
		wantEnv := []corev1.EnvVar(nil)
		if j.Name == "train-train-a" {
			wantEnv = []corev1.EnvVar{{Name: "LEARNING_RATE", Value: "0.01"}}
		}
		if !slices.Equal(env, wantEnv) {
			t.Errorf("job %s: env %v, want %v", j.Name, env, wantEnv)
		}
		if a := j.Annotations["plancore.io/attempt"]; j.Name == "train-train-b" && a != "2" {
			t.Errorf("job %s: attempt annotation %q, want 2 (the retry)", j.Name, a)
		}
	}
	if !slices.Equal(names, wantJobs) {
		t.Errorf("jobs on the API server %v, want %v", names, wantJobs)
	}

	// The status subresource.
	st := o.Status
	if st.State.Phase != dag.PhaseSucceed {
		t.Errorf("phase %q, want Succeed", st.State.Phase)
	}
	wantCompleted := []string{"train-prepare", "train-train-a", "train-train-b", "train-evaluate", "train-publish", "train-report"}
	if !slices.Equal(st.CompletedJobs, wantCompleted) {
		t.Errorf("completedJobs %v, want %v", st.CompletedJobs, wantCompleted)
	}
	if n := len(st.FailedJobs) + len(st.RunningJobs) + len(st.PendingJobs); n != 0 {
		t.Errorf("failed/running/pending jobs left: %v %v %v", st.FailedJobs, st.RunningJobs, st.PendingJobs)
	}
	for _, e := range st.JobStatusList {
		if e.Outcome != dag.OutcomeSucceeded {
			t.Errorf("jobStatusList %s: outcome %q, want Succeeded", e.Name, e.Outcome)
		}
		if want := map[bool]int{true: 2, false: 1}[e.Name == "train-train-b"]; e.Attempt != want {
			t.Errorf("jobStatusList %s: attempt %d, want %d", e.Name, e.Attempt, want)
		}
	}

	// An invalid JobFlow is a terminal error: controller-runtime would not
	// requeue it.
	if !strings.Contains(out.String(), "\ninvalid JobFlow refused at [spec.plancoreRetry.maxRetry]; requeued: false\n") {
		t.Errorf("output does not start with the terminal refusal of the invalid JobFlow:\n%s", out.String())
	}

	// The recorder's events reached the API server: jobs created for their
	// dependencies, the retry (its delete and its create) and the finally
	// flow; nothing needed a person, and waiting flows record none.
	wantEvents := []string{"Normal DependenciesMet", "Normal Finally", "Normal Retry"}
	if !slices.Equal(o.Events, wantEvents) {
		t.Errorf("events on the JobFlow %v, want %v", o.Events, wantEvents)
	}

	// The output says that the example, not a kubelet, finished the Jobs.
	if !strings.Contains(out.String(), "this example marks each Job finished itself") ||
		!strings.Contains(out.String(), "stand-in kubelet: marked job train-train-b Failed\n") {
		t.Errorf("output does not say who finished the Jobs:\n%s", out.String())
	}
	if !strings.HasSuffix(out.String(), "jobflow train: phase Succeed, completed jobs [train-prepare train-train-a train-train-b train-evaluate train-publish train-report]\n") {
		t.Errorf("output does not end with the final status:\n%s", out.String())
	}
}
