package lock

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plancore/plancore"
)

// Key names one lock: a lock name (a Node annotation such as HAMiLockName) on
// one node.
type Key struct {
	// Name is the lock name, e.g. HAMiLockName.
	Name string
	// Node is the node's name.
	Node string
}

// NodeKey returns the key of HAMi's shared node lock on node.
func NodeKey(node string) Key { return Key{Name: HAMiLockName, Node: node} }

// String renders the key as node/name.
func (k Key) String() string { return k.Node + "/" + k.Name }

// Validate reports an empty node or lock name, wrapping ErrInvalidInput.
func (k Key) Validate() error {
	return plancore.Invalid(ErrInvalidInput, k.validate(func() *field.Path { return field.NewPath("key") }))
}

func (k Key) validate(p func() *field.Path) field.ErrorList {
	var errs field.ErrorList
	if k.Name == "" {
		errs = append(errs, field.Required(p().Child("name"), "the lock name, e.g. "+HAMiLockName))
	}
	if k.Node == "" {
		errs = append(errs, field.Required(p().Child("node"), "the node's name"))
	}
	return errs
}

// Requester is the pod asking for, or giving back, a lock.
type Requester struct {
	Namespace, Name string
	// UID is the pod's UID; optional, but with it a re-created pod of the same
	// name is told apart from its predecessor.
	UID string
}

// String renders the requester as namespace/name, with the UID if any.
func (r Requester) String() string {
	if r.UID == "" {
		return r.Namespace + "/" + r.Name
	}
	return r.Namespace + "/" + r.Name + "(" + r.UID + ")"
}

// Validate reports an empty namespace or name, or a field containing the
// separator, wrapping ErrInvalidInput. HAMi's equivalent is "pod is nil".
func (r Requester) Validate() error {
	return plancore.Invalid(ErrInvalidInput, r.validate(func() *field.Path { return field.NewPath("requester") }))
}

func (r Requester) validate(p func() *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct {
		name, value string
		required    bool
	}{{"namespace", r.Namespace, true}, {"name", r.Name, true}, {"uid", r.UID, false}} {
		switch {
		case f.value == "" && f.required:
			errs = append(errs, field.Required(p().Child(f.name), "the pod's "+f.name))
		case strings.Contains(f.value, Separator):
			errs = append(errs, field.Invalid(p().Child(f.name), f.value, "must not contain "+strconv.Quote(Separator)))
		}
	}
	return errs
}

// HolderState is what a lookup of the lock's holder pod found.
type HolderState string

const (
	// HolderNotChecked (the zero value) means no lookup was made. Where a
	// holder is needed (see NeedsHolder), PlanAcquire then refuses with
	// HolderUnknown rather than guess.
	HolderNotChecked HolderState = ""
	// HolderExists means the pod exists and is not terminal.
	HolderExists HolderState = "Exists"
	// HolderNotFound means the pod does not exist (or, with Holder.Replaced, a
	// different pod of the same name does).
	HolderNotFound HolderState = "NotFound"
	// HolderTerminal means the pod is Succeeded or Failed.
	HolderTerminal HolderState = "Terminal"
	// HolderUnknown means the lookup failed for another reason.
	HolderUnknown HolderState = "Unknown"
)

// String returns the state's name ("NotChecked" for the zero value).
func (s HolderState) String() string {
	if s == HolderNotChecked {
		return "NotChecked"
	}
	return string(s)
}

func (s HolderState) known() bool {
	switch s {
	case HolderNotChecked, HolderExists, HolderNotFound, HolderTerminal, HolderUnknown:
		return true
	}
	return false
}

// Holder is the observed state of the lock's holder pod.
type Holder struct {
	State HolderState
	// Allocating is set for an existing pod that is Pending with
	// hami.io/bind-phase=allocating: Bind has run and the device plugin has not
	// finished Allocate. Such a holder is protected from expiry steals (see
	// Options.AllocatingCeiling).
	Allocating bool
	// Replaced is set with HolderNotFound when a pod of the holder's name
	// exists but its UID differs from the record's.
	Replaced bool
}

// Observation is one read of a lock from a Store, plus what the caller
// remembers about it.
type Observation struct {
	// Key is the lock that was read.
	Key Key
	// Present reports whether the lock value exists; Raw is the value.
	Present bool
	Raw     string
	// Sidecar is the extended record a Node store keeps next to a HAMi-format
	// value (see SidecarAnnotation), or "". It supplies the UID and epoch when
	// its first three fields equal Raw.
	Sidecar string
	// Version is the store's compare-and-swap token: a Node's resourceVersion,
	// a counter, or the raw value. An absent key has a version too.
	Version string
	// EpochHigh is the highest epoch ever granted for the key; it survives
	// releases.
	EpochHigh uint64
	// FirstObservedAt is the local time at which the caller first saw this
	// exact value (Raw, with its epoch). Stores leave it zero; the shell fills
	// it. It is keyed by value, not Version, because a Node's resourceVersion
	// also changes with unrelated writes. Zero means "just now".
	FirstObservedAt time.Time
}

// Precondition is the state a Store write requires: the key absent, or holding
// exactly Raw, at Version.
type Precondition struct {
	// Present false means "absent at Version"; true means "holds Raw at Version".
	Present bool
	Raw     string
	Version string
}

// String renders the precondition.
func (p Precondition) String() string {
	if !p.Present {
		return fmt.Sprintf("absent at %q", p.Version)
	}
	return fmt.Sprintf("holds %q at %q", p.Raw, p.Version)
}

// precondition returns the precondition matching what obs saw.
func (obs Observation) precondition() Precondition {
	if !obs.Present {
		return Precondition{Version: obs.Version}
	}
	return Precondition{Present: true, Raw: obs.Raw, Version: obs.Version}
}
