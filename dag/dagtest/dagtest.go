// Package dagtest provides rapid generators of valid workflows for package
// dag, for property tests of workflow controllers built on it, in the way
// net/http/httptest serves tests of net/http code. plancore's own properties
// draw from them and check each plan with dag.CheckPlan.
package dagtest

import (
	"fmt"
	"time"

	"pgregory.net/rapid"

	"github.com/plancore/plancore/dag"
)

// Workflow draws a valid workflow "jf" in namespace "ns" of 0 to maxFlows
// flows named f0, f1, ...: each depends only on earlier flows (listed in that
// order or shuffled, so some edges point forward), through plain targets,
// targetsWithStatus or depends expressions (plainOnly restricts to plain
// targets), with retries, up to two finally flows (none when plainOnly),
// parallelism, failFast and either retention policy. Every workflow passes
// dag.Check with dag.Default().
func Workflow(maxFlows int, plainOnly bool) *rapid.Generator[dag.Workflow] {
	return rapid.Custom(func(t *rapid.T) dag.Workflow {
		return drawWorkflow(t, maxFlows, plainOnly)
	})
}

func drawWorkflow(t *rapid.T, maxFlows int, plainOnly bool) dag.Workflow {
	n := rapid.IntRange(0, maxFlows).Draw(t, "flows")
	w := dag.Workflow{Name: "jf", Namespace: "ns", UID: "uid-jf"}
	results := []string{"Succeeded", "Failed", "Omitted", "Done", "Started"}
	var expr func(i, depth int) string
	expr = func(i, depth int) string {
		switch k := rapid.IntRange(0, 4).Draw(t, "op"); {
		case depth >= 2 || k <= 1:
			ref := fmt.Sprintf("f%d", rapid.IntRange(0, i-1).Draw(t, "ref"))
			if rapid.Bool().Draw(t, "suffix") {
				ref += "." + rapid.SampledFrom(results).Draw(t, "res")
			}
			return ref
		case k == 2:
			return "!" + expr(i, depth+1)
		case k == 3:
			return "(" + expr(i, depth+1) + " && " + expr(i, depth+1) + ")"
		default:
			return "(" + expr(i, depth+1) + " || " + expr(i, depth+1) + ")"
		}
	}
	retry := func(label string) *dag.Retry {
		if rapid.IntRange(0, 3).Draw(t, label) > 0 {
			return nil
		}
		r := &dag.Retry{Limit: rapid.IntRange(0, 2).Draw(t, "limit"),
			Backoff: dag.Backoff{Duration: time.Duration(rapid.IntRange(0, 30).Draw(t, "dur")) * time.Second, Factor: 2, Cap: time.Minute}}
		if rapid.Bool().Draw(t, "onAll") {
			r.On = []dag.JobPhase{dag.JobPhaseFailed, dag.JobPhaseTerminated, dag.JobPhaseAborted}
		}
		return r
	}
	for i := range n {
		f := dag.Flow{Name: fmt.Sprintf("f%d", i), Retry: retry("retry")}
		if i > 0 {
			form := 0
			if !plainOnly {
				form = rapid.IntRange(0, 3).Draw(t, "form")
			}
			switch form {
			case 0, 1:
				var ts []string
				for j := range i {
					if rapid.IntRange(0, 2).Draw(t, "edge") == 0 {
						ts = append(ts, fmt.Sprintf("f%d", j))
					}
				}
				if ts != nil {
					f.DependsOn = &dag.DependsOn{Targets: ts}
				}
			case 2:
				f.DependsOn = &dag.DependsOn{TargetsWithStatus: []dag.TargetStatus{{
					Name: fmt.Sprintf("f%d", rapid.IntRange(0, i-1).Draw(t, "tws")), Phase: rapid.SampledFrom(append(results, "Completed", "Running")).Draw(t, "twsp")}}}
			case 3:
				f.DependsOn = &dag.DependsOn{Depends: expr(i, 0)}
			}
		}
		w.Spec.Flows = append(w.Spec.Flows, f)
	}
	if rapid.Bool().Draw(t, "shuffle") {
		// Listing flows out of dependency order makes some edges point
		// forward, so plans walk Kahn's order instead of spec order.
		w.Spec.Flows = rapid.Permutation(w.Spec.Flows).Draw(t, "order")
	}
	if !plainOnly && n > 0 {
		for k := range rapid.IntRange(0, 2).Draw(t, "finally") {
			f := dag.Flow{Name: fmt.Sprintf("fin%d", k), Retry: retry("fretry")}
			if rapid.Bool().Draw(t, "fcond") {
				f.DependsOn = &dag.DependsOn{Depends: expr(n, 1)}
			}
			w.Spec.Finally = append(w.Spec.Finally, f)
		}
	}
	w.Spec.Parallelism = rapid.SampledFrom([]int{0, 0, 1, 2, 3}).Draw(t, "parallelism")
	if rapid.Bool().Draw(t, "failFastSet") {
		ff := rapid.Bool().Draw(t, "failFast")
		w.Spec.FailFast = &ff
	}
	w.Spec.Retry = retry("specRetry")
	if rapid.Bool().Draw(t, "delete") {
		w.Spec.JobRetainPolicy = dag.RetainPolicyDelete
	}
	return w
}
