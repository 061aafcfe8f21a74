package expectations_test

import (
	"context"
	"errors"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plancore/plancore/internal/invalidtest"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"pgregory.net/rapid"

	"github.com/plancore/plancore/expectations"
)

var (
	t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rc = expectations.Owner{Namespace: "ns", Name: "rc", UID: "uid-1"}
)

func at(d time.Duration) time.Time { return t0.Add(d) }

// pods builds a view of the owner's namespace from "name", "name~" (terminating)
// and "name@uid" (with a UID) and "name#token" (carrying a token) specs.
func pods(specs ...string) *expectations.View {
	v := &expectations.View{}
	for _, s := range specs {
		var p expectations.ViewPod
		if i := strings.Index(s, "#"); i >= 0 {
			s, p.Token = s[:i], s[i+1:]
		}
		if strings.HasSuffix(s, "~") {
			s, p.Terminating = strings.TrimSuffix(s, "~"), true
		}
		if i := strings.Index(s, "@"); i >= 0 {
			s, p.UID = s[:i], types.UID(s[i+1:])
		}
		p.Name = s
		v.Add("ns", p)
	}
	return v
}

func mustNew(t *testing.T, o expectations.Options) *expectations.State {
	t.Helper()
	s, err := expectations.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func record(t *testing.T, s *expectations.State, now time.Time, r expectations.Record) expectations.Ref {
	t.Helper()
	if r.Owner == (expectations.Owner{}) {
		r.Owner = rc
	}
	ref, err := s.Record(now, r)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

func satisfied(t *testing.T, s *expectations.State, now time.Time, group string, v *expectations.View) expectations.Verdict {
	t.Helper()
	r, err := s.Satisfied(now, rc, group, v)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// verdict is the comparable summary of a Result used by the table tests.
type verdict struct {
	Satisfied                                   bool
	Pending, Observed, Expired, Overdue, Linger []string
	NextChange                                  time.Time
}

// summarize reports the next change as a time (now plus RequeueAfter), so
// the table reads in the clock of its steps.
func summarize(r expectations.Verdict, now time.Time) verdict {
	var next time.Time
	if r.RequeueAfter > 0 {
		next = now.Add(r.RequeueAfter)
	}
	names := func(es []expectations.Entry) []string {
		var out []string
		for _, e := range es {
			n := e.Pod
			if n == "" {
				n = "[" + e.Token + "]"
			}
			if e.Reason.Code != "" {
				n += ":" + e.Reason.Message
			}
			out = append(out, n)
		}
		return out
	}
	return verdict{
		Satisfied: r.Satisfied, Pending: names(r.Pending), Observed: names(r.Observed),
		Expired: names(r.Expired), Overdue: names(r.Overdue), Linger: names(r.Lingering),
		NextChange: next,
	}
}

// fieldsOf returns the field paths an invalid-input error names.
var fieldsOf = invalidtest.Fields

// TestBadInput feeds bad records, owners, refs and times through the public
// API; each row asserts the sentinel and the exact field named.
func TestBadInput(t *testing.T) {
	byName := expectations.Options{OwnerIdentity: expectations.ByName}
	cases := []struct {
		name    string
		opts    expectations.Options
		rec     expectations.Record
		want    error
		mention string
	}{
		{"empty owner UID", expectations.Options{}, expectations.Record{Owner: expectations.Owner{Namespace: "ns", Name: "rc"}, Action: expectations.Create, Pod: "p"}, expectations.ErrInvalidOwner, "owner.uid"},
		{"empty owner name by name", byName, expectations.Record{Owner: expectations.Owner{UID: "u"}, Action: expectations.Create, Pod: "p"}, expectations.ErrInvalidOwner, "owner.name"},
		{"zero action", expectations.Options{}, expectations.Record{Owner: rc, Pod: "p"}, expectations.ErrInvalidRecord, "record.action"},
		{"unknown action", expectations.Options{}, expectations.Record{Owner: rc, Action: "Nine", Pod: "p"}, expectations.ErrInvalidRecord, "record.action"},
		{"delete without pod", expectations.Options{}, expectations.Record{Owner: rc, Action: expectations.Delete, Token: "t"}, expectations.ErrInvalidRecord, "record.pod"},
		{"create without pod or token", expectations.Options{}, expectations.Record{Owner: rc, Action: expectations.Create}, expectations.ErrInvalidRecord, "record.token"},
		{"negative timeout", expectations.Options{}, expectations.Record{Owner: rc, Action: expectations.Create, Pod: "p", Timeout: -2}, expectations.ErrInvalidRecord, "record.timeout"},
		{"MinInt64 timeout", expectations.Options{}, expectations.Record{Owner: rc, Action: expectations.Delete, Pod: "p", Timeout: math.MinInt64}, expectations.ErrInvalidRecord, "record.timeout"},
		{"empty owner", expectations.Options{}, expectations.Record{Action: expectations.Create, Pod: "p"}, expectations.ErrInvalidOwner, "owner.uid"},
		{"empty owner by name", byName, expectations.Record{Action: expectations.Create, Pod: "p"}, expectations.ErrInvalidOwner, "owner.name"},
		{"lower-case action", expectations.Options{}, expectations.Record{Owner: rc, Action: "create", Pod: "p"}, expectations.ErrInvalidRecord, "record.action"},
		{"delete with a token only", expectations.Options{}, expectations.Record{Owner: rc, Action: expectations.Delete, Token: "t", Timeout: expectations.Never}, expectations.ErrInvalidRecord, "record.pod"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := mustNew(t, tc.opts)
			_, err := s.Record(t0, tc.rec)
			if !errors.Is(err, tc.want) || !errors.Is(err, expectations.ErrInvalidInput) || !slices.Equal(fieldsOf(t, err), []string{tc.mention}) {
				t.Fatalf("Record error = %v, want %v naming %q", err, tc.want, tc.mention)
			}
			if s.Len() != 0 {
				t.Fatalf("Len = %d after a rejected record", s.Len())
			}
		})
	}
	t.Run("check, observe, forget, conclude", badInputCalls)
	t.Run("zero now", badInputZeroNow)
	t.Run("zero Tracker", badInputZeroTracker)
}

func TestOptionsValidate(t *testing.T) {
	cases := []struct {
		name    string
		o       expectations.Options
		mention string // the field named; empty: valid
	}{
		{"zero", expectations.Options{}, ""},
		{"kuberay", expectations.KubeRay(), ""},
		{"kubernetes", expectations.Kubernetes(), ""},
		{"openkruise", expectations.OpenKruise(), ""},
		{"never", expectations.Options{CreateTimeout: expectations.Never, DeleteTimeout: expectations.Never}, ""},
		{"negative create", expectations.Options{CreateTimeout: -time.Second}, "createTimeout"},
		{"negative delete", expectations.Options{DeleteTimeout: -time.Second}, "deleteTimeout"},
		{"unknown delete rule", expectations.Options{DeleteSatisfiedBy: "Never"}, "deleteSatisfiedBy"},
		{"unknown expiry", expectations.Options{OnExpiry: "Sometimes"}, "onExpiry"},
		{"unknown identity", expectations.Options{OwnerIdentity: "Label"}, "ownerIdentity"},
		{"#3286 pairing", expectations.Options{DeleteSatisfiedBy: expectations.SatisfiedByTerminating, CountsTerminating: true}, "countsTerminating"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			if tc.mention == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, expectations.ErrInvalidOptions) || !slices.Equal(fieldsOf(t, err), []string{tc.mention}) {
				t.Fatalf("Validate = %v, want ErrInvalidOptions naming %q", err, tc.mention)
			}
			if _, err := expectations.New(tc.o); !errors.Is(err, expectations.ErrInvalidOptions) {
				t.Fatalf("New = %v, want ErrInvalidOptions", err)
			}
		})
	}
}

