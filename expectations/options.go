package expectations

import (
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plancore/plancore"
)

// Never, as a timeout, means an item never expires: it settles only when it is
// observed (or is forgotten). It is the KubeRay delete timeout.
const Never time.Duration = -1

// DefaultTimeout is plancore's create and delete timeout. Kubernetes'
// ControllerExpectations uses the same 5 minutes, per owner; plancore applies it
// per item.
const DefaultTimeout = 5 * time.Minute

// DeleteRule says which view of a deleted pod satisfies its delete item.
type DeleteRule string

const (
	// SatisfiedByAbsent (the default, and KubeRay's rule since PR #3520) settles a
	// delete only once the pod is gone from the view.
	SatisfiedByAbsent DeleteRule = "Absent"
	// SatisfiedByTerminating settles a delete as soon as the view shows the pod
	// terminating (Kubernetes' ReplicaSet). It is safe only for a planner that does
	// not count terminating pods: Validate rejects it with CountsTerminating
	// (KubeRay #3286).
	SatisfiedByTerminating DeleteRule = "Terminating"
)

// String names the rule.
func (r DeleteRule) String() string {
	switch r {
	case "", SatisfiedByAbsent:
		return "absent"
	case SatisfiedByTerminating:
		return "terminating"
	}
	return fmt.Sprintf("DeleteRule(%q)", string(r))
}

// ExpiryRule says what happens to an item whose deadline passed unobserved.
type ExpiryRule string

const (
	// Unblock (the default) settles the item as Expired, so the group can proceed.
	Unblock ExpiryRule = "Unblock"
	// Block keeps the item pending with reason Expired, so the group stays
	// blocked until the item is observed or forgotten (OpenKruise's default).
	Block ExpiryRule = "Block"
)

// String names the rule.
func (r ExpiryRule) String() string {
	switch r {
	case "", Unblock:
		return "unblock"
	case Block:
		return "block"
	}
	return fmt.Sprintf("ExpiryRule(%q)", string(r))
}

// Identity says how owners are told apart.
type Identity string

const (
	// ByUID (the default) keys owners by UID, so an owner deleted and recreated
	// under the same namespace and name never inherits the old one's items
	// (kubernetes #69376).
	ByUID Identity = "UID"
	// ByName keys owners by namespace and name, as all three anchors do.
	ByName Identity = "Name"
)

// String names the identity.
func (i Identity) String() string {
	switch i {
	case "", ByUID:
		return "uid"
	case ByName:
		return "name"
	}
	return fmt.Sprintf("Identity(%q)", string(i))
}

// Options configures a State. The zero value means plancore's defaults: 5 minute
// create and delete timeouts, deletes satisfied by absence only after the pod was
// seen, expiry that unblocks, owners keyed by UID, and a planner that does not
// count terminating pods.
type Options struct {
	// CreateTimeout bounds how long a create waits to be observed. Zero means
	// DefaultTimeout; Never disables it. KubeRay uses 30 s, which lets a lagging
	// cache cause duplicates (kubernetes #129795, KubeRay PR #2150).
	CreateTimeout time.Duration
	// DeleteTimeout bounds how long a delete waits to be observed. Zero means
	// DefaultTimeout; Never disables it, as in KubeRay, where one pod stuck
	// terminating blocks its group forever (KubeRay #4078).
	DeleteTimeout time.Duration
	// DeleteSatisfiedBy picks the view that settles a delete.
	DeleteSatisfiedBy DeleteRule
	// OnExpiry picks what an unobserved item does at its deadline.
	OnExpiry ExpiryRule
	// OwnerIdentity picks how owners are keyed.
	OwnerIdentity Identity
	// AbsentWithoutSeen, when set, lets a delete settle on the pod's absence even
	// if no snapshot or event ever showed the pod (KubeRay). By default absence
	// counts only after presence: a pod the cache has not shown yet may still
	// appear.
	AbsentWithoutSeen bool
	// CountsTerminating tells the State that the planner it gates counts
	// terminating pods as present (KubeRay counting). A delete that expires while
	// its pod is still in the view then stays Lingering, so the planner can leave
	// that pod out instead of deleting another.
	CountsTerminating bool
}

