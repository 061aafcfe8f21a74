package expectations

import (
	"fmt"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plancore/plancore"
)

// Action is what an item expects to happen to its pod.
type Action string

const (
	// Create expects a pod to appear.
	Create Action = "Create"
	// Delete expects a pod to go away.
	Delete Action = "Delete"
)

// String names the action.
func (a Action) String() string {
	switch a {
	case Create:
		return "create"
	case Delete:
		return "delete"
	}
	return fmt.Sprintf("Action(%q)", string(a))
}

// Owner identifies the managed object whose pods are tracked (a RayCluster, a
// ReplicaSet). Which fields are required depends on Options.OwnerIdentity: the
// UID under ByUID, the name under ByName. Namespace and name are also what a
// Forget with an empty UID matches, and the namespace is where the owner's pods
// are looked up in a View.
type Owner struct {
	Namespace string
	Name      string
	UID       types.UID
}

// String renders the owner as namespace/name(uid).
func (o Owner) String() string {
	return fmt.Sprintf("%s/%s(%s)", o.Namespace, o.Name, o.UID)
}

// Resolution says how far the API call behind an item got.
type Resolution string

const (
	// InFlight means the item was recorded before its call and the call has not
	// reported back yet.
	InFlight Resolution = "InFlight"
	// Resolved means the call succeeded, or found its work already done.
	Resolved Resolution = "Resolved"
	// Ambiguous means the call failed in a way that does not say whether it took
	// effect (a timeout, a 5xx, a lost connection).
	Ambiguous Resolution = "Ambiguous"
)

// String names the resolution.
func (r Resolution) String() string {
	switch r {
	case "", InFlight:
		return "in-flight"
	case Resolved:
		return "resolved"
	case Ambiguous:
		return "ambiguous"
	}
	return fmt.Sprintf("Resolution(%q)", string(r))
}

// Record describes one create or delete to expect.
type Record struct {
	// Owner is the owner of the pod.
	Owner Owner
	// Group is the set of pods gated together; "" is a valid group (KubeRay's
	// head group).
	Group string
	// Action is Create or Delete.
	Action Action
	// Pod is the pod's name. A delete needs it; a create with a generated name
	// leaves it empty and carries a Token until the server names the pod.
	Pod string
	// Token stands for a create whose name the server has not assigned yet. The
	// executor allocates it, unique among the owner's live items; stamped on the
	// pod in the TokenAnnotation, it lets a View identify an ambiguous create.
	Token string
	// PodUID, when known, restricts the item to that pod: a pod of the same name
	// with another UID is a different pod.
	PodUID types.UID
	// Seen says the snapshot that planned a delete showed the pod, so its
	// absence proves the delete happened.
	Seen bool
	// Timeout overrides the option's timeout for this item (for example a
	// delete's grace period plus a margin); zero keeps the option, Never disables
	// it.
	Timeout time.Duration
}

// Ref names one recorded item: by pod name once it is known, else by token.
type Ref struct {
	Owner Owner
	Group string
	Pod   string
	Token string
}

// Ref returns the reference to the item r records.
func (r Record) Ref() Ref {
	return Ref{Owner: r.Owner, Group: r.Group, Pod: r.Pod, Token: r.Token}
}

// validate checks the record's own fields; the owner is checked by the State,
// which knows the identity in use.
func (r Record) validate() error {
	switch r.Action {
	case Create:
		if r.Pod == "" && r.Token == "" {
			return plancore.Invalid(ErrInvalidRecord, field.ErrorList{field.Required(field.NewPath("record", "token"), "a create needs record.pod or record.token (group "+strconv.Quote(r.Group)+")")})
		}
	case Delete:
		if r.Pod == "" {
			return plancore.Invalid(ErrInvalidRecord, field.ErrorList{field.Required(field.NewPath("record", "pod"), "a delete needs the pod name (group "+strconv.Quote(r.Group)+")")})
		}
	default:
		return plancore.Invalid(ErrInvalidRecord, field.ErrorList{field.Invalid(field.NewPath("record", "action"), r.Action.String(), "must be Create or Delete")})
	}
	if r.Timeout < 0 && r.Timeout != Never {
		return plancore.Invalid(ErrInvalidRecord, field.ErrorList{field.Invalid(field.NewPath("record", "timeout"), r.Timeout.String(), "negative (use Never to disable it)")})
	}
	return nil
}

func (r Ref) validate() error {
	if r.Pod == "" && r.Token == "" {
		return plancore.Invalid(ErrInvalidRecord, field.ErrorList{field.Required(field.NewPath("ref", "pod"), "ref.pod and ref.token are both empty")})
	}
	return nil
}
