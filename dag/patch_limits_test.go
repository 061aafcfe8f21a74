package dag_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plancore/plancore/dag"
	"github.com/plancore/plancore/dag/patch"
)

// TestCheckBoundsPatches: a flow's patch over patch.MaxBytes or deeper than
// patch.MaxDepth, one no merge can take, or one that is not Volcano's Patch
// type (jobSpec alone; spec read the same), is an invalid spec, reported on
// the flow's patch field with the reason.
func TestCheckBoundsPatches(t *testing.T) {
	deep := `{"jobSpec":` + strings.Repeat(`{"a":`, patch.MaxDepth) + "1" + strings.Repeat("}", patch.MaxDepth) + `}`
	big := `{"a":"` + strings.Repeat("x", patch.MaxBytes) + `"}`
	w := wf(dag.Flow{Name: "a", Patch: []byte(deep)}, dag.Flow{Name: "b", Patch: []byte(big)},
		dag.Flow{Name: "c", Patch: []byte(`{"spec":{"template":{"spec":{"volumes":[{"name":"v","emptyDir":{},"secret":{}}]}}}}`)},
		dag.Flow{Name: "d", Patch: []byte(`{"spec":{"template":{"spec":{"containers":[{"image":"x"}]}}}}`)},
		dag.Flow{Name: "e", Patch: []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"x","image":"y"}]}}}}`)},
		dag.Flow{Name: "f", Patch: []byte(`{"jobSpec":{"minAvailable":1},"spec":{"minAvailable":2}}`)},
		dag.Flow{Name: "g", Patch: []byte(`{"jobSpec":{"minAvailable":1},"metadata":{"labels":{"a":"b"}}}`)},
		dag.Flow{Name: "h", Patch: []byte(`{"jobSpec":{"minAvailable":1}}`)})
	var got []string
	for _, is := range dag.Lint(w, dag.Options{}) {
		got = append(got, is.Field+": "+is.Message)
	}
	want := []string{
		"flows[0].patch: patch: too large: nested 65 deep, at most 64",
		"flows[1].patch: patch: too large: 262152 bytes, at most 262144",
		`flows[2].patch: patch: two members of a one-of group: spec.template.spec.volumes[0] sets both "emptyDir" and "secret"`,
		`flows[3].patch: patch: keyed list item without its key: spec.template.spec.containers[0] has no "name"`,
		"flows[5].patch: patch: not a Volcano JobFlow patch: patch has both jobSpec and spec, the same override twice: keep jobSpec (an API server with Volcano's CRD prunes spec)",
		"flows[6].patch: patch: not a Volcano JobFlow patch: patch.metadata: Volcano's patch has one field, jobSpec",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("issues (-want +got):\n%s", d)
	}
}
