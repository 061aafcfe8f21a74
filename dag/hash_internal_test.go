package dag

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"
)

// hashNames is a small alphabet so that drawn specs often differ in one
// character only, in the high bytes of an 8-byte word included.
var hashNames = rapid.SampledFrom([]string{"a", "b", "prepare-dataset1", "preparecdatasets", "prepare-dataset-", "prepare.datasetX"})

func drawHashFlow(t *rapid.T) Flow {
	f := Flow{Name: hashNames.Draw(t, "name")}
	if rapid.Bool().Draw(t, "dep") {
		d := &DependsOn{Targets: rapid.SliceOfN(hashNames, 0, 2).Draw(t, "targets")}
		for range rapid.IntRange(0, 1).Draw(t, "tws") {
			d.TargetsWithStatus = append(d.TargetsWithStatus, TargetStatus{Name: hashNames.Draw(t, "twsName"), Phase: "Failed"})
		}
		if rapid.Bool().Draw(t, "probe") {
			d.Probe = &Probe{TCPSocket: []TCPSocketProbe{{Target: hashNames.Draw(t, "probeTarget"), Port: rapid.IntRange(0, 1).Draw(t, "port")}}}
		}
		f.DependsOn = d
	}
	if rapid.Bool().Draw(t, "hasPatch") {
		f.Patch = json.RawMessage(`{"x":` + rapid.SampledFrom([]string{"1", "2"}).Draw(t, "patch") + `}`)
	}
	if rapid.Bool().Draw(t, "hasRetry") {
		f.Retry = &Retry{Limit: rapid.IntRange(0, 1).Draw(t, "limit"), Backoff: Backoff{Duration: time.Second}}
	}
	return f
}

func drawHashSpec(t *rapid.T) Spec {
	flow := rapid.Custom(drawHashFlow)
	s := Spec{
		Flows:           rapid.SliceOfN(flow, 0, 3).Draw(t, "flows"),
		Finally:         rapid.SliceOfN(flow, 0, 1).Draw(t, "finally"),
		JobRetainPolicy: rapid.SampledFrom([]RetainPolicy{"", RetainPolicyDelete}).Draw(t, "retain"),
		Parallelism:     rapid.IntRange(0, 1).Draw(t, "parallelism"),
	}
	if rapid.Bool().Draw(t, "hasFailFast") {
		ff := rapid.Bool().Draw(t, "failFast")
		s.FailFast = &ff
	}
	if rapid.Bool().Draw(t, "hasRetry") {
		s.Retry = &Retry{Limit: 1, On: rapid.SliceOfN(rapid.SampledFrom([]JobPhase{JobPhaseFailed, JobPhaseAborted}), 0, 1).Draw(t, "on")}
	}
	return s
}

// cloneSpec copies a spec deeply enough for mutateSpec.
func cloneSpec(s Spec) Spec {
	cf := func(fs []Flow) []Flow {
		out := slices.Clone(fs)
		for i := range out {
			if d := out[i].DependsOn; d != nil {
				c := *d
				c.Targets = slices.Clone(d.Targets)
				out[i].DependsOn = &c
			}
		}
		return out
	}
	s.Flows, s.Finally = cf(s.Flows), cf(s.Finally)
	return s
}

// mutateSpec changes one drawn place of s (which may, rarely, leave it
// equal: the property compares against cmp.Equal, not against the intent).
func mutateSpec(t *rapid.T, s *Spec) {
	fs := &s.Flows
	if len(s.Finally) > 0 && rapid.Bool().Draw(t, "inFinally") {
		fs = &s.Finally
	}
	if len(*fs) == 0 {
		*fs = append(*fs, drawHashFlow(t))
		return
	}
	f := &(*fs)[rapid.IntRange(0, len(*fs)-1).Draw(t, "at")]
	switch rapid.IntRange(0, 7).Draw(t, "site") {
	case 0:
		f.Name = hashNames.Draw(t, "rename")
	case 1:
		if f.DependsOn == nil {
			f.DependsOn = &DependsOn{}
		}
		f.DependsOn.Targets = append(f.DependsOn.Targets, hashNames.Draw(t, "target"))
	case 2:
		f.Patch = append(slices.Clone(f.Patch), ' ')
	case 3:
		f.Retry = &Retry{Limit: 7}
	case 4:
		s.Parallelism++
	case 5:
		ff := s.FailFast == nil || !*s.FailFast
		s.FailFast = &ff
	case 6: // move the last main flow into finally
		if n := len(s.Flows); n > 0 {
			s.Finally = append([]Flow{s.Flows[n-1]}, s.Finally...)
			s.Flows = s.Flows[:n-1]
		}
	case 7:
		*fs = (*fs)[:len(*fs)-1]
	}
}

// TestPropSpecEqualityAndHash draws pairs of specs, either independently
// or one a mutation of the other, and checks against cmp.Equal (nil and
// empty lists equal) that the canonical comparison, ValidateUpdate's flow
// comparison and SpecHash tell them apart exactly when they differ.
// Breaking it: leaving FailFast out of canon.spec fails it within 30 checks.
func TestPropSpecEqualityAndHash(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a := drawHashSpec(t)
		var b Spec
		if rapid.Bool().Draw(t, "independent") {
			b = drawHashSpec(t)
		} else {
			b = cloneSpec(a)
			for range rapid.IntRange(0, 2).Draw(t, "mutations") {
				mutateSpec(t, &b)
			}
		}
		same := cmp.Equal(a, b, cmpopts.EquateEmpty())
		if got := specsEqual(&a, &b); got != same {
			t.Fatalf("specsEqual = %v, cmp.Equal = %v", got, same)
		}
		if got := SpecHash(a) == SpecHash(b); got != same {
			t.Fatalf("hashes equal = %v, cmp.Equal = %v (%s)", got, same, SpecHash(a))
		}
		sameFlows := cmp.Equal(a.Flows, b.Flows, cmpopts.EquateEmpty())
		if got := flowsEqual(a.Flows, b.Flows); got != sameFlows {
			t.Fatalf("flowsEqual = %v, cmp.Equal = %v", got, sameFlows)
		}
	})
}
