package metrics_test

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plancore/plancore/adapters/metrics"
	"github.com/plancore/plancore/lock"
)

// A Recorder counts the plans it is shown; give it to a capacity.Dispatcher
// as its Observer, or call its Observe methods after each Decide. Here a
// registry of its own stands in for controller-runtime's (pass nil for that).
func ExampleRecorder() {
	reg := prometheus.NewRegistry()
	rec, err := metrics.NewRecorder(reg)
	if err != nil {
		fmt.Println(err)
		return
	}
	rec.ObserveLockPlan(lock.Plan{Kind: lock.Refuse, Reason: lock.Reason{Code: lock.ReasonHeldByOther}})
	rec.ObserveLockPlan(lock.Plan{Kind: lock.Acquire, Reason: lock.Reason{Code: "SomethingNew"}})
	families, _ := reg.Gather()
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if f.GetName() != "plancore_lock_plans_total" {
				continue
			}
			fmt.Print(f.GetName(), "{")
			for i, l := range m.GetLabel() {
				if i > 0 {
					fmt.Print(",")
				}
				fmt.Printf("%s=%q", l.GetName(), l.GetValue())
			}
			fmt.Println("}", m.GetCounter().GetValue())
		}
	}
	// Output:
	// plancore_lock_plans_total{kind="Acquire",reason="other"} 1
	// plancore_lock_plans_total{kind="Refuse",reason="HeldByOther"} 1
}
