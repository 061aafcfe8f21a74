package metrics

import (
	"maps"
	"slices"
)

// DeclaredLabels returns the values a label accepts, for the test that
// compares them with the cores' constants.
func DeclaredLabels(name string) []string {
	m := map[string]map[string]bool{
		"reconcile_reason": reconcileReasons, "reconcile_kind": reconcileKinds, "dag_reason": dagReasons,
		"lock_reason": lockReasons, "lock_kind": lockKinds, "gpu_reason": gpuReasons,
		"expectations_reason": expectationsReasons, "capacity_reason": capacityExclusions, "capacity_outcome": jobOutcomes,
	}[name]
	return slices.Collect(maps.Keys(m))
}
