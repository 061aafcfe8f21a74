package dag_test

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/plancore/plancore"
	"github.com/plancore/plancore/dag"
)

// Shapes of the JobFlow objects in Volcano's repository (a chain with a
// fan-in and the delete retain policy; a probe on a parameter server; a
// per-flow patch), written here for these tests.
const (
	jobFlowChainYAML = `
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata:
  name: pipeline
  namespace: batch
spec:
  jobRetainPolicy: delete
  flows:
    - name: fetch
    - name: clean
      dependsOn:
        targets: ['fetch']
    - name: split
      dependsOn:
        targets: ['fetch']
    - name: train
      dependsOn:
        targets: ['clean', 'split']
`
	jobFlowProbeYAML = `
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata:
  name: ps-workers
  namespace: default
  uid: 0b8c-11
spec:
  flows:
    - name: ps
    - name: workers
      dependsOn:
        targets: [ps]
        probe:
          httpGetList:
            - taskName: ps
              path: /healthz
              port: 8080
              httpHeader: {name: X-Check, value: "1"}
          tcpSocketList:
            - taskName: ps
              port: 2222
          taskStatusList:
            - taskName: ps
              phase: Running
    - name: report
      dependsOn:
        targetsWithStatus:
          - name: workers
            phase: Failed
`
	jobFlowPatchJSON = `{
  "apiVersion": "flow.volcano.sh/v1alpha1",
  "kind": "JobFlow",
  "metadata": {"name": "experiments", "namespace": "training"},
  "spec": {
    "flows": [
      {"name": "ml-task", "patch": {"spec": {"tasks": [{"name": "ml-task", "template": {"spec": {"containers": [ {"name": "cnn", "image": "cnn:v2"} ]}}}]}}},
      {"name": "eval", "dependsOn": {"plancoreDepends": "ml-task.Failed || ml-task"}, "plancoreRetry": {"limit": 2, "backoff": {"duration": "1s"}}}
    ],
    "plancoreFinally": [{"name": "notify"}],
    "plancoreParallelism": 1,
    "plancoreFailFast": false
  },
  "status": {"state": {"phase": "Running"}, "runningJobs": ["experiments-ml-task"],
    "jobStatusList": [{"name": "experiments-ml-task", "state": "Running", "startTimestamp": "2026-01-02T03:04:05Z", "endTimestamp": null,
      "runningHistories": [{"startTimestamp": "2026-01-02T03:04:05Z", "endTimestamp": null, "state": "Running"}]}],
    "conditions": {"experiments-ml-task": {"phase": "Running", "createTime": "2026-01-02T03:04:05Z", "taskStatusCount": {"ml-task": {"phase": {"Running": 1}}}}}}
}`
)

// TestDecodeJobFlow decodes each shape, checks what it read, and checks
// that decode -> encode -> decode gives the same Workflow.
func TestDecodeJobFlow(t *testing.T) {
	no := false
	cases := []struct {
		name  string
		data  string
		check func(t *testing.T, w dag.Workflow)
	}{
		{"chain with fan-in", jobFlowChainYAML, func(t *testing.T, w dag.Workflow) {
			want := dag.Workflow{Name: "pipeline", Namespace: "batch", Spec: dag.Spec{JobRetainPolicy: dag.RetainPolicyDelete, Flows: []dag.Flow{
				fl("fetch"), fl("clean", "fetch"), fl("split", "fetch"), fl("train", "clean", "split")}}}
			if d := cmp.Diff(want, w); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
			if err := dag.Check(w, dag.Options{}); err != nil {
				t.Errorf("Check: %v", err)
			}
		}},
		{"probe lists", jobFlowProbeYAML, func(t *testing.T, w dag.Workflow) {
			p := w.Spec.Flows[1].DependsOn.Probe
			want := &dag.Probe{
				HTTPGet:    []dag.HTTPGetProbe{{Task: "ps", Path: "/healthz", Port: 8080, Header: &dag.HTTPHeader{Name: "X-Check", Value: "1"}}},
				TCPSocket:  []dag.TCPSocketProbe{{Task: "ps", Port: 2222}},
				TaskStatus: []dag.TaskStatusProbe{{Task: "ps", Phase: "Running"}},
			}
			if d := cmp.Diff(want, p); d != "" {
				t.Errorf("probe (-want +got):\n%s", d)
			}
			if w.UID != "0b8c-11" || w.Spec.Flows[2].DependsOn.TargetsWithStatus[0] != (dag.TargetStatus{Name: "workers", Phase: "Failed"}) {
				t.Errorf("uid or targetsWithStatus: %+v", w)
			}
		}},
		{"patch, extensions and status", jobFlowPatchJSON, func(t *testing.T, w dag.Workflow) {
			if got := string(w.Spec.Flows[0].Patch); got != `{"spec":{"tasks":[{"name":"ml-task","template":{"spec":{"containers":[{"name":"cnn","image":"cnn:v2"}]}}}]}}` {
				t.Errorf("patch %s", got)
			}
			s := w.Spec
			if s.Parallelism != 1 || s.FailFast == nil || *s.FailFast != no || len(s.Finally) != 1 || s.Flows[1].Retry.Limit != 2 || s.Flows[1].DependsOn.Depends == "" {
				t.Errorf("extensions: %+v", s)
			}
			if w.Status.State.Phase != dag.PhaseRunning || w.Status.Conditions["experiments-ml-task"].TaskStatusCount["ml-task"].Phase["Running"] != 1 {
				t.Errorf("status: %+v", w.Status)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, err := dag.DecodeJobFlow([]byte(tc.data))
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, w)
			roundTrip(t, w)
		})
	}
}

