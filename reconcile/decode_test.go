package reconcile_test

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plancore/plancore/internal/invalidtest"
	"github.com/plancore/plancore/reconcile"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

func readSample(t testing.TB) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/decode/raycluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestDecodeRayCluster(t *testing.T) {
	data := readSample(t)
	c, st, err := reconcile.DecodeRayCluster(data)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "raycluster-demo" || c.Namespace != "ml" || c.UID == "" || c.Generation != 3 || c.Labels["team"] != "ml" {
		t.Errorf("metadata = %s/%s uid %q generation %d labels %v", c.Namespace, c.Name, c.UID, c.Generation, c.Labels)
	}
	checkDecodedSpec(t, c.Spec)
	if st.State != reconcile.StateReady || st.ReadyWorkerReplicas != 4 || st.ObservedGeneration != 3 ||
		!st.StateTransitionTimes[reconcile.StateReady].Time.Equal(time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("status = %+v", st)
	}
	if len(c.Conditions) != 1 || c.Conditions[0].Type != reconcile.ConditionProvisioned || c.Conditions[0].Status != metav1.ConditionTrue {
		t.Errorf("conditions = %+v", c.Conditions)
	}
	// The decoded cluster plans once the gate of its networkPolicy is on;
	// with KubeRay's default gates it is refused, as KubeRay refuses it.
	o := opts()
	if _, err := reconcile.Decide(reconcile.Snapshot{Cluster: c, Now: t0}, o); !errors.Is(err, reconcile.ErrInvalidInput) ||
		!slices.Equal(fieldsOf(t, err), []string{"spec.networkPolicy"}) {
		t.Errorf("Decide with the default gates: %v, want spec.networkPolicy refused", err)
	}
	o.Gates.NetworkPolicy = reconcile.GateOn
	if _, err := reconcile.Decide(reconcile.Snapshot{Cluster: c, Now: t0}, o); err != nil {
		t.Errorf("Decide on the decoded cluster: %v", err)
	}
	if len(c.Spec.NetworkPolicy) == 0 {
		t.Error("networkPolicy was not kept")
	}
	// JSON decodes to the same.
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	c2, st2, err := reconcile.DecodeRayCluster(js)
	if err != nil || c2.Name != c.Name || len(c2.Spec.WorkerGroups) != 2 || st2.State != st.State {
		t.Errorf("JSON: %+v, %v", c2, err)
	}
}

// Every unknown field is named by its path, all at once; type errors, a
// wrong apiVersion or kind and duplicates are refused too.
func TestDecodeRayClusterRefusals(t *testing.T) {
	sample := string(readSample(t))
	edit := func(old, new string) []byte {
		if !strings.Contains(sample, old) {
			t.Fatalf("the sample has no %q", old)
		}
		return []byte(strings.Replace(sample, old, new, 1))
	}
	cases := []struct {
		name  string
		data  []byte
		paths []string
	}{
		{"unknown fields at three depths", edit("    replicas: 2\n", "    replicaz: 2\n    replicas: 2\n    shape: big\n"),
			[]string{"spec.workerGroupSpecs[0].replicaz", "spec.workerGroupSpecs[0].shape"}},
		{"unknown field in a pod template", edit("          image: rayproject/ray:2.41.0-gpu\n", "          imagee: rayproject/ray:2.41.0-gpu\n"),
			[]string{"spec.workerGroupSpecs[0].template.spec.containers[0].imagee"}},
		{"unknown field in a part plancore does not read", edit("    upscalingMode: Default\n", "    upscalingMode: Default\n    upscaleSpeed: 2\n"),
			[]string{"spec.autoscalerOptions.upscaleSpeed"}},
		{"unknown top-level and status fields", edit("status:\n", "extra: 1\nstatus:\n  phase: Running\n"),
			[]string{"extra", "status.phase"}},
		{"wrong apiVersion and kind", edit("apiVersion: ray.io/v1\nkind: RayCluster\n", "apiVersion: ray.io/v1alpha1\nkind: RayJob\n"),
			[]string{"apiVersion", "kind"}},
		{"duplicate field", []byte(`{"apiVersion":"ray.io/v1","kind":"RayCluster","metadata":{"name":"a","name":"b"}}`),
			[]string{"metadata.name"}},
		{"wrong type", edit("    replicas: 2\n", "    replicas: two\n"), []string{"spec.workerGroupSpecs[0].replicas"}},
		{"every wrong type beside unknown and duplicate fields", edit("    replicas: 2\n", "    replicas: two\n    minReplicas: 1.5\n    suspend: maybe\n    groupName: [x]\n    extra: 1\n"),
			// Duplicates in document order (the later one is named), then the
			// rest; the last of duplicate values is the one checked.
			[]string{"spec.workerGroupSpecs[0].groupName", "spec.workerGroupSpecs[0].minReplicas",
				"spec.workerGroupSpecs[0].extra", "spec.workerGroupSpecs[0].groupName", "spec.workerGroupSpecs[0].replicas", "spec.workerGroupSpecs[0].suspend"}},
		{"a bad timestamp and quantity, by path", []byte(`{"apiVersion":"ray.io/v1","kind":"RayCluster","status":{"stateTransitionTimes":{"ready":"not a time"}},` +
			`"spec":{"headGroupSpec":{"template":{"spec":{"containers":[{"name":"a","resources":{"limits":{"cpu":"two"}}}]}}}}}`),
			[]string{"spec.headGroupSpec.template.spec.containers[0].resources.limits.cpu", "status.stateTransitionTimes.ready"}},
		{"not YAML", []byte("apiVersion: [\n"), []string{"rayCluster"}},
		{"too large", []byte(strings.Repeat(" ", reconcile.MaxRayClusterBytes+1)), []string{"rayCluster"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := reconcile.DecodeRayCluster(tc.data)
			invalidtest.Check(t, err, reconcile.ErrInvalidInput, tc.paths)
		})
	}
}

