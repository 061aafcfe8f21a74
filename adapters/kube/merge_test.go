package kube_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/plancore/plancore/adapters/kube"
	"github.com/plancore/plancore/adapters/kube/kubetest"
	"github.com/plancore/plancore/dag/patch"
)

// mergeTable is dag/patch's testdata/merge.json: a batch/v1 JobTemplateSpec
// and patches of it (dag/patch checks the merged values; here the two paths
// are compared).
type mergeTable struct {
	BatchTemplate json.RawMessage `json:"batchTemplate"`
	Cases         []struct {
		Name  string          `json:"name"`
		Patch json.RawMessage `json:"patch"`
	} `json:"cases"`
}

func readMergeTable(t testing.TB) mergeTable {
	t.Helper()
	raw, err := os.ReadFile("../../dag/patch/testdata/merge.json")
	if err != nil {
		t.Fatal(err)
	}
	var table mergeTable
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	return table
}

// genericMerge is the untyped path: patch.Merge on the template's own JSON,
// decoded into the type afterwards.
func genericMerge(t testing.TB, tmpl, p []byte) *batchv1.JobTemplateSpec {
	t.Helper()
	merged, err := patch.Merge(tmpl, p)
	if err != nil {
		t.Fatalf("patch.Merge: %v", err)
	}
	out := &batchv1.JobTemplateSpec{}
	if err := json.Unmarshal(merged, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMergeDifferential runs every patch of dag/patch's table through
// patch.Merge on the template's JSON and through the adapter's typed path
// (MergeJobTemplate on the decoded template), asserts identical objects,
// and has the API server validate each merged Job (a dry-run create).
func TestMergeDifferential(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	ctx := testCtx(t, time.Minute)
	table := readMergeTable(t)
	var typed batchv1.JobTemplateSpec
	if err := json.Unmarshal(table.BatchTemplate, &typed); err != nil {
		t.Fatal(err)
	}
	for i, tc := range table.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			want := genericMerge(t, table.BatchTemplate, tc.Patch)
			got, err := kube.MergeJobTemplate(&typed, tc.Patch)
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(want, got) {
				w, _ := json.Marshal(want)
				g, _ := json.Marshal(got)
				t.Fatalf("the two paths differ:\npatch.Merge     %s\nMergeJobTemplate %s", w, g)
			}
			job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("diff-%d", i), Namespace: ns, Labels: got.Labels}, Spec: got.Spec}
			if err := env.Client.Create(ctx, job, client.DryRunAll); err != nil {
				t.Fatalf("the API server refuses the merged Job: %v", err)
			}
		})
	}
}

