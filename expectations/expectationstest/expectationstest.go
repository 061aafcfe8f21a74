// Package expectationstest provides rapid generators for package
// expectations: operation sequences (record, conclude, observe, satisfied,
// forget, prune, time passing) over a few owners, groups and pods, views of
// pods, and options, for property tests of controllers that keep
// expectations, in the way net/http/httptest serves tests of net/http code.
// plancore's own properties draw from them and check with
// expectations.CheckResult and expectations.CheckState.
package expectationstest

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"pgregory.net/rapid"

	"github.com/plancore/plancore/expectations"
)

// Start is the time operation sequences start at.
var Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

var (
	// Owners are the owners the operations act for: two in one namespace,
	// one of the same name in another, and a recreation under a new UID.
	Owners = []expectations.Owner{
		{Namespace: "ns", Name: "a", UID: "uid-a"},
		{Namespace: "ns", Name: "b", UID: "uid-b"},
		{Namespace: "other", Name: "a", UID: "uid-c"},
		// A recreation of ns/a under a new UID.
		{Namespace: "ns", Name: "a", UID: "uid-a2"},
	}
	// Groups are the groups the operations use ("" is the head group).
	Groups = []string{"", "g"}
	// Pods are the pod names the operations and views use.
	Pods = []string{"p0", "p1", "p2", "p3"}
)

// Op is one operation on a State (or a Tracker): Kind is record, conclude,
// observe, satisfied, forget, prune or advance; the other fields index Owners,
// Groups and Pods or give the operation's arguments.
type Op struct {
	Kind    string
	Owner   int
	Group   int
	Action  expectations.Action
	Pod     int
	Token   bool
	Seen    bool
	UID     bool
	Timeout time.Duration
	Result  expectations.CallResult
	Advance time.Duration
	View    []PodSpec
}

// PodSpec is one pod in a generated view.
type PodSpec struct {
	Pod         int
	Terminating bool
	UID         int // 0: "u0", 1: "u1"
	Token       bool
}

// View draws 0 to 4 pods of a view: names from Pods, terminating or not, of
// one of two UIDs, with or without a create token.
func View() *rapid.Generator[[]PodSpec] {
	return rapid.SliceOfN(rapid.Custom(func(t *rapid.T) PodSpec {
		return PodSpec{
			Pod:         rapid.IntRange(0, len(Pods)-1).Draw(t, "pod"),
			Terminating: rapid.Bool().Draw(t, "terminating"),
			UID:         rapid.IntRange(0, 1).Draw(t, "uid"),
			Token:       rapid.Bool().Draw(t, "token"),
		}
	}), 0, 4)
}

// BuildPods turns specs into pods of every owner namespace (pods are matched
// by namespace, so one view serves every owner).
func BuildPods(specs []PodSpec) []corev1.Pod {
	var pods []corev1.Pod
	for _, ns := range []string{"ns", "other"} {
		for _, s := range specs {
			p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: Pods[s.Pod], UID: types.UID(fmt.Sprintf("u%d", s.UID))}}
			if s.Terminating {
				ts := metav1.NewTime(Start)
				p.DeletionTimestamp = &ts
			}
			if s.Token {
				p.Annotations = map[string]string{expectations.TokenAnnotation: "tok-" + Pods[s.Pod]}
			}
			pods = append(pods, p)
		}
	}
	return pods
}

// Operation draws an operation for one of the first owners of Owners.
func Operation(owners int) *rapid.Generator[Op] {
	return rapid.Custom(func(t *rapid.T) Op { return drawOp(t, owners) })
}

func drawOp(t *rapid.T, owners int) Op {
	o := Op{
		Kind:  rapid.SampledFrom([]string{"record", "record", "record", "conclude", "observe", "satisfied", "forget", "prune", "advance", "advance"}).Draw(t, "kind"),
		Owner: rapid.IntRange(0, owners-1).Draw(t, "owner"),
		Group: rapid.IntRange(0, len(Groups)-1).Draw(t, "group"),
		Pod:   rapid.IntRange(0, len(Pods)-1).Draw(t, "pod"),
		Token: rapid.Bool().Draw(t, "token"),
	}
	switch o.Kind {
	case "record":
		o.Action = rapid.SampledFrom([]expectations.Action{expectations.Create, expectations.Delete}).Draw(t, "action")
		o.Seen = rapid.Bool().Draw(t, "seen")
		o.UID = rapid.Bool().Draw(t, "withUID")
		o.Timeout = rapid.SampledFrom([]time.Duration{0, 0, 10 * time.Second, expectations.Never}).Draw(t, "timeout")
	case "conclude":
		o.Result = rapid.SampledFrom([]expectations.CallResult{expectations.CallSucceeded, expectations.CallAlreadyDone, expectations.CallFailed, expectations.CallAmbiguous, expectations.CallNotAttempted}).Draw(t, "result")
	case "observe", "satisfied":
		o.View = View().Draw(t, "view")
	case "advance":
		o.Advance = time.Duration(rapid.IntRange(1, 400).Draw(t, "seconds")) * time.Second
	}
	return o
}

