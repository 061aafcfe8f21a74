package gpu

import "errors"

// ErrInvalidRegistry is wrapped by every error that rejects a device type or a
// registry: an empty type name, a duplicated type or resource name, a malformed
// resource or lock name.
var ErrInvalidRegistry = errors.New("gpu: invalid device registry")

// ErrInvalidRequest is wrapped by every error about a pod's device request: a
// non-integer, negative or int32-overflowing quantity, or a policy annotation with
// an unknown value. HAMi silently drops such requests, so a pod asking for
// "1.5" GPUs is scheduled with none; plancore refuses it and names the container
// and the resource.
var ErrInvalidRequest = errors.New("gpu: invalid device request")

// ErrInvalidDevice is wrapped by every error about a node's registered devices or
// the usage recorded against them: a duplicated UUID, a negative capacity, an
// allocation naming a device the node does not have.
var ErrInvalidDevice = errors.New("gpu: invalid device")

// ErrInvalidAllocation is wrapped by every error decoding the
// hami.io/<x>-devices-to-allocate annotation encoding.
var ErrInvalidAllocation = errors.New("gpu: invalid device allocation encoding")

// ErrInvalidOptions is wrapped by every error Options.Validate returns.
var ErrInvalidOptions = errors.New("gpu: invalid options")

// ErrInvalidBind is wrapped by every error about a Bind input or a Bind state
// machine driven out of order (an event the current state does not expect).
var ErrInvalidBind = errors.New("gpu: invalid bind")

// ErrOutcomeUnknown is what a BindExecutor wraps when a Bind call's outcome is
// unknown (a timeout after the request was sent). ApplyBind then re-reads the
// pod instead of releasing locks a bound pod may still need (spec gpu.md G5).
// context.DeadlineExceeded is treated the same way.
var ErrOutcomeUnknown = errors.New("gpu: bind outcome unknown")