// step is one call in a scenario: record, conclude, observe, forget, or check.
type step struct {
	at      time.Duration
	record  *expectations.Record
	ref     *expectations.Ref
	result  expectations.CallResult
	name    string
	forget  *expectations.Owner
	observe *expectations.ObservedPod
	group   string
	view    *expectations.View
	want    *verdict
}

func runSteps(t *testing.T, o expectations.Options, steps []step) {
	t.Helper()
	s := mustNew(t, o)
	for i, st := range steps {
		now := at(st.at)
		switch {
		case st.record != nil:
			record(t, s, now, *st.record)
		case st.ref != nil:
			ref := *st.ref
			if ref.Owner == (expectations.Owner{}) {
				ref.Owner = rc
			}
			if _, err := s.Conclude(now, ref, st.result, st.name, ""); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
		case st.forget != nil:
			if _, err := s.Forget(*st.forget); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
		case st.observe != nil:
			if _, err := s.Observe(rc, *st.observe); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
		case st.want != nil:
			before := s.Clone()
			checked, err := before.Check(now, rc, st.group, st.view)
			if err != nil {
				t.Fatal(err)
			}
			got := satisfied(t, s, now, st.group, st.view)
			if diff := cmp.Diff(*st.want, summarize(got, now)); diff != "" {
				t.Fatalf("step %d (t+%v, group %q): result (-want +got):\n%s\n%s", i, st.at, st.group, diff, got)
			}
			if diff := cmp.Diff(got, checked); diff != "" {
				t.Fatalf("step %d: Check and Satisfied disagree (-satisfied +check):\n%s", i, diff)
			}
		}
	}
}