// roundTrip checks decode -> encode -> decode: the same Workflow (a nil
// list and an empty one being equal, as omitempty writes neither) and the
// same bytes when encoded again.
func roundTrip(t testing.TB, w dag.Workflow) {
	t.Helper()
	b, err := dag.EncodeJobFlow(w)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	again, err := dag.DecodeJobFlow(b)
	if err != nil {
		t.Fatalf("decode of %s: %v", b, err)
	}
	if d := cmp.Diff(w, again, cmpopts.EquateEmpty()); d != "" {
		t.Fatalf("decode(encode(w)) differs (-w +again):\n%s", d)
	}
	b2, err := dag.EncodeJobFlow(again)
	if err != nil || !bytes.Equal(b, b2) {
		t.Fatalf("encodings differ (%v):\n%s\n%s", err, b, b2)
	}
}

// TestDecodeJobFlowRefuses names every unknown field by its path, all at
// once, and refuses another kind.
func TestDecodeJobFlowRefuses(t *testing.T) {
	cases := []struct {
		name   string
		data   string
		fields []string
	}{
		{"unknown fields everywhere", `
kind: JobFlow
metadata: {name: x, labelz: {}}
spec:
  flow: []
  flows:
    - name: a
      dependsOn: {target: [b]}
    - name: b
      dependsOn:
        targets: [a]
        probe: {taskStatusList: [{taskName: t, phase: Running, count: 1}]}
`, []string{"metadata.labelz", "spec.flow", "spec.flows[0].dependsOn.target", "spec.flows[1].dependsOn.probe.taskStatusList[0].count"}},
		{"case matters", `{"spec": {"Flows": [{"Name": "a"}]}}`, []string{"spec.Flows"}},
		{"another kind", `{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job"}`, []string{"apiVersion", "kind"}},
		{"wrong type", `{"spec": {"flows": [{"name": 3}]}}`, []string{"spec.flows[0].name"}},
		{"not an object", `[1, 2]`, []string{"jobFlow"}},
		{"a bad duration and timestamp, by path", `{"spec": {"flows": [{"name": "a", "plancoreRetry": {"backoff": {"duration": "soon"}}}]},
			"status": {"jobStatusList": [{"name": "x", "startTimestamp": "yesterday"}]}}`,
			[]string{"spec.flows[0].plancoreRetry.backoff.duration", "status.jobStatusList[0].startTimestamp"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := dag.DecodeJobFlow([]byte(tc.data))
			var inv *plancore.InvalidError
			if !errors.Is(err, dag.ErrInvalidInput) || !errors.As(err, &inv) {
				t.Fatalf("err = %v, want an InvalidError wrapping ErrInvalidInput", err)
			}
			if d := cmp.Diff(tc.fields, inv.Fields()); d != "" {
				t.Errorf("fields (-want +got):\n%s\n%v", d, err)
			}
		})
	}
}

// FuzzDecodeJobFlow: the decoder never panics, and whatever it accepts
// survives encode -> decode unchanged.
func FuzzDecodeJobFlow(f *testing.F) {
	for _, s := range []string{jobFlowChainYAML, jobFlowProbeYAML, jobFlowPatchJSON, `{}`, `spec: {flows: [{name: a, patch: " {} "}]}`,
		// An alias bomb in small, duplicate keys, a second document, an
		// alias inside its own anchor, a bad duration.
		"spec: {flows: [{name: &a xxxxxxxx, dependsOn: {targets: [*a, *a, *a, *a]}}]}",
		"spec: {flows: [{name: a, name: b}]}", `{"spec": {"flows": [], "flows": []}}`,
		"kind: JobFlow\n---\nkind: JobFlow\n", "spec: &a {flows: *a}", "spec: {flows: [{name: a, plancoreRetry: {backoff: {duration: soon}}}]}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := dag.DecodeJobFlow(data)
		if err != nil {
			if !errors.Is(err, dag.ErrInvalidInput) {
				t.Fatalf("error %v does not wrap ErrInvalidInput", err)
			}
			return
		}
		roundTrip(t, w)
	})
}

// TestDecodeJobFlowDurations: retry and probe durations are Kubernetes
// duration strings on the wire, both ways, and an unknown key inside them is
// still named by its path.
func TestDecodeJobFlowDurations(t *testing.T) {
	const doc = `
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: wf}
spec:
  flows:
  - name: a
  - name: b
    dependsOn:
      targets: [a]
      probe: {plancorePeriod: 15s}
    plancoreRetry: {limit: 2, backoff: {duration: 1m30s, factor: 2, cap: 5m}}
`
	wf, err := dag.DecodeJobFlow([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	b := wf.Spec.Flows[1]
	if b.Retry.Backoff.Duration != 90*time.Second || b.Retry.Backoff.Cap != 5*time.Minute || b.DependsOn.Probe.Period != 15*time.Second {
		t.Fatalf("decoded %+v, probe %+v", b.Retry.Backoff, b.DependsOn.Probe)
	}
	out, err := dag.EncodeJobFlow(wf)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"duration":"1m30s"`, `"cap":"5m0s"`, `"plancorePeriod":"15s"`} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("encoded %s, missing %s", out, want)
		}
	}
	_, err = dag.DecodeJobFlow([]byte(strings.Replace(doc, "cap: 5m", "cap: 5m, jitter: 1", 1)))
	var inv *plancore.InvalidError
	if !errors.As(err, &inv) || !slices.Contains(inv.Fields(), "spec.flows[1].plancoreRetry.backoff.jitter") {
		t.Fatalf("unknown key inside backoff: %v", err)
	}
}
