// Package plancore holds the types every core shares: the error that reports
// invalid input or options, every problem at once, and the Reason that says
// why a core decided what it did.
//
// Every core uses the same words for the same things:
//
//   - a Plan is what a decision function returns: actions to apply, with a
//     Reason for each;
//   - a Reason is Reason[Code, Facts]: a code constant Reason<Name> whose
//     value is <Name>, a message for people, and the facts it states;
//   - an action's kind is a constant Action<Verb> of the core's ActionKind,
//     whose value is <Verb>;
//   - a Verdict is a decision's answer to the caller's loop (requeue, wait,
//     go ahead);
//   - a Result is what one executor or store call reported;
//   - an Outcome is how something ended: a flow, a bind, a recorded call.
//
// Each core (reconcile, expectations, dag, capacity, lock, gpu, vcluster) defines
// its own sentinels ErrInvalidInput and ErrInvalidOptions and returns them inside an
// *InvalidError, so a caller can both test the kind with errors.Is and read each
// problem's field path and value:
//
//	plan, err := reconcile.Decide(in, reconcile.Options{})
//	if errors.Is(err, reconcile.ErrInvalidInput) {
//		var inv *plancore.InvalidError
//		errors.As(err, &inv)
//		for _, e := range inv.Errors {
//			log.Printf("%s: %s", e.Field, e.Detail)
//		}
//	}
package plancore

import (
	"errors"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// InvalidError reports every problem found in one input or options value, each
// naming its field path and bad value. It wraps Kind, a core's ErrInvalidInput or
// ErrInvalidOptions sentinel.
type InvalidError struct {
	// Kind is the sentinel the error wraps (for example dag.ErrInvalidInput).
	Kind error
	// Errors lists every problem, in the order validation found them.
	Errors field.ErrorList
}

// Invalid returns an *InvalidError of kind for errs, or nil when errs is empty,
// so that validators can end with `return plancore.Invalid(ErrInvalidInput, errs)`.
func Invalid(kind error, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return &InvalidError{Kind: kind, Errors: errs}
}

// Error names the kind and then each problem, separated by "; ".
func (e *InvalidError) Error() string {
	var b strings.Builder
	if e.Kind != nil {
		b.WriteString(e.Kind.Error())
	} else {
		b.WriteString("invalid")
	}
	b.WriteString(": ")
	for i, fe := range e.Errors {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(fe.Error())
	}
	return b.String()
}

// Unwrap returns Kind, so errors.Is(err, core.ErrInvalidInput) holds.
func (e *InvalidError) Unwrap() error { return e.Kind }

// Fields returns the field paths of every problem, in order: handy in tests that
// assert which fields were named.
func (e *InvalidError) Fields() []string {
	out := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		out[i] = fe.Field
	}
	return out
}

// Join returns one *InvalidError that names every problem of errs in order,
// when each non-nil err is or wraps an *InvalidError (options and input
// checked together, say). Its Kind matches every joined kind, so
// errors.Is(err, core.ErrInvalidOptions) and errors.Is(err,
// core.ErrInvalidInput) both hold while errors.As finds one list of every
// field. If any err is of another kind, Join is errors.Join(errs...); with
// no non-nil err it is nil.
func Join(errs ...error) error {
	var joined *InvalidError
	var kinds kindSet
	for _, err := range errs {
		if err == nil {
			continue
		}
		var inv *InvalidError
		if !errors.As(err, &inv) {
			return errors.Join(errs...)
		}
		if joined == nil {
			joined = &InvalidError{}
		}
		kinds = append(kinds, inv.Kind)
		joined.Errors = append(joined.Errors, inv.Errors...)
	}
	if joined == nil {
		return nil
	}
	if len(kinds) == 1 {
		joined.Kind = kinds[0]
	} else {
		joined.Kind = kinds
	}
	return joined
}

// kindSet is the Kind of a joined InvalidError: it is each of its kinds.
type kindSet []error

func (k kindSet) Error() string {
	msgs := make([]string, len(k))
	for i, e := range k {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, ", ")
}

func (k kindSet) Unwrap() []error { return k }
