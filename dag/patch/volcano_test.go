package patch_test

import (
	"errors"
	"testing"

	"github.com/plancore/plancore/dag/patch"
)

// TestVolcano: a flow's patch is Volcano's Patch type, jobSpec merged into
// the template's spec; the design documents' spec is read the same; both,
// or anything else, are refused by name.
func TestVolcano(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		err            error
	}{
		{"jobSpec, as Volcano's type and CRD", `{"jobSpec": {"minAvailable": 2}}`, `{"spec":{"minAvailable":2}}`, nil},
		{"spec, as Volcano's design documents", `{"spec":{"minAvailable":2}}`, `{"spec":{"minAvailable":2}}`, nil},
		{"empty", ``, ``, nil},
		{"empty object", `{}`, ``, nil},
		{"both", `{"jobSpec":{},"spec":{}}`, "", patch.ErrNotVolcanoPatch},
		{"a field Volcano's patch does not have", `{"jobSpec":{},"metadata":{"labels":{"a":"b"}}}`, "", patch.ErrNotVolcanoPatch},
		{"not an object", `[1]`, "", patch.ErrNotObject},
		{"null", `null`, "", patch.ErrNotObject},
	} {
		got, err := patch.Volcano([]byte(tc.in))
		if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) || string(got) != tc.want {
			t.Errorf("%s: Volcano(%s) = %s, %v; want %s, %v", tc.name, tc.in, got, err, tc.want, tc.err)
		}
	}
}
