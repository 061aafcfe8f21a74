package reconcile_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/plancore/plancore/reconcile"
	"github.com/plancore/plancore/reconcile/reconciletest"
)

// TestCheckPlanCatchesBrokenPlans breaks a valid plan in one way at a time and
// checks that CheckPlan names the break.
func TestCheckPlanCatchesBrokenPlans(t *testing.T) {
	failed := reconciletest.Worker("w-failed", "a")
	failed.Status.Phase = corev1.PodFailed
	s := reconcile.Snapshot{
		Cluster: reconciletest.NewCluster(reconciletest.Group("a", 3), reconciletest.Group("b", 1)),
		Pods:    []corev1.Pod{reconciletest.Head("h"), reconciletest.Worker("w1", "a"), failed, reconciletest.Worker("w2", "b"), reconciletest.Worker("w3", "b")},
		Now:     reconciletest.Now,
	}
	o := reconcile.Options{OperatorVersion: reconciletest.OperatorVersion}
	plan, err := reconcile.Decide(s, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := reconcile.CheckPlan(s, o, plan); err != nil {
		t.Fatalf("the valid plan fails the check: %v\n%s", err, plan.Explain())
	}
	other := reconciletest.Worker("x", "a")
	other.Labels[reconcile.LabelCluster] = "other"
	s.Pods = append(s.Pods, other)
	headCreate := reconcile.Action{Kind: reconcile.ActionCreatePod, Group: reconcile.HeadGroupLabel,
		Reason: reconcile.Reason{Code: reconcile.ReasonHeadCreate}, Create: &reconcile.CreatePod{Pod: &corev1.Pod{}, ReplicaIndex: -1, HostIndex: -1}}
	breaks := []struct {
		name, want string
		brk        func(p *reconcile.Plan)
	}{
		{"a head created beside the running head", "1 head creates with 1 head pods", func(p *reconcile.Plan) {
			p.Actions = append(p.Actions, headCreate)
			p.Totals.Place++
		}},
		{"a pod of another cluster deleted", "not a pod of this cluster", func(p *reconcile.Plan) {
			p.Actions = append(p.Actions, reconcile.Action{Kind: reconcile.ActionDeletePod, Group: "a",
				Reason: reconcile.Reason{Code: reconcile.ReasonScaleDown}, Delete: &reconcile.DeletePod{Namespace: "ns", Name: "x", UID: "uid-x"}})
		}},
		{"a pod deleted twice", "deleted twice", func(p *reconcile.Plan) {
			for _, a := range p.Actions {
				if a.Kind == reconcile.ActionDeletePod {
					p.Actions = append(p.Actions, a)
					return
				}
			}
		}},
		{"a desired count off by one", "group b desired 2, want 1", func(p *reconcile.Plan) { p.Groups[1].Desired++ }},
		{"an action without a reason", "without a reason code", func(p *reconcile.Plan) { p.Actions[0].Reason.Code = "" }},
		{"counters that do not add up", "counters say place", func(p *reconcile.Plan) { p.Totals.Place++ }},
	}
	for _, b := range breaks {
		t.Run(b.name, func(t *testing.T) {
			p := plan
			p.Actions = append([]reconcile.Action(nil), plan.Actions...)
			p.Groups = append([]reconcile.GroupReport(nil), plan.Groups...)
			b.brk(&p)
			err := reconcile.CheckPlan(s, o, p)
			if err == nil || !strings.Contains(err.Error(), b.want) {
				t.Fatalf("CheckPlan = %v, want an error containing %q", err, b.want)
			}
		})
	}
}
