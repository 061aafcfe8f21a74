package plancore

import "reflect"

// IsNil reports whether v is nil, or an interface value holding a nil
// pointer, map, slice, channel or function: a typed nil such as
// (*fake.ReconcileExecutor)(nil), which compares unequal to nil once it is
// an interface. Every core's Apply refuses both kinds of nil executor or
// store with an error instead of calling a method on it.
func IsNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func, reflect.Interface, reflect.UnsafePointer:
		return rv.IsNil()
	}
	return false
}

// SubError returns a sentinel error with its own message that is also kind:
// errors.Is(err, kind) holds for it and for every error wrapping it. The
// cores use it for the narrower sentinels of invalid input (a nil executor,
// an invalid plan), so one test for ErrInvalidInput catches them all.
func SubError(msg string, kind error) error { return &subError{msg: msg, kind: kind} }

type subError struct {
	msg  string
	kind error
}

func (e *subError) Error() string { return e.msg }

// Is makes the sentinel match its kind.
func (e *subError) Is(target error) bool { return target == e.kind }
