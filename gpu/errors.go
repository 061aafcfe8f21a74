package gpu

import (
	"errors"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plancore/plancore"
)

// ErrInvalidInput is wrapped by every error about invalid input: a fit's
// request or nodes, a Bind input, a pod's device request or annotations, a
// registry, an allocation encoding, a device's recorded usage. Every
// validating function (Decide, StartBind, Options.Validate, AddUsage,
// NewRegistry, Registry.With, DetectRequests, Registry.Requests,
// RequiredLocks, FitRequestFromPod, DecodeAllocations, ParseLockEpochs)
// returns a *plancore.InvalidError listing every problem with its field path
// and bad value; its Kind is one of the finer sentinels below, which all
// wrap ErrInvalidInput, so errors.Is holds for both.
var ErrInvalidInput = errors.New("gpu: invalid input")

// ErrInvalidOptions is wrapped (inside a *plancore.InvalidError) by every
// error Options.Validate returns.
var ErrInvalidOptions = errors.New("gpu: invalid options")

// ErrNilExecutor is returned by ApplyBind for a nil BindExecutor or Waiter,
// and by Binder.Bind for a nil Executor. It wraps ErrInvalidInput.
var ErrNilExecutor = subError("gpu: nil executor or waiter")

// ErrInvalidRegistry is wrapped by every error that rejects a device type or a
// registry: an empty type name, a duplicated type or resource name, a malformed
// resource or lock name.
var ErrInvalidRegistry = subError("gpu: invalid device registry")

// ErrInvalidRequest is wrapped by every error about a pod's device request: a
// non-integer, negative or int32-overflowing quantity, or a policy annotation with
// an unknown value. HAMi silently drops such requests, so a pod asking for
// "1.5" GPUs is scheduled with none; plancore refuses it and names the
// quantity by its path in the pod
// (spec.containers[1].resources.limits[nvidia.com/gpu]).
var ErrInvalidRequest = subError("gpu: invalid device request")

// ErrInvalidDevice is wrapped by every error about a node's registered devices or
// the usage recorded against them: a duplicated UUID, a negative capacity, an
// allocation naming a device the node does not have or larger than the device.
var ErrInvalidDevice = subError("gpu: invalid device")

// ErrInvalidAllocation is wrapped by every error decoding the
// hami.io/<x>-devices-to-allocate annotation encoding.
var ErrInvalidAllocation = subError("gpu: invalid device allocation encoding")

// ErrInvalidBind is wrapped by every error about a Bind input or a Bind state
// machine driven out of order (an event the current state does not expect).
var ErrInvalidBind = subError("gpu: invalid bind")

// ErrOutcomeUnknown is what a BindExecutor wraps when a Bind call's outcome is
// unknown (a timeout after the request was sent). ApplyBind then re-reads the
// pod instead of releasing locks a bound pod may still need.
// context.DeadlineExceeded is treated the same way.
var ErrOutcomeUnknown = errors.New("gpu: bind outcome unknown")

// subError is a finer invalid-input sentinel: its own message, and it wraps
// ErrInvalidInput.
type subError string

func (e subError) Error() string { return string(e) }
func (e subError) Unwrap() error { return ErrInvalidInput }

// invalid is plancore.Invalid for a finer sentinel. The sentinel becomes an
// error (a string boxed on the heap) only when errs is not empty, so a check
// of valid input allocates nothing.
func invalid(kind subError, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return plancore.Invalid(kind, errs)
}
