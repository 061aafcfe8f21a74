package dag

import (
	"encoding/json"

	"github.com/plancore/plancore/dag/patch"
)

// patchProblem returns why a flow's patch cannot be merged, or "": a patch
// is user input that reaches every merge, so it must be Volcano's Patch
// type (patch.Volcano: jobSpec alone), its size and depth are bounded
// (patch.MaxBytes, patch.MaxDepth) and its keyed items, one-of groups and
// directives are checked by patch.Validate.
func patchProblem(p json.RawMessage) string {
	tp, err := patch.Volcano(p)
	if err == nil {
		err = patch.Validate(tp)
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// templatePatch is the merge patch of the whole job template a flow's patch
// gives (its jobSpec under spec), or nil; a patch the checks refused never
// reaches it.
func templatePatch(p json.RawMessage) json.RawMessage {
	tp, err := patch.Volcano(p)
	if err != nil {
		return nil
	}
	return tp
}
