package reconcile_test

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/plancore/plancore/reconcile"
	"github.com/plancore/plancore/reconcile/reconciletest"
)

// TestReasonFacts: the figures a reason's message states are fields of the
// Reason, so a controller reads them without parsing Message.
func TestReasonFacts(t *testing.T) {
	big := group("big", 700)
	big.MaxReplicas = i32(math.MaxInt32)
	p := mustDecide(t, snap(cluster(big, group("small", 2)), withHead()...), opts())
	notice := func(code reconcile.ReasonCode) reconcile.Reason {
		for _, r := range p.Notices {
			if r.Code == code {
				return r
			}
		}
		t.Fatalf("no %s notice in %v", code, p.Notices)
		return reconcile.Reason{}
	}
	ignoreMessage := cmpopts.IgnoreFields(reconcile.Reason{}, "Message")
	if diff := cmp.Diff(reconcile.Reason{Code: reconcile.ReasonBurstLimited, Facts: reconcile.ReasonFacts{Group: "big", Count: 500, Of: 700, Limit: 500}},
		notice(reconcile.ReasonBurstLimited), ignoreMessage); diff != "" {
		t.Errorf("BurstLimited (-want +got):\n%s", diff)
	}
	var scaleUp *reconcile.Reason
	for i := range p.Actions {
		if r := p.Actions[i].Reason; r.Code == reconcile.ReasonScaleUp && r.Facts.Group == "small" {
			scaleUp = &p.Actions[i].Reason
		}
	}
	if scaleUp == nil || scaleUp.Facts.Count != 0 || scaleUp.Facts.Of != 2 {
		t.Errorf("ScaleUp of small = %+v, want 0 of 2 running", scaleUp)
	}
}

// TestPropReasonMessagesShowTheirFacts: over drawn snapshots, every
// number and name a reason carries as a fact appears in its message: the
// message is rendered from the fields. Breaking it: set a fact the message
// does not print (it found ReplicaGroupCreate carrying the new group's name
// while its message, KubeRay's, gives only the counts).
func TestPropReasonMessagesShowTheirFacts(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := reconciletest.Snapshot(3).Draw(t, "snapshot")
		p, err := reconcile.Decide(s, reconcile.Options{})
		if err != nil {
			t.Fatal(err)
		}
		reasons := append([]reconcile.Reason{p.Verdict.Reason}, p.Notices...)
		for _, a := range p.Actions {
			reasons = append(reasons, a.Reason)
		}
		for _, r := range reasons {
			for name, n := range map[string]int{"count": r.Facts.Count, "of": r.Facts.Of, "limit": r.Facts.Limit, "numOfHosts": r.Facts.NumOfHosts, "attempt": r.Facts.Attempt} {
				if n != 0 && !strings.Contains(r.Message, strconv.Itoa(n)) {
					t.Fatalf("%s: %s %d is not in %q", r.Code, name, n, r.Message)
				}
			}
			for name, v := range map[string]string{"replicaGroup": r.Facts.ReplicaGroup, "from": r.Facts.From, "to": r.Facts.To, "lastError": r.Facts.LastError} {
				if v != "" && !strings.Contains(r.Message, v) {
					t.Fatalf("%s: %s %q is not in %q", r.Code, name, v, r.Message)
				}
			}
		}
	})
}
