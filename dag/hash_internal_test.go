package dag

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestGraphHashIsSpecHash checks that the hash buildGraphHashed computes
// while reading the flows equals SpecHash, with and without finally flows,
// and that specs differing in one field hash apart.
func TestGraphHashIsSpecHash(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		flows := func(label string) []Flow {
			var fs []Flow
			for k := range rapid.IntRange(0, 4).Draw(t, label) {
				f := Flow{Name: fmt.Sprintf("%s%d", label, k)}
				switch rapid.IntRange(0, 3).Draw(t, label+"-dep") {
				case 1:
					f.DependsOn = &DependsOn{Targets: []string{"m0"}}
				case 2:
					f.DependsOn = &DependsOn{Depends: "m0.Failed"}
				case 3:
					f.DependsOn = &DependsOn{Targets: []string{"m0"}, Probe: &Probe{TCPSocket: []TCPSocketProbe{{Port: rapid.IntRange(1, 3).Draw(t, "port")}}}}
				}
				if rapid.Bool().Draw(t, label+"-retry") {
					f.Retry = &Retry{Limit: rapid.IntRange(0, 2).Draw(t, "limit"), Backoff: Backoff{Duration: time.Second}}
				}
				fs = append(fs, f)
			}
			return fs
		}
		w := Workflow{Name: "wf", Namespace: "ns", Spec: Spec{Flows: flows("m"), Finally: flows("f"), Parallelism: rapid.IntRange(0, 2).Draw(t, "par")}}
		if rapid.Bool().Draw(t, "ff") {
			ff := rapid.Bool().Draw(t, "ffv")
			w.Spec.FailFast = &ff
		}
		g := buildGraphHashed(&w, Options{}, true)
		if want := SpecHash(w.Spec); g.specHash != want {
			t.Fatalf("graph hash %s, SpecHash %s", g.specHash, want)
		}
		// Moving the last main flow to finally changes the hash.
		if n := len(w.Spec.Flows); n > 0 {
			moved := w
			moved.Spec.Flows = w.Spec.Flows[:n-1]
			moved.Spec.Finally = append([]Flow{w.Spec.Flows[n-1]}, w.Spec.Finally...)
			if buildGraphHashed(&moved, Options{}, true).specHash == g.specHash {
				t.Fatal("moving a flow into finally kept the hash")
			}
		}
	})
}