// DecodeRayCluster never panics and either decodes or names what is wrong.
func FuzzDecodeRayCluster(f *testing.F) {
	f.Add(readSample(f))
	f.Add([]byte(`{"apiVersion":"ray.io/v1","kind":"RayCluster","spec":{"workerGroupSpecs":[{"groupName":"g","numOfHosts":-1}]}}`))
	f.Add([]byte("apiVersion: ray.io/v1\nkind: RayCluster\nspec: {headGroupSpec: {template: {spec: {containers: [{name: a}]}}}}\n"))
	f.Add([]byte(`{"status":{"stateTransitionTimes":{"ready":"not a time"}}}`))
	// An alias bomb in small, duplicate keys (YAML and JSON), a second
	// document, an alias inside its own anchor.
	f.Add([]byte("apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: {name: &a xxxxxxxx, labels: {a: *a, b: *a, c: *a}}\n"))
	f.Add([]byte("apiVersion: ray.io/v1\nkind: RayCluster\nkind: RayCluster\n"))
	f.Add([]byte(`{"apiVersion":"ray.io/v1","apiVersion":"ray.io/v1"}`))
	f.Add([]byte("apiVersion: ray.io/v1\n---\nkind: RayCluster\n"))
	f.Add([]byte("metadata: &a {labels: *a}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, _, err := reconcile.DecodeRayCluster(data)
		if err != nil {
			invalidtest.Fields(t, err) // a field list, never a bare error
			return
		}
		_, _ = reconcile.Decide(reconcile.Snapshot{Cluster: c, Now: t0}, opts())
	})
}

// checkDecodedSpec compares the sample's spec field by field.
func checkDecodedSpec(t *testing.T, sp reconcile.ClusterSpec) {
	t.Helper()
	if sp.RayVersion != "2.41.0" || sp.EnableInTreeAutoscaling == nil || !*sp.EnableInTreeAutoscaling ||
		sp.GcsFaultToleranceOptions == nil || sp.GcsFaultToleranceOptions.RedisAddress != "redis:6379" ||
		sp.UpgradeStrategy == nil || *sp.UpgradeStrategy.Type != "Recreate" ||
		sp.HeadGroup.RayStartParams["dashboard-host"] != "0.0.0.0" || sp.HeadGroup.Template.Spec.Containers[0].Image != "rayproject/ray:2.41.0" {
		t.Errorf("spec = %+v", sp)
	}
	if len(sp.WorkerGroups) != 2 {
		t.Fatalf("%d worker groups, want 2", len(sp.WorkerGroups))
	}
	gpu, cpu := sp.WorkerGroups[0], sp.WorkerGroups[1]
	if gpu.GroupName != "gpu" || *gpu.Replicas != 2 || *gpu.MinReplicas != 1 || *gpu.MaxReplicas != 4 || gpu.NumOfHosts != 2 ||
		len(gpu.ScaleStrategy.WorkersToDelete) != 1 || gpu.RayStartParams == nil || gpu.IdleTimeoutSeconds == nil || *gpu.IdleTimeoutSeconds != 120 {
		t.Errorf("gpu group = %+v", gpu)
	}
	if a := sp.AutoscalerOptions; a == nil || a.Version == nil || *a.Version != "v2" || a.IdleTimeoutSeconds == nil || *a.IdleTimeoutSeconds != 60 {
		t.Errorf("autoscalerOptions = %+v", a)
	}
	if sp.HeadGroup.Labels["tier"] != "head" {
		t.Errorf("head group labels = %v", sp.HeadGroup.Labels)
	}
	if cpu.Suspend == nil || *cpu.Suspend {
		t.Errorf("cpu group suspend = %v", cpu.Suspend)
	}
}