// KubeRay returns the options that reproduce KubeRay v1.7.0's scale
// expectations: 30 s create timeout, deletes that never time out and settle only
// on NotFound, owners keyed by name, no seen-before-absent rule, and a planner
// that counts terminating pods.
// Assign it whole: each field it sets is one of the anchor's behaviours, and
// copying only some of them reproduces none of the anchor exactly.
func KubeRay() Options {
	return Options{
		CreateTimeout:     30 * time.Second,
		DeleteTimeout:     Never,
		DeleteSatisfiedBy: SatisfiedByAbsent,
		OnExpiry:          Unblock,
		OwnerIdentity:     ByName,
		AbsentWithoutSeen: true,
		CountsTerminating: true,
	}
}

// Kubernetes returns the options closest to Kubernetes' ControllerExpectations as
// the ReplicaSet controller uses them: 5 minute timeouts (per item here, per owner
// there), deletes settled by terminating, owners keyed by name, and a planner
// that does not count terminating pods.
func Kubernetes() Options {
	return Options{
		CreateTimeout:     DefaultTimeout,
		DeleteTimeout:     DefaultTimeout,
		DeleteSatisfiedBy: SatisfiedByTerminating,
		OnExpiry:          Unblock,
		OwnerIdentity:     ByName,
	}
}

// OpenKruise returns the options closest to OpenKruise's scale expectations
// under CloneSet's defaults: the 5 minute --expectation-timeout measured from
// recording, after which the owner stays blocked (ForceDeleteTimeoutExpectation
// is off by default), with owners keyed by name.
func OpenKruise() Options {
	return Options{
		CreateTimeout:     DefaultTimeout,
		DeleteTimeout:     DefaultTimeout,
		DeleteSatisfiedBy: SatisfiedByAbsent,
		OnExpiry:          Block,
		OwnerIdentity:     ByName,
	}
}

// Validate reports every problem with o at once, each naming its field and
// value, in a *plancore.InvalidError wrapping ErrInvalidOptions.
func (o Options) Validate() error {
	var errs field.ErrorList
	if o.CreateTimeout < 0 && o.CreateTimeout != Never {
		errs = append(errs, field.Invalid(field.NewPath("createTimeout"), o.CreateTimeout.String(), "negative (use Never to disable it)"))
	}
	if o.DeleteTimeout < 0 && o.DeleteTimeout != Never {
		errs = append(errs, field.Invalid(field.NewPath("deleteTimeout"), o.DeleteTimeout.String(), "negative (use Never to disable it)"))
	}
	if !slices.Contains([]DeleteRule{"", SatisfiedByAbsent, SatisfiedByTerminating}, o.DeleteSatisfiedBy) {
		errs = append(errs, field.Invalid(field.NewPath("deleteSatisfiedBy"), o.DeleteSatisfiedBy.String(), "unknown rule"))
	}
	if !slices.Contains([]ExpiryRule{"", Unblock, Block}, o.OnExpiry) {
		errs = append(errs, field.Invalid(field.NewPath("onExpiry"), o.OnExpiry.String(), "unknown rule"))
	}
	if !slices.Contains([]Identity{"", ByUID, ByName}, o.OwnerIdentity) {
		errs = append(errs, field.Invalid(field.NewPath("ownerIdentity"), o.OwnerIdentity.String(), "unknown identity"))
	}
	// KubeRay #3286: PR #2150 settled deletes on a DeletionTimestamp while the
	// planner still counted terminating pods, so a scale-down by one deleted more
	// pods than asked, then recreated them.
	if o.DeleteSatisfiedBy == SatisfiedByTerminating && o.CountsTerminating {
		errs = append(errs, field.Invalid(field.NewPath("countsTerminating"), true,
			"with deleteSatisfiedBy terminating, a scale-down deletes more pods than asked (KubeRay #3286)"))
	}
	return plancore.Invalid(ErrInvalidOptions, errs)
}

// timeout returns the effective timeout for action a, given a per-record
// override (0 means none); Never is returned as Never.
func (o Options) timeout(a Action, override time.Duration) time.Duration {
	if override != 0 {
		return override
	}
	t := o.CreateTimeout
	if a == Delete {
		t = o.DeleteTimeout
	}
	if t == 0 {
		return DefaultTimeout
	}
	return t
}
