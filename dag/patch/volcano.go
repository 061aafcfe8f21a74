package patch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrNotVolcanoPatch is wrapped by Volcano for a flow's patch that is not
// Volcano's Patch type.
var ErrNotVolcanoPatch = errors.New("patch: not a Volcano JobFlow patch")

// Volcano turns a flow's patch, written as Volcano's Patch type
// ({"jobSpec": {...}}, a batch.volcano.sh JobSpec, as the JobFlow CRD and
// volcano-sh/volcano#4491 define it), into the merge patch of the whole
// job template: {"spec": {...}}, so the JobSpec merges into the template's
// spec. Volcano's design documents write the same override as
// {"spec": {...}}; it is read as the same thing, though an API server with
// Volcano's CRD installed prunes it (write jobSpec). A patch with both, or
// with any other field, is refused with an error wrapping
// ErrNotVolcanoPatch that names it; so is a patch over MaxBytes or
// MaxDepth (checked before it is parsed) or one that is not a JSON object. An empty patch gives an empty one.
func Volcano(flowPatch []byte) ([]byte, error) {
	if len(bytes.TrimSpace(flowPatch)) == 0 {
		return nil, nil
	}
	if len(flowPatch) > MaxBytes {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, len(flowPatch), MaxBytes)
	}
	if d := depth(flowPatch); d > MaxDepth {
		return nil, fmt.Errorf("%w: nested %d deep, at most %d", ErrTooLarge, d, MaxDepth)
	}
	if _, err := object(flowPatch, "patch"); err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(flowPatch, &fields); err != nil {
		return nil, fmt.Errorf("%w: patch: %v", ErrNotObject, err) // object read it: not reached
	}
	var extra []string
	for k := range fields {
		if k != "jobSpec" && k != "spec" {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	jobSpec, hasJobSpec := fields["jobSpec"]
	spec, hasSpec := fields["spec"]
	switch {
	case len(extra) > 0:
		return nil, fmt.Errorf("%w: patch.%s: Volcano's patch has one field, jobSpec", ErrNotVolcanoPatch, strings.Join(extra, ", patch."))
	case hasJobSpec && hasSpec:
		return nil, fmt.Errorf("%w: patch has both jobSpec and spec, the same override twice: keep jobSpec (an API server with Volcano's CRD prunes spec)", ErrNotVolcanoPatch)
	case hasJobSpec:
		spec = jobSpec
	case !hasSpec:
		return nil, nil // {}: nothing to override
	}
	var b bytes.Buffer
	b.WriteString(`{"spec":`)
	if err := json.Compact(&b, spec); err != nil {
		return nil, fmt.Errorf("%w: patch.jobSpec: %v", ErrNotObject, err)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