func rec(a expectations.Action, group, pod string) *expectations.Record {
	return &expectations.Record{Owner: rc, Group: group, Action: a, Pod: pod}
}

func ok() *verdict { return &verdict{Satisfied: true} }

// TestKubeRayProfile ports KubeRay v1.7.0's scale_expectations_test.go cases to
// the KubeRay options.
func TestKubeRayProfile(t *testing.T) {
	o := expectations.KubeRay()
	const head, w1, w2 = "", "group1", "group2"
	cases := []struct {
		name  string
		steps []step
	}{
		{"head create then delete", []step{
			{record: rec(expectations.Create, head, "head")},
			{want: &verdict{Pending: []string{"head:unseen"}, NextChange: at(30 * time.Second)}},
			{view: pods("head"), want: &verdict{Satisfied: true, Observed: []string{"head"}}},
			{record: rec(expectations.Delete, head, "head")},
			{view: pods("head"), want: &verdict{Pending: []string{"head:still present"}}},
			// KubeRay: a terminating pod does not satisfy a delete (PR #3520).
			{view: pods("head~"), want: &verdict{Pending: []string{"head:still present"}}},
			{view: pods(), want: &verdict{Satisfied: true, Observed: []string{"head"}}},
		}},
		{"create then delete of one pod is satisfied at once", []step{
			{record: rec(expectations.Create, w1, "p1")},
			{record: rec(expectations.Delete, w1, "p1")},
			{group: w1, view: pods(), want: &verdict{Satisfied: true, Observed: []string{"p1"}}},
		}},
		{"two worker groups gate separately", []step{
			{record: rec(expectations.Create, w1, "a")},
			{record: rec(expectations.Create, w2, "b")},
			{group: w1, view: pods("a"), want: &verdict{Satisfied: true, Observed: []string{"a"}}},
			{group: w2, view: pods("a"), want: &verdict{Pending: []string{"b:unseen"}, NextChange: at(30 * time.Second)}},
			{group: head, view: pods(), want: ok()},
		}},
		{"forget the cluster", []step{
			{record: rec(expectations.Create, head, "head")},
			{record: rec(expectations.Create, w1, "a")},
			{forget: &expectations.Owner{Namespace: "ns", Name: "rc"}},
			{group: head, want: ok()},
			{group: w1, want: ok()},
		}},
		{"create times out after 30 s, delete never", []step{
			{record: rec(expectations.Create, w1, "a")},
			{record: rec(expectations.Delete, w1, "b")},
			{at: 29 * time.Second, group: w1, view: pods("b"), want: &verdict{Pending: []string{"a:unseen", "b:still present"}, NextChange: at(30 * time.Second)}},
			{at: 30 * time.Second, group: w1, view: pods("b"), want: &verdict{Pending: []string{"b:still present"}, Expired: []string{"a"}}},
			{at: 1000 * time.Hour, group: w1, view: pods("b"), want: &verdict{Pending: []string{"b:still present"}}},
		}},
		{"1 s record timeout", []step{
			{record: &expectations.Record{Owner: rc, Group: w1, Action: expectations.Create, Pod: "a", Timeout: time.Second}},
			{at: 999 * time.Millisecond, group: w1, want: &verdict{Pending: []string{"a:unseen"}, NextChange: at(time.Second)}},
			{at: time.Second, group: w1, want: &verdict{Satisfied: true, Expired: []string{"a"}}},
		}},
		{"create present", []step{{record: rec(expectations.Create, w1, "a")}, {group: w1, view: pods("a"), want: &verdict{Satisfied: true, Observed: []string{"a"}}}}},
		{"create terminating counts as present", []step{{record: rec(expectations.Create, w1, "a")}, {group: w1, view: pods("a~"), want: &verdict{Satisfied: true, Observed: []string{"a"}}}}},
		{"create absent", []step{{record: rec(expectations.Create, w1, "a")}, {group: w1, view: pods(), want: &verdict{Pending: []string{"a:unseen"}, NextChange: at(30 * time.Second)}}}},
		{"delete present", []step{{record: rec(expectations.Delete, w1, "a")}, {group: w1, view: pods("a"), want: &verdict{Pending: []string{"a:still present"}}}}},
		// KubeRay: NotFound satisfies a delete, even for a pod the cache never showed.
		{"delete absent", []step{{record: rec(expectations.Delete, w1, "a")}, {group: w1, view: pods(), want: &verdict{Satisfied: true, Observed: []string{"a"}}}}},
		{"a recreated owner of the same name inherits items (by name)", []step{
			{record: rec(expectations.Create, w1, "a")},
			{record: &expectations.Record{Owner: expectations.Owner{Namespace: "ns", Name: "rc", UID: "uid-2"}, Group: w1, Action: expectations.Create, Pod: "b"}},
			{group: w1, want: &verdict{Pending: []string{"a:unseen", "b:unseen"}, NextChange: at(30 * time.Second)}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runSteps(t, o, tc.steps) })
	}
}

// TestKubernetesProfile covers ControllerExpectations as the ReplicaSet
// controller uses it, per item instead of counters.
func TestKubernetesProfile(t *testing.T) {
	o := expectations.Kubernetes()
	cases := []struct {
		name  string
		steps []step
	}{
		{"delete satisfied by terminating", []step{
			{record: &expectations.Record{Owner: rc, Action: expectations.Delete, Pod: "a", Seen: true}},
			{view: pods("a"), want: &verdict{Pending: []string{"a:still present"}, NextChange: at(5 * time.Minute)}},
			{view: pods("a~"), want: &verdict{Satisfied: true, Observed: []string{"a"}}},
		}},
		{"5 minute timeout per item", []step{
			{record: rec(expectations.Create, "", "a")},
			{at: time.Minute, record: rec(expectations.Create, "", "b")},
			{at: 5 * time.Minute, want: &verdict{Pending: []string{"b:unseen"}, Expired: []string{"a"}, NextChange: at(6 * time.Minute)}},
			{at: 6 * time.Minute, want: &verdict{Satisfied: true, Expired: []string{"b"}}},
		}},
		{"failed create lowers the expectation", []step{
			{record: rec(expectations.Create, "", "a")},
			{record: rec(expectations.Create, "", "b")},
			{ref: &expectations.Ref{Pod: "b"}, result: expectations.CallFailed},
			{view: pods("a"), want: &verdict{Satisfied: true, Observed: []string{"a"}}},
		}},
		// TestExpectationsOnRecreate: the owner's delete handler forgets it, so a
		// recreated owner of the same name starts clean (PR #82572).
		{"expectations on recreate", []step{
			{record: rec(expectations.Create, "", "a")},
			{want: &verdict{Pending: []string{"a:unseen"}, NextChange: at(5 * time.Minute)}},
			{forget: &expectations.Owner{Namespace: "ns", Name: "rc"}},
			{want: ok()},
		}},
		{"a delete event of an unseen pod settles its create", []step{
			{record: rec(expectations.Create, "", "a")},
			{observe: &expectations.ObservedPod{Name: "a"}},
			{view: pods(), want: &verdict{Satisfied: true, Observed: []string{"a"}}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runSteps(t, o, tc.steps) })
	}
}

// TestOpenKruiseProfile covers OpenKruise's scale expectations: record before,
// roll back on failure, and stay blocked after the timeout.
func TestOpenKruiseProfile(t *testing.T) {
	o := expectations.OpenKruise()
	runSteps(t, o, []step{
		{record: rec(expectations.Create, "", "a")},
		{record: rec(expectations.Create, "", "b")},
		{ref: &expectations.Ref{Pod: "b"}, result: expectations.CallFailed},
		{at: 4 * time.Minute, want: &verdict{Pending: []string{"a:unseen"}, NextChange: at(5 * time.Minute)}},
		// Past the deadline the owner stays blocked; the first check says so.
		{at: 5 * time.Minute, want: &verdict{Pending: []string{"a:expired"}, Overdue: []string{"a:expired"}}},
		{at: 70 * time.Hour, want: &verdict{Pending: []string{"a:expired"}}},
		{at: 70 * time.Hour, view: pods("a"), want: &verdict{Satisfied: true, Observed: []string{"a"}}},
	})
}

// TestDefaults covers plancore's own behaviour.
func TestDefaults(t *testing.T) {
	o := expectations.Options{}
	other := expectations.Owner{Namespace: "ns", Name: "rc", UID: "uid-2"}
	cases := []struct {
		name  string
		steps []step
	}{
		{"absence counts only after presence", []step{
			{record: rec(expectations.Delete, "g", "a")},
			{view: pods(), group: "g", want: &verdict{Pending: []string{"a:unseen"}, NextChange: at(5 * time.Minute)}},
			{view: pods("a~"), group: "g", want: &verdict{Pending: []string{"a:still present"}, NextChange: at(5 * time.Minute)}},
			{view: pods(), group: "g", want: &verdict{Satisfied: true, Observed: []string{"a"}}},
		}},
		{"a seen delete settles on absence", []step{
			{record: &expectations.Record{Owner: rc, Group: "g", Action: expectations.Delete, Pod: "a", Seen: true}},
			{view: pods(), group: "g", want: &verdict{Satisfied: true, Observed: []string{"a"}}},
		}},
		{"a delete of another pod with the same name", []step{
			{record: &expectations.Record{Owner: rc, Group: "g", Action: expectations.Delete, Pod: "a", PodUID: "u1", Seen: true}},
			{view: pods("a@u2"), group: "g", want: &verdict{Satisfied: true, Observed: []string{"a"}}},
		}},
		{"a create matches only its UID", []step{
			{record: &expectations.Record{Owner: rc, Group: "g", Action: expectations.Create, Pod: "a", PodUID: "u1"}},
			{view: pods("a@u2"), group: "g", want: &verdict{Pending: []string{"a:unseen"}, NextChange: at(5 * time.Minute)}},
			{view: pods("a@u1"), group: "g", want: &verdict{Satisfied: true, Observed: []string{"a"}}},
		}},
		{"partial failure: only the created pod is awaited", []step{
			{record: &expectations.Record{Owner: rc, Group: "gpu", Action: expectations.Create, Token: "t1"}},
			{record: &expectations.Record{Owner: rc, Group: "gpu", Action: expectations.Create, Token: "t2"}},
			{at: time.Second, ref: &expectations.Ref{Group: "gpu", Token: "t1"}, result: expectations.CallSucceeded, name: "rc-gpu-worker-x7k2p"},
			{at: time.Second, ref: &expectations.Ref{Group: "gpu", Token: "t2"}, result: expectations.CallFailed},
			{at: 2 * time.Second, group: "gpu", want: &verdict{Pending: []string{"rc-gpu-worker-x7k2p:unseen"}, NextChange: at(5*time.Minute + time.Second)}},
		}},
		{"ambiguous stamped create observed by token", []step{
			{record: &expectations.Record{Owner: rc, Group: "g", Action: expectations.Create, Token: "t3"}},
			{at: 10 * time.Second, ref: &expectations.Ref{Group: "g", Token: "t3"}, result: expectations.CallAmbiguous},
			{at: 20 * time.Second, group: "g", want: &verdict{Pending: []string{"[t3]:unresolved token"}, NextChange: at(5*time.Minute + 10*time.Second)}},
			{at: 30 * time.Second, group: "g", view: pods("rc-g-abcde#t3"), want: &verdict{Satisfied: true, Observed: []string{"rc-g-abcde"}}},
		}},
		{"stuck terminating delete expires", []step{
			{record: &expectations.Record{Owner: rc, Group: "g", Action: expectations.Delete, Pod: "w-3", Seen: true}},
			{at: time.Minute, group: "g", view: pods("w-3~"), want: &verdict{Pending: []string{"w-3:still present"}, NextChange: at(5 * time.Minute)}},
			{at: 5 * time.Minute, group: "g", view: pods("w-3~"), want: &verdict{Satisfied: true, Expired: []string{"w-3"}}},
		}},
		{"recording under a new UID drops the old owner's items", []step{
			{record: rec(expectations.Create, "g", "a")},
			{record: &expectations.Record{Owner: other, Group: "g", Action: expectations.Create, Pod: "b"}},
			{group: "g", want: ok()},
		}},
		{"rollback of an unknown token does nothing", []step{
			{record: rec(expectations.Create, "g", "a")},
			{ref: &expectations.Ref{Group: "g", Token: "nope"}, result: expectations.CallFailed},
			{group: "g", want: &verdict{Pending: []string{"a:unseen"}, NextChange: at(5 * time.Minute)}},
		}},
		{"never attempted rolls back", []step{
			{record: rec(expectations.Create, "g", "a")},
			{ref: &expectations.Ref{Group: "g", Pod: "a"}, result: expectations.CallNotAttempted},
			{group: "g", want: ok()},
		}},
		{"resolution restarts the deadline", []step{
			{record: &expectations.Record{Owner: rc, Group: "g", Action: expectations.Create, Token: "t"}},
			{at: 4 * time.Minute, ref: &expectations.Ref{Group: "g", Token: "t"}, result: expectations.CallSucceeded, name: "p"},
			{at: 6 * time.Minute, group: "g", want: &verdict{Pending: []string{"p:unseen"}, NextChange: at(9 * time.Minute)}},
		}},
		{"latest action wins, seen carries over", []step{
			{record: rec(expectations.Create, "g", "a")},
			{observe: &expectations.ObservedPod{Name: "a"}},
			{record: rec(expectations.Delete, "g", "a")},
			{view: pods(), group: "g", want: &verdict{Satisfied: true, Observed: []string{"a"}}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runSteps(t, o, tc.steps) })
	}
}

func TestLingeringWhenThePlannerCountsTerminatingPods(t *testing.T) {
	o := expectations.Options{CountsTerminating: true}
	runSteps(t, o, []step{
		{record: &expectations.Record{Owner: rc, Group: "g", Action: expectations.Delete, Pod: "w-3", Seen: true}},
		{at: 5 * time.Minute, group: "g", view: pods("w-3~"), want: &verdict{Satisfied: true, Expired: []string{"w-3"}, Linger: []string{"w-3"}}},
		{at: 6 * time.Minute, group: "g", view: pods("w-3~"), want: &verdict{Satisfied: true, Linger: []string{"w-3"}}},
		{at: 7 * time.Minute, group: "g", view: pods(), want: ok()},
	})
}

// TestConcludeTable is Conclude's table: what each call outcome does to a create
// and to a delete.
func TestConcludeTable(t *testing.T) {
	type row struct {
		action expectations.Action
		seen   bool
		result expectations.CallResult
		kept   bool
		res    expectations.Resolution
	}
	rows := []row{
		{expectations.Create, false, expectations.CallSucceeded, true, expectations.Resolved},
		{expectations.Create, false, expectations.CallAlreadyDone, true, expectations.Resolved},
		{expectations.Create, false, expectations.CallFailed, false, ""},
		{expectations.Create, false, expectations.CallAmbiguous, true, expectations.Ambiguous},
		{expectations.Create, false, expectations.CallNotAttempted, false, ""},
		{expectations.Delete, true, expectations.CallSucceeded, true, expectations.Resolved},
		{expectations.Delete, true, expectations.CallAlreadyDone, true, expectations.Resolved},
		{expectations.Delete, false, expectations.CallAlreadyDone, false, ""},
		{expectations.Delete, true, expectations.CallFailed, false, ""},
		{expectations.Delete, true, expectations.CallAmbiguous, true, expectations.Ambiguous},
		{expectations.Delete, true, expectations.CallNotAttempted, false, ""},
	}
	for _, r := range rows {
		t.Run(r.action.String()+"/"+r.result.String()+map[bool]string{true: "/seen"}[r.seen], func(t *testing.T) {
			s := mustNew(t, expectations.Options{})
			ref := record(t, s, t0, expectations.Record{Owner: rc, Action: r.action, Pod: "p", Seen: r.seen})
			found, err := s.Conclude(at(time.Minute), ref, r.result, "", "")
			if err != nil || !found {
				t.Fatalf("Conclude = %v, %v", found, err)
			}
			if got := s.Len() == 1; got != r.kept {
				t.Fatalf("kept = %v, want %v", got, r.kept)
			}
			if !r.kept {
				return
			}
			res, _ := s.Check(at(time.Minute), rc, "", pods("p"))
			var e expectations.Entry
			switch {
			case len(res.Pending) == 1:
				e = res.Pending[0]
			case len(res.Observed) == 1:
				e = res.Observed[0]
			default:
				t.Fatalf("result:\n%s", res)
			}
			if e.Resolution != r.res || !e.Deadline.Equal(at(6*time.Minute)) {
				t.Fatalf("entry = %+v, want resolution %v and the deadline restarted", e, r.res)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	cases := []struct {
		name  string
		a     expectations.Action
		err   error
		fixed bool
		want  expectations.CallResult
	}{
		{"nil", expectations.Create, nil, false, expectations.CallSucceeded},
		{"exists fixed", expectations.Create, apierrors.NewAlreadyExists(gr, "p"), true, expectations.CallAlreadyDone},
		{"exists generated", expectations.Create, apierrors.NewAlreadyExists(gr, "p"), false, expectations.CallFailed},
		{"delete not found", expectations.Delete, apierrors.NewNotFound(gr, "p"), false, expectations.CallAlreadyDone},
		{"create not found", expectations.Create, apierrors.NewNotFound(gr, "ns"), false, expectations.CallFailed},
		{"quota", expectations.Create, apierrors.NewForbidden(gr, "p", errors.New("exceeded quota")), false, expectations.CallFailed},
		{"invalid", expectations.Create, apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "p", nil), false, expectations.CallFailed},
		{"precondition", expectations.Delete, apierrors.NewConflict(gr, "p", errors.New("uid")), false, expectations.CallFailed},
		{"server timeout", expectations.Create, apierrors.NewServerTimeout(gr, "create", 1), false, expectations.CallAmbiguous},
		{"timeout", expectations.Create, apierrors.NewTimeoutError("x", 1), false, expectations.CallAmbiguous},
		{"internal", expectations.Create, apierrors.NewInternalError(errors.New("x")), false, expectations.CallAmbiguous},
		{"unavailable", expectations.Delete, apierrors.NewServiceUnavailable("x"), false, expectations.CallAmbiguous},
		{"connection", expectations.Create, errors.New("connection reset"), false, expectations.CallAmbiguous},
		{"cancelled", expectations.Create, context.Canceled, false, expectations.CallAmbiguous},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := expectations.Classify(tc.a, tc.err, tc.fixed); got != tc.want {
				t.Fatalf("Classify = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNilStateHoldsNothing(t *testing.T) {
	var s *expectations.State
	r, err := s.Check(t0, rc, "g", nil)
	if err != nil || !r.Satisfied || s.Len() != 0 || s.Count(rc) != 0 || s.Groups(rc) != nil {
		t.Fatalf("nil State: %v %v", r, err)
	}
	if _, err := s.Check(t0, expectations.Owner{Name: "x"}, "g", nil); !errors.Is(err, expectations.ErrInvalidOwner) {
		t.Fatalf("nil State accepted an owner without UID: %v", err)
	}
}

// TestIntoVariantsMatch checks CheckInto and SatisfiedInto against Check and
// Satisfied, reusing one Result whose lists held other entries before.
func TestIntoVariantsMatch(t *testing.T) {
	s := mustNew(t, expectations.Options{})
	for _, p := range []string{"a", "b", "c"} {
		record(t, s, t0, expectations.Record{Owner: rc, Group: "g", Action: expectations.Create, Pod: p})
	}
	record(t, s, t0, expectations.Record{Owner: rc, Group: "h", Action: expectations.Delete, Pod: "d", Seen: true})
	view := pods("a", "d")
	var reused expectations.Verdict
	for _, group := range []string{"g", "h", "g", "none"} {
		want, _ := s.Clone().Check(at(time.Second), rc, group, view)
		if err := s.CheckInto(&reused, at(time.Second), rc, group, view); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, reused); diff != "" {
			t.Fatalf("CheckInto group %q (-Check +CheckInto):\n%s", group, diff)
		}
		want, _ = s.Clone().Satisfied(at(time.Second), rc, group, view)
		if err := s.SatisfiedInto(&reused, at(time.Second), rc, group, view); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, reused); diff != "" {
			t.Fatalf("SatisfiedInto group %q (-Satisfied +SatisfiedInto):\n%s", group, diff)
		}
	}
	if err := s.SatisfiedInto(&reused, t0, expectations.Owner{Name: "x"}, "g", nil); !errors.Is(err, expectations.ErrInvalidOwner) || reused.Satisfied {
		t.Fatalf("bad owner: %v, satisfied %v", err, reused.Satisfied)
	}
}

// TestPropHostileTimeouts draws extreme option and record timeouts: each is
// refused naming its field, or the item's wait is never negative and never
// wraps into the past. (Letting a negative Record.Timeout through
// record.validate makes it fail: the item expires as it is recorded.)
func TestPropHostileTimeouts(t *testing.T) {
	extremes := []time.Duration{0, -1, 1, time.Second, math.MaxInt64, math.MinInt64, -2}
	rapid.Check(t, func(t *rapid.T) {
		o := expectations.Options{
			CreateTimeout: rapid.SampledFrom(extremes).Draw(t, "create"),
			DeleteTimeout: rapid.SampledFrom(extremes).Draw(t, "delete"),
		}
		s, err := expectations.New(o)
		if err != nil {
			if !errors.Is(err, expectations.ErrInvalidOptions) {
				t.Fatalf("New: %v", err)
			}
			for _, f := range fieldsOf(t, err) {
				if f != "createTimeout" && f != "deleteTimeout" {
					t.Fatalf("New names %s: %v", f, err)
				}
			}
			return
		}
		timeout := rapid.SampledFrom(extremes).Draw(t, "record")
		_, err = s.Record(t0, expectations.Record{Owner: rc, Action: expectations.Create, Pod: "p", Timeout: timeout})
		if err != nil {
			if !errors.Is(err, expectations.ErrInvalidRecord) || !slices.Equal(fieldsOf(t, err), []string{"record.timeout"}) {
				t.Fatalf("Record: %v", err)
			}
			return
		}
		r, err := s.Check(t0, rc, "", expectations.NewView(nil))
		if err != nil {
			t.Fatal(err)
		}
		if r.RequeueAfter < 0 {
			t.Fatalf("RequeueAfter %v is negative", r.RequeueAfter)
		}
		if len(r.Expired) != 0 {
			t.Fatalf("an item recorded at %v expired at once:\n%s", t0, r)
		}
		if len(r.Pending) == 1 && !r.Pending[0].Deadline.IsZero() && r.Pending[0].Deadline.Before(t0) {
			t.Fatalf("deadline %v is before the record at %v", r.Pending[0].Deadline, t0)
		}
	})
}

func badInputCalls(t *testing.T) {
	s := mustNew(t, expectations.Options{})
	noUID := expectations.Owner{Namespace: "ns", Name: "rc"}
	if _, err := s.Check(t0, noUID, "", nil); !errors.Is(err, expectations.ErrInvalidOwner) {
		t.Errorf("Check: %v", err)
	}
	if _, err := s.Satisfied(t0, noUID, "", nil); !errors.Is(err, expectations.ErrInvalidOwner) {
		t.Errorf("Satisfied: %v", err)
	}
	if _, err := s.Observe(noUID, expectations.ObservedPod{Name: "p"}); !errors.Is(err, expectations.ErrInvalidOwner) {
		t.Errorf("Observe: %v", err)
	}
	if _, err := s.Observe(rc, expectations.ObservedPod{}); !errors.Is(err, expectations.ErrInvalidRecord) {
		t.Errorf("Observe without name: %v", err)
	}
	if _, err := s.Forget(expectations.Owner{Namespace: "ns"}); !errors.Is(err, expectations.ErrInvalidOwner) {
		t.Errorf("Forget: %v", err)
	}
	if _, err := s.Rollback(expectations.Ref{Owner: rc}); !errors.Is(err, expectations.ErrInvalidRecord) {
		t.Errorf("Rollback of an empty ref: %v", err)
	}
	if _, err := s.Conclude(t0, expectations.Ref{Owner: rc, Pod: "p"}, "", "", ""); !errors.Is(err, expectations.ErrInvalidRecord) {
		t.Errorf("Conclude with result 0: %v", err)
	}
	if _, err := s.Begin(t0, expectations.Record{Owner: rc, Action: expectations.Create, Pod: "p"}, "Whenever"); !errors.Is(err, expectations.ErrInvalidRecord) {
		t.Errorf("Begin with mode 7: %v", err)
	}
	if _, err := s.Prune(t0, []expectations.Owner{noUID}); !errors.Is(err, expectations.ErrInvalidOwner) {
		t.Errorf("Prune: %v", err)
	}
}

func badInputZeroNow(t *testing.T) {
	// A record at the zero time would expire at once; a check at the zero
	// time would keep every deadline pending. Every method refuses it.
	s := mustNew(t, expectations.Options{})
	ref, err := s.Record(t0, expectations.Record{Owner: rc, Action: expectations.Create, Pod: "p"})
	if err != nil {
		t.Fatal(err)
	}
	var zero time.Time
	tk := expectations.Ticket{Record: expectations.Record{Owner: rc, Action: expectations.Create, Pod: "p"}}
	calls := map[string]func() error{
		"Record": func() error {
			_, err := s.Record(zero, expectations.Record{Owner: rc, Action: expectations.Create, Pod: "q"})
			return err
		},
		"Conclude":  func() error { _, err := s.Conclude(zero, ref, expectations.CallSucceeded, "", ""); return err },
		"Resolve":   func() error { _, err := s.Resolve(zero, ref, "", ""); return err },
		"Begin":     func() error { _, err := s.Begin(zero, tk.Record, expectations.RecordBeforeCall); return err },
		"Finish":    func() error { return s.Finish(zero, tk, expectations.CallSucceeded, "p", "") },
		"Check":     func() error { _, err := s.Check(zero, rc, "", nil); return err },
		"Satisfied": func() error { _, err := s.Satisfied(zero, rc, "", nil); return err },
		"Prune":     func() error { _, err := s.Prune(zero, nil); return err },
	}
	for _, name := range slices.Sorted(maps.Keys(calls)) {
		err := calls[name]()
		if !errors.Is(err, expectations.ErrInvalidInput) || !slices.Equal(fieldsOf(t, err), []string{"now"}) {
			t.Errorf("%s at the zero time: err = %v", name, err)
		}
	}
	if s.Len() != 1 {
		t.Errorf("Len = %d, want the one record made at t0", s.Len())
	}
}

func badInputZeroTracker(t *testing.T) {
	// The zero Tracker is a Tracker with the default options.
	var tr expectations.Tracker
	if n := tr.Len(); n != 0 {
		t.Fatalf("Len = %d", n)
	}
	ref, err := tr.Record(t0, expectations.Record{Owner: rc, Group: "g", Action: expectations.Create, Pod: "p"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := tr.Satisfied(t0, rc, "g", expectations.NewView(nil))
	if err != nil || r.Satisfied || r.RequeueAfter != expectations.DefaultTimeout {
		t.Fatalf("Satisfied = %v, %v", r, err)
	}
	if _, err := tr.Record(t0, expectations.Record{Owner: expectations.Owner{Name: "x"}, Action: expectations.Create, Pod: "p"}); !errors.Is(err, expectations.ErrInvalidOwner) {
		t.Fatalf("owner without UID: %v", err)
	}
	if ok, err := tr.Conclude(t0, ref, expectations.CallFailed, "", ""); !ok || err != nil || tr.Len() != 0 {
		t.Fatalf("Conclude = %v, %v; Len %d", ok, err, tr.Len())
	}
	if tr.Snapshot() == nil || tr.Stats() != (expectations.Stats{}) {
		t.Fatal("snapshot or stats of a zero Tracker")
	}
}
