package expectations_test

import (
	"strings"
	"testing"
	"time"

	"github.com/plancore/plancore/expectations"
)

// TestCheckResultCatchesBrokenResults breaks a valid result in one way at a
// time, and leaves an owner out of CheckState, and checks that the checks
// name the break.
func TestCheckResultCatchesBrokenResults(t *testing.T) {
	s, err := expectations.New(expectations.Options{})
	if err != nil {
		t.Fatal(err)
	}
	owner := expectations.Owner{Namespace: "ns", Name: "rc", UID: "uid-rc"}
	other := expectations.Owner{Namespace: "ns", Name: "other", UID: "uid-other"}
	for _, o := range []expectations.Owner{owner, other} {
		if _, err := s.Record(simStart, expectations.Record{Owner: o, Group: "g", Action: expectations.Create, Pod: "p1"}); err != nil {
			t.Fatal(err)
		}
	}
	now := simStart.Add(time.Minute)
	view := expectations.NewView(nil)
	r, err := s.Check(now, owner, "g", view)
	if err != nil || r.RequeueAfter != 4*time.Minute {
		t.Fatalf("Check = %v, %v; want a wake-up when the create expires", r, err)
	}
	if err := expectations.CheckResult(s, now, owner, "g", view, r); err != nil {
		t.Fatalf("the valid result fails the check: %v", err)
	}
	for _, b := range []struct {
		name, want string
		brk        func(r *expectations.Verdict)
	}{
		{"a wake-up too early", "not what Check answers", func(r *expectations.Verdict) { r.RequeueAfter -= time.Second }},
		{"no wake-up", "not what Check answers", func(r *expectations.Verdict) { r.RequeueAfter = 0 }},
		{"a pending create dropped", "not what Check answers", func(r *expectations.Verdict) { r.Pending, r.Satisfied = nil, true }},
	} {
		t.Run(b.name, func(t *testing.T) {
			broken := r
			b.brk(&broken)
			// A result that is not the state's own answer is refused before
			// its wake-up is timed (TestPropertyRequeueAfterIsExact breaks the
			// state's wake-up itself).
			err := expectations.CheckResult(s, now, owner, "g", view, broken)
			if err == nil || !strings.Contains(err.Error(), b.want) {
				t.Fatalf("CheckResult = %v, want an error containing %q", err, b.want)
			}
		})
	}
	if err := expectations.CheckState(s, []expectations.Owner{owner, other}); err != nil {
		t.Fatalf("CheckState with every owner: %v", err)
	}
	if err := expectations.CheckState(s, []expectations.Owner{owner}); err == nil || !strings.Contains(err.Error(), "Len 2, the owners' counts add up to 1") {
		t.Fatalf("CheckState without an owner = %v", err)
	}
}