// podPatch draws a patch of the table's template that a correct merge
// turns into a valid Job: containers, env (value or valueFrom), ports,
// mounts of volumes that exist, probes, volumes with one source each,
// tolerations (key-less ones too), host aliases, pull secrets, affinity and
// security context.
func podPatch(t *rapid.T) map[string]any {
	spec := map[string]any{}
	volumes := map[string]bool{"data": true, "conf": true}
	if rapid.Bool().Draw(t, "volumes?") {
		var items []any
		for _, name := range rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"data", "conf", "cache"}), 1, 3, rapid.ID[string]).Draw(t, "volumes") {
			volumes[name] = true
			src := rapid.SampledFrom([]string{`{"emptyDir":{}}`, `{"configMap":{"name":"c"}}`, `{"secret":{"secretName":"s"}}`, `{"hostPath":{"path":"/tmp"}}`}).Draw(t, "source")
			items = append(items, withName(src, "name", name))
		}
		spec["volumes"] = items
	}
	var containers []any
	for _, name := range rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"main", "side", "extra"}), 0, 2, rapid.ID[string]).Draw(t, "containers") {
		c := map[string]any{"name": name}
		if name != "main" || rapid.Bool().Draw(t, "image?") {
			c["image"] = "img:" + rapid.SampledFrom([]string{"1", "2"}).Draw(t, "tag")
		}
		if rapid.Bool().Draw(t, "env?") {
			var env []any
			for _, n := range rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"A", "POD", "B"}), 1, 3, rapid.ID[string]).Draw(t, "env") {
				v := rapid.SampledFrom([]string{`{"value":"v"}`, `{"valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}}`, `{"valueFrom":{"secretKeyRef":{"name":"s","key":"k"}}}`}).Draw(t, "envValue")
				env = append(env, withName(v, "name", n))
			}
			c["env"] = env
		}
		if rapid.Bool().Draw(t, "ports?") {
			var ports []any
			for _, port := range rapid.SliceOfNDistinct(rapid.SampledFrom([]string{`{"containerPort":8080}`, `{"containerPort":8080,"protocol":"TCP"}`, `{"containerPort":8080,"protocol":"UDP"}`, `{"containerPort":9090}`}), 1, 2, rapid.ID[string]).Draw(t, "ports") {
				ports = append(ports, decode(port))
			}
			c["ports"] = ports
		}
		if rapid.Bool().Draw(t, "mounts?") {
			var names []string
			for n := range volumes {
				names = append(names, n)
			}
			var mounts []any
			for _, path := range rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"/data", "/cache", "/x"}), 1, 3, rapid.ID[string]).Draw(t, "mounts") {
				m := map[string]any{"mountPath": path, "name": rapid.SampledFrom(sorted(names)).Draw(t, "mountVolume")}
				mounts = append(mounts, m)
			}
			c["volumeMounts"] = mounts
		}
		if rapid.Bool().Draw(t, "probe?") {
			probes := []string{`{"exec":{"command":["true"]}}`, `{"tcpSocket":{"port":8080}}`, `{"httpGet":{"path":"/","port":8080}}`}
			if name == "main" { // only a probe the template has may come without a handler
				probes = append(probes, `{"periodSeconds":3}`)
			}
			c["livenessProbe"] = decode(rapid.SampledFrom(probes).Draw(t, "probe"))
		}
		containers = append(containers, c)
	}
	if containers != nil {
		spec["containers"] = containers
	}
	if rapid.Bool().Draw(t, "tolerations?") {
		var ts []any
		// One toleration a key: two of one key merge into one, and
		// tolerationSeconds with effect NoSchedule is no valid toleration.
		key := func(s string) string { k, _ := decode(s)["key"].(string); return k }
		for _, tol := range rapid.SliceOfNDistinct(rapid.SampledFrom([]string{`{"operator":"Exists"}`, `{"key":"gpu","operator":"Exists","effect":"NoSchedule"}`, `{"key":"gpu","operator":"Exists","effect":"NoExecute","tolerationSeconds":30}`, `{"key":"spot","value":"yes","effect":"NoSchedule"}`}), 1, 3, key).Draw(t, "tolerations") {
			ts = append(ts, decode(tol))
		}
		spec["tolerations"] = ts
	}
	if rapid.Bool().Draw(t, "hostAliases?") {
		spec["hostAliases"] = []any{decode(rapid.SampledFrom([]string{`{"ip":"10.0.0.1","hostnames":["db2"]}`, `{"ip":"10.0.0.2","hostnames":["cache"]}`}).Draw(t, "alias"))}
	}
	if rapid.Bool().Draw(t, "pullSecrets?") {
		spec["imagePullSecrets"] = []any{map[string]any{"name": rapid.SampledFrom([]string{"reg", "reg2"}).Draw(t, "secret")}}
	}
	if rapid.Bool().Draw(t, "affinity?") {
		spec["affinity"] = decode(`{"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"topologyKey":"kubernetes.io/hostname","labelSelector":{"matchLabels":{"app":"train"}}}]}}`)
	}
	if rapid.Bool().Draw(t, "securityContext?") {
		spec["securityContext"] = map[string]any{"runAsUser": rapid.IntRange(1, 5000).Draw(t, "uid")}
	}
	return map[string]any{"spec": map[string]any{"template": map[string]any{"spec": spec}}}
}

func decode(s string) map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		panic(err)
	}
	return m
}

func withName(s, field, name string) map[string]any {
	m := decode(s)
	m[field] = name
	return m
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if strings.Compare(out[j], out[i]) < 0 {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// TestMergedJobsPassValidation: a valid template merged with any patch of
// podPatch passes the API server's validation (a dry-run create on envtest),
// and both merge paths agree. Fails if one-of members are merged field by
// field (a volume with two sources, env with value and valueFrom, a probe
// with two handlers) or mounts are keyed by name (two mounts on one path).
func TestMergedJobsPassValidation(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	ctx := testCtx(t, 10*time.Minute)
	table := readMergeTable(t)
	var typed batchv1.JobTemplateSpec
	if err := json.Unmarshal(table.BatchTemplate, &typed); err != nil {
		t.Fatal(err)
	}
	n := 0
	rapid.Check(t, func(rt *rapid.T) {
		p, _ := json.Marshal(podPatch(rt))
		got, err := kube.MergeJobTemplate(&typed, p)
		if err != nil {
			rt.Fatalf("MergeJobTemplate(%s): %v", p, err)
		}
		if want := genericMerge(t, table.BatchTemplate, p); !equality.Semantic.DeepEqual(want, got) {
			rt.Fatalf("the two paths differ on %s", p)
		}
		n++
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("prop-%d", n), Namespace: ns}, Spec: got.Spec}
		if err := env.Client.Create(ctx, job, client.DryRunAll); err != nil {
			merged, _ := json.Marshal(got.Spec.Template.Spec)
			rt.Fatalf("the API server refuses the merged Job: %v\npatch %s\nmerged pod spec %s", err, p, merged)
		}
	})
}

// BenchmarkMergeJobTemplate10000Containers merges a patch of 10,000
// containers, each matching one of the template's 10,000, through the
// adapter's typed path.
func BenchmarkMergeJobTemplate10000Containers(b *testing.B) {
	t := &batchv1.JobTemplateSpec{}
	var items []any
	for i := range 10000 {
		name := fmt.Sprintf("c%d", i)
		t.Spec.Template.Spec.Containers = append(t.Spec.Template.Spec.Containers, corev1.Container{Name: name, Image: "img:1"})
		items = append(items, map[string]any{"name": name, "image": "img:2"})
	}
	p, _ := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": items}}}})
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := kube.MergeJobTemplate(t, p); err != nil {
			b.Fatal(err)
		}
	}
}
