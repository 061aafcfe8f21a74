package reconcile_test

import (
	"encoding/json"
	"testing"

	"github.com/plancore/plancore/reconcile"
)

// FuzzDecide feeds arbitrary JSON snapshots (seeded with the golden
// scenarios) to Decide in both modes: it must never panic, and when it
// plans, the plan must render and keep every invariant of CheckPlan.
func FuzzDecide(f *testing.F) {
	for _, s := range goldenSnapshots(f) {
		b, err := json.Marshal(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, false)
		f.Add(b, true)
	}
	f.Fuzz(func(t *testing.T, data []byte, compatMode bool) {
		var s reconcile.Snapshot
		if json.Unmarshal(data, &s) != nil {
			return
		}
		o := opts()
		if compatMode {
			o.Compat = reconcile.KubeRayV170().Compat
		}
		p, err := reconcile.Decide(s, o)
		if err != nil {
			return
		}
		_ = p.Explain()
		if err := reconcile.CheckPlan(s, o, p); err != nil {
			t.Fatalf("%v\n%s", err, p.Explain())
		}
	})
}
