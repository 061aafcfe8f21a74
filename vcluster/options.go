package vcluster

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plancore/plancore"
)

// Options tunes the planners. The zero value is plancore's default: one
// replenish plan heals every dead node that can be replaced.
type Options struct {
	// MaxSwaps caps the swaps of one replenish plan (a disruption budget); 0
	// means no cap. With a cap m, k replaceable dead nodes heal in ⌈k/m⌉
	// rounds.
	MaxSwaps int
	// MaxSwapsPercent caps the swaps per consumer cluster at this percentage
	// of the cluster's node count, rounded up (so at least one); 0 means no
	// cap. It mirrors Karpenter's "nodes: 10%" disruption budget.
	MaxSwapsPercent int
	// OnePerTemplatePerCluster replaces at most one dead node per template
	// per cluster per replenish plan: the anchor's pacing, for callers that
	// want its exact round-by-round behaviour.
	OnePerTemplatePerCluster bool
}

// AntRay returns the options that reproduce ant-ray's virtual cluster
// manager: one dead node healed per template per cluster per round.
// Assign it whole: each field it sets is one of the anchor's behaviours, and
// copying only some of them reproduces none of the anchor exactly.
func AntRay() Options { return Options{OnePerTemplatePerCluster: true} }

// Validate reports every negative cap and a percentage above 100, in an
// error wrapping ErrInvalidOptions.
func (o Options) Validate() error {
	var errs field.ErrorList
	if o.MaxSwaps < 0 {
		errs = append(errs, invalid(field.NewPath("maxSwaps"), o.MaxSwaps, "Invalid options, MaxSwaps(%d) must >= 0", o.MaxSwaps))
	}
	if o.MaxSwapsPercent < 0 || o.MaxSwapsPercent > 100 {
		errs = append(errs, invalid(field.NewPath("maxSwapsPercent"), o.MaxSwapsPercent, "Invalid options, MaxSwapsPercent(%d) must be within [0, 100]", o.MaxSwapsPercent))
	}
	return plancore.Invalid(ErrInvalidOptions, errs)
}

// String renders the options for transcripts.
func (o Options) String() string {
	return fmt.Sprintf("MaxSwaps=%d MaxSwapsPercent=%d OnePerTemplatePerCluster=%v", o.MaxSwaps, o.MaxSwapsPercent, o.OnePerTemplatePerCluster)
}