// Store is what Apply runs operations on: *expectations.State and
// *expectations.Tracker.
type Store interface {
	Record(time.Time, expectations.Record) (expectations.Ref, error)
	Conclude(time.Time, expectations.Ref, expectations.CallResult, string, types.UID) (bool, error)
	Observe(expectations.Owner, expectations.ObservedPod) (int, error)
	Satisfied(time.Time, expectations.Owner, string, *expectations.View) (expectations.Verdict, error)
	Forget(expectations.Owner) (int, error)
	Prune(time.Time, []expectations.Owner) (int, error)
}

// Apply runs o on s at *now (advance moves *now) and returns a rendering of
// what s returned, so two stores can be compared call by call.
func (o Op) Apply(s Store, now *time.Time) string {
	owner := Owners[o.Owner]
	group := Groups[o.Group]
	pod := Pods[o.Pod]
	ref := expectations.Ref{Owner: owner, Group: group, Pod: pod}
	if o.Token {
		ref = expectations.Ref{Owner: owner, Group: group, Token: "tok-" + pod}
	}
	switch o.Kind {
	case "record":
		r := expectations.Record{Owner: owner, Group: group, Action: o.Action, Pod: pod, Seen: o.Seen, Timeout: o.Timeout}
		if o.UID {
			r.PodUID = "u0"
		}
		if o.Token && o.Action == expectations.Create {
			r.Pod, r.Token = "", "tok-"+pod
		}
		got, err := s.Record(*now, r)
		return fmt.Sprint(got, err)
	case "conclude":
		found, err := s.Conclude(*now, ref, o.Result, pod, "u0")
		return fmt.Sprint(found, err)
	case "observe":
		n := 0
		for _, p := range BuildPods(o.View) {
			if p.Namespace != owner.Namespace {
				continue
			}
			k, err := s.Observe(owner, expectations.ObservedPod{Name: p.Name, UID: p.UID, Token: p.Annotations[expectations.TokenAnnotation]})
			if err != nil {
				return err.Error()
			}
			n += k
		}
		return fmt.Sprint(n)
	case "satisfied":
		r, err := s.Satisfied(*now, owner, group, expectations.NewView(BuildPods(o.View)))
		return fmt.Sprint(r, err)
	case "forget":
		n, err := s.Forget(owner)
		return fmt.Sprint(n, err)
	case "prune":
		n, err := s.Prune(*now, []expectations.Owner{owner})
		return fmt.Sprint(n, err)
	case "advance":
		*now = now.Add(o.Advance)
	}
	return ""
}

// Options draws timeouts (default, 30 s, never), the expiry rule, the owner
// identity and the counting switches.
func Options() *rapid.Generator[expectations.Options] {
	return rapid.Custom(drawOptions)
}

func drawOptions(t *rapid.T) expectations.Options {
	o := expectations.Options{
		CreateTimeout:     rapid.SampledFrom([]time.Duration{0, 30 * time.Second, expectations.Never}).Draw(t, "createTimeout"),
		DeleteTimeout:     rapid.SampledFrom([]time.Duration{0, 30 * time.Second, expectations.Never}).Draw(t, "deleteTimeout"),
		OnExpiry:          rapid.SampledFrom([]expectations.ExpiryRule{expectations.Unblock, expectations.Block}).Draw(t, "onExpiry"),
		OwnerIdentity:     rapid.SampledFrom([]expectations.Identity{expectations.ByUID, expectations.ByName}).Draw(t, "identity"),
		AbsentWithoutSeen: rapid.Bool().Draw(t, "absentWithoutSeen"),
		CountsTerminating: rapid.Bool().Draw(t, "countsTerminating"),
	}
	if !o.CountsTerminating && rapid.Bool().Draw(t, "byTerminating") {
		o.DeleteSatisfiedBy = expectations.SatisfiedByTerminating
	}
	return o
}

// Built is a State built by operations, the time they reached, and the
// operations.
type Built struct {
	State *expectations.State
	Now   time.Time
	Ops   []Op
}

// State draws Options and up to 40 operations for every owner of Owners, and
// runs them from Start.
func State() *rapid.Generator[Built] {
	return rapid.Custom(func(t *rapid.T) Built {
		s, err := expectations.New(drawOptions(t))
		if err != nil {
			t.Fatal(err)
		}
		now := Start
		ops := rapid.SliceOfN(Operation(len(Owners)), 0, 40).Draw(t, "ops")
		for _, o := range ops {
			o.Apply(s, &now)
		}
		return Built{State: s, Now: now, Ops: ops}
	})
}
