package lock_test

import (
	"strings"
	"testing"

	"github.com/plancore/plancore/lock"
	"github.com/plancore/plancore/lock/locktest"
)

// TestCheckPlanCatchesBrokenPlans breaks a valid acquire plan and a valid
// release plan in one way at a time and checks that the checks name the break.
func TestCheckPlanCatchesBrokenPlans(t *testing.T) {
	req := lock.Requester{Namespace: "default", Name: "p1", UID: "u1"}
	in := lock.AcquireInput{Observation: lock.Observation{Key: locktest.Key, Version: "7", EpochHigh: 4}, Requester: req, Now: locktest.Now}
	plan, err := lock.PlanAcquire(in, lock.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := lock.CheckPlan(in, lock.Options{}, plan); err != nil || plan.Kind != lock.Acquire {
		t.Fatalf("the valid plan %v fails the check: %v", plan, err)
	}
	for _, b := range []struct {
		name, want string
		brk        func(p *lock.Plan)
	}{
		{"an epoch reused", "epoch 4 is not above the high-water mark 4", func(p *lock.Plan) { p.Record.Epoch = 4 }},
		{"a write without the observed version", "does not match the observation", func(p *lock.Plan) { p.Precondition.Version = "" }},
		{"the lock written for someone else", "does not name the requester", func(p *lock.Plan) { p.Record.Name = "p2" }},
		{"a refusal that writes", "Refuse carries a write precondition", func(p *lock.Plan) { p.Kind = lock.Refuse }},
	} {
		t.Run(b.name, func(t *testing.T) {
			p := plan
			b.brk(&p)
			if err := lock.CheckPlan(in, lock.Options{}, p); err == nil || !strings.Contains(err.Error(), b.want) {
				t.Fatalf("CheckPlan = %v, want an error containing %q", err, b.want)
			}
		})
	}
	held := lock.Observation{Key: locktest.Key, Present: true, Version: "8", Raw: lock.Encode(plan.Record, lock.FormatExtended)}
	rin := lock.ReleaseInput{Observation: held, Requester: req}
	rel, err := lock.PlanRelease(rin, lock.Options{})
	if err != nil || rel.Kind != lock.Release {
		t.Fatalf("release = %v, %v", rel, err)
	}
	if err := lock.CheckRelease(rin, lock.Options{}, rel); err != nil {
		t.Fatalf("the valid release fails the check: %v", err)
	}
	rel.Precondition.Raw = "2026-06-14T09:00:00Z,default,p1"
	if err := lock.CheckRelease(rin, lock.Options{}, rel); err == nil || !strings.Contains(err.Error(), "Release precondition") {
		t.Fatalf("a release of another value: CheckRelease = %v", err)
	}
}
