package patch_test

import (
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plancore/plancore/dag/patch"
)

// mergeTable is testdata/merge.json: a batch/v1 JobTemplateSpec and patches
// of it, each with the values expected at JSON pointers of the merged
// template (null: absent). adapters/kube runs the same patches through its
// typed path and asserts the same objects.
type mergeTable struct {
	BatchTemplate json.RawMessage `json:"batchTemplate"`
	Cases         []struct {
		Name  string                     `json:"name"`
		Patch json.RawMessage            `json:"patch"`
		Want  map[string]json.RawMessage `json:"want"`
	} `json:"cases"`
}

func TestMergeTable(t *testing.T) {
	raw, err := os.ReadFile("testdata/merge.json")
	if err != nil {
		t.Fatal(err)
	}
	var table mergeTable
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	for _, tc := range table.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			got, err := patch.Merge(table.BatchTemplate, tc.Patch)
			if err != nil {
				t.Fatal(err)
			}
			if err := patch.Validate(tc.Patch); err != nil {
				t.Errorf("Validate: %v", err)
			}
			doc := canon(t, got)
			for ptr, want := range tc.Want {
				if d := cmp.Diff(canon(t, want), pointer(doc, ptr)); d != "" {
					t.Errorf("%s (-want +got):\n%s", ptr, d)
				}
			}
		})
	}
}

// pointer returns the value at a JSON pointer ("/a/0/b"), nil if absent.
func pointer(v any, ptr string) any {
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		switch x := v.(type) {
		case map[string]any:
			v = x[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// TestMergeVcjob covers a vcjob template: tasks by name, job-level volumes
// (no name) by mountPath, and their claim as a one-of.
func TestMergeVcjob(t *testing.T) {
	tmpl := `{"spec":{"minAvailable":1,"queue":"default","plugins":{"ssh":[],"env":[]},
		"volumes":[{"mountPath":"/data","volumeClaimName":"pvc-a"},{"mountPath":"/scratch","volumeClaim":{"accessModes":["ReadWriteOnce"]}}],
		"tasks":[{"name":"ps","replicas":1},{"name":"worker","replicas":2,"template":{"spec":{"containers":[{"name":"w","image":"w:1"}]}}}]}}`
	p := `{"spec":{"queue":"gpu","plugins":{"svc":["--publish-not-ready-addresses"]},
		"volumes":[{"mountPath":"/data","volumeClaim":{"accessModes":["ReadWriteMany"]}},{"mountPath":"/out","volumeClaimName":"pvc-out"}],
		"tasks":[{"name":"worker","replicas":4,"template":{"spec":{"containers":[{"name":"w","image":"w:2"}]}}},{"name":"chief","replicas":1}]}}`
	want := `{"spec":{"minAvailable":1,"queue":"gpu","plugins":{"ssh":[],"env":[],"svc":["--publish-not-ready-addresses"]},
		"volumes":[{"mountPath":"/data","volumeClaim":{"accessModes":["ReadWriteMany"]}},{"mountPath":"/scratch","volumeClaim":{"accessModes":["ReadWriteOnce"]}},{"mountPath":"/out","volumeClaimName":"pvc-out"}],
		"tasks":[{"name":"ps","replicas":1},{"name":"worker","replicas":4,"template":{"spec":{"containers":[{"name":"w","image":"w:2"}]}}},{"name":"chief","replicas":1}]}}`
	got, err := patch.Merge([]byte(tmpl), []byte(p))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(canon(t, []byte(want)), canon(t, got)); d != "" {
		t.Errorf("merged (-want +got):\n%s", d)
	}
}

func TestValidate(t *testing.T) {
	deep := strings.Repeat(`{"a":`, patch.MaxDepth) + "1" + strings.Repeat("}", patch.MaxDepth)
	tooDeep := strings.Repeat(`{"a":`, patch.MaxDepth+1) + "1" + strings.Repeat("}", patch.MaxDepth+1)
	big := `{"a":"` + strings.Repeat("x", patch.MaxBytes) + `"}`
	for _, tc := range []struct {
		name, patch string
		want        error
		msg         string
	}{
		{"at the depth bound", deep, nil, ""},
		{"brackets inside strings do not nest", `{"a":"` + strings.Repeat(`[{\"`, 100) + `"}`, nil, ""},
		{"too deep", tooDeep, patch.ErrTooLarge, "nested 65 deep"},
		{"too big", big, patch.ErrTooLarge, "bytes, at most 262144"},
		{"not an object", `[]`, patch.ErrNotObject, "patch is an array"},
		{"two sources in one volume", `{"volumes":[{"name":"v","emptyDir":{},"hostPath":{"path":"/"}}]}`, patch.ErrOneOf, `volumes[0] sets both "hostPath" and "emptyDir"`},
		{"two handlers in one probe", `{"containers":[{"name":"c","readinessProbe":{"exec":{},"grpc":{"port":1}}}]}`, patch.ErrOneOf, `containers[0].readinessProbe sets both "exec" and "grpc"`},
		{"value and valueFrom", `{"env":[{"name":"A","value":"1","valueFrom":{}}]}`, patch.ErrOneOf, `env[0] sets both "value" and "valueFrom"`},
		{"a port without its number", `{"ports":[{"protocol":"UDP"}]}`, patch.ErrMissingKey, `ports[0] has no "containerPort"`},
		{"a volume without name or mountPath", `{"volumes":[{"emptyDir":{}}]}`, patch.ErrMissingKey, `volumes[0] has no "name" or "mountPath"`},
		{"an unknown directive", `{"affinity":{"$patch":"merge"}}`, patch.ErrDirective, `affinity sets $patch to merge`},
		{"an unknown item directive", `{"env":[{"name":"A","$patch":"retain"}]}`, patch.ErrDirective, `env[0].$patch is retain`},
	} {
		err := patch.Validate([]byte(tc.patch))
		switch {
		case tc.want == nil && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != nil && (!errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg)):
			t.Errorf("%s: err = %v, want %v containing %q", tc.name, err, tc.want, tc.msg)
		}
	}
}
