package lock

import (
	"fmt"
	"strings"
	"time"
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

// Validate reports an empty node or lock name, wrapping ErrBadInput.
func (k Key) Validate() error {
	if k.Node == "" {
		return fmt.Errorf("%w: Key.Node is empty (lock name %q)", ErrBadInput, k.Name)
	}
	if k.Name == "" {
		return fmt.Errorf("%w: Key.Name is empty (node %q)", ErrBadInput, k.Node)
	}
	return nil
}

// Requester is the pod asking for, or giving back, a lock.
type Requester struct {
	Namespace, Name string
	// UID is the pod's UID; optional, but with it a re-created pod of the same
	// name is told apart from its predecessor (D4).
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
// separator, wrapping ErrBadInput. HAMi's equivalent is "pod is nil".
func (r Requester) Validate() error {
	switch {
	case r.Namespace == "":
		return fmt.Errorf("%w: Requester.Namespace is empty (name %q)", ErrBadInput, r.Name)
	case r.Name == "":
		return fmt.Errorf("%w: Requester.Name is empty (namespace %q)", ErrBadInput, r.Namespace)
	case strings.Contains(r.Namespace, Separator):
		return fmt.Errorf("%w: Requester.Namespace %q contains %q", ErrBadInput, r.Namespace, Separator)
	case strings.Contains(r.Name, Separator):
		return fmt.Errorf("%w: Requester.Name %q contains %q", ErrBadInput, r.Name, Separator)
	case strings.Contains(r.UID, Separator):
		return fmt.Errorf("%w: Requester.UID %q contains %q", ErrBadInput, r.UID, Separator)
	}
	return nil
}

// HolderState is what a lookup of the lock's holder pod found.
type HolderState uint8

const (
	// HolderNotChecked (the zero value) means no lookup was made. Where a
	// holder is needed (see NeedsHolder), Decide then refuses with
	// HolderUnknown rather than guess.
	HolderNotChecked HolderState = iota
	// HolderExists means the pod exists and is not terminal.
	HolderExists
	// HolderNotFound means the pod does not exist (or, with Holder.Replaced, a
	// different pod of the same name does).
	HolderNotFound
	// HolderTerminal means the pod is Succeeded or Failed.
	HolderTerminal
	// HolderUnknown means the lookup failed for another reason.
	HolderUnknown
)

var holderStateNames = [...]string{"NotChecked", "Exists", "NotFound", "Terminal", "Unknown"}

// String returns the state's name.
func (s HolderState) String() string {
	if int(s) < len(holderStateNames) {
		return holderStateNames[s]
	}
	return fmt.Sprintf("HolderState(%d)", int(s))
}

// Holder is the observed state of the lock's holder pod.
type Holder struct {
	State HolderState
	// Allocating is set for an existing pod that is Pending with
	// hami.io/bind-phase=allocating: Bind has run and the device plugin has not
	// finished Allocate. Such a holder is protected from expiry steals (D7).
	Allocating bool
	// Replaced is set with HolderNotFound when a pod of the holder's name
	// exists but its UID differs from the record's (D4).
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
