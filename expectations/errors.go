package expectations

import (
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plancore/plancore"
)

// ErrInvalidInput is wrapped by every error about an argument that cannot be
// used: a zero now, an unusable owner (ErrInvalidOwner) or a record or ref that
// names no item (ErrInvalidRecord).
var ErrInvalidInput = errors.New("expectations: invalid input")

// ErrInvalidOwner is wrapped by every error about an unusable owner: an empty UID
// under ByUID identity, an empty name under ByName identity, or a Forget that
// names nothing. It wraps ErrInvalidInput.
var ErrInvalidOwner error = &finerError{msg: "expectations: invalid owner", kind: ErrInvalidInput}

// ErrInvalidRecord is wrapped by every error about a Record or Ref that cannot
// name an item: an unknown action, a delete without a pod name, a create with
// neither a pod name nor a token, or a negative timeout other than Never. It
// wraps ErrInvalidInput.
var ErrInvalidRecord error = &finerError{msg: "expectations: invalid record", kind: ErrInvalidInput}

// ErrInvalidOptions is wrapped by every error Options.Validate returns.
var ErrInvalidOptions = errors.New("expectations: invalid options")

// finerError is a sentinel that is also its kind (errors.Is(ErrInvalidOwner,
// ErrInvalidInput) holds) while keeping its own message.
type finerError struct {
	msg  string
	kind error
}

func (e *finerError) Error() string { return e.msg }
func (e *finerError) Unwrap() error { return e.kind }

// checkNow refuses a zero now: an item recorded at the zero time expires at
// once, and a check at the zero time would keep every deadline pending.
func checkNow(now time.Time) error {
	if now.IsZero() {
		return plancore.Invalid(ErrInvalidInput, field.ErrorList{
			field.Required(field.NewPath("now"), "the caller's clock reading; a zero time would expire or freeze every deadline")})
	}
	return nil
}
