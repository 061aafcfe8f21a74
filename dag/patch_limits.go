package dag

import (
	"encoding/json"

	"github.com/plancore/plancore/dag/patch"
)

// patchProblem returns why a flow's patch cannot be merged, or "": a patch
// is user input that reaches every merge, so its size and depth are bounded
// (patch.MaxBytes, patch.MaxDepth) and its keyed items, one-of groups and
// directives are checked by patch.Validate.
func patchProblem(p json.RawMessage) string {
	if err := patch.Validate(p); err != nil {
		return err.Error()
	}
	return ""
}
