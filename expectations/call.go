package expectations

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plancore/plancore"
)

// Classify maps the error of an API call for an item with action a to a
// CallResult: nil is success; AlreadyExists is "already done" for a
// create of a fixed name (fixedName) and a definite failure for a generated
// name (nothing was created); NotFound is "already done" for a delete;
// invalid, forbidden (which includes exceeded quota), conflict (a failed
// precondition), bad request, unauthorised, too many requests and other 4xx
// statuses are definite failures; timeouts, 5xx statuses, cancellation and any
// error that is not an API status are ambiguous.
func Classify(a Action, err error, fixedName bool) CallResult {
	if err == nil {
		return CallSucceeded
	}
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return CallAmbiguous
	case apierrors.IsAlreadyExists(err):
		if a == Create && fixedName {
			return CallAlreadyDone
		}
		return CallFailed
	case apierrors.IsNotFound(err):
		if a == Delete {
			return CallAlreadyDone
		}
		return CallFailed
	case apierrors.IsTimeout(err), apierrors.IsServerTimeout(err):
		return CallAmbiguous
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		if code := status.Status().Code; code >= 400 && code < 500 {
			return CallFailed
		}
	}
	return CallAmbiguous
}

// Recording says when an executor records an item relative to its API call.
// The zero value is RecordBeforeCall.
type Recording string

const (
	// RecordBeforeCall (the default) records before the call and concludes it
	// after, rolling back only a definite failure (the anchors Kubernetes and
	// OpenKruise; fixes KubeRay recording after the call).
	RecordBeforeCall Recording = "BeforeCall"
	// RecordAfterSuccess records only after the call succeeded, under the name
	// the server returned, as KubeRay does. A create that fails yet happens, or a
	// crash between the call and the record, leaves nothing recorded.
	RecordAfterSuccess Recording = "AfterSuccess"
)

// Ticket carries an item from Begin to Finish.
type Ticket struct {
	Record Record
	Mode   Recording
}

// Begin starts an API call for r in mode: RecordBeforeCall records r at now,
// RecordAfterSuccess only validates it.
func (s *State) Begin(now time.Time, r Record, mode Recording) (Ticket, error) {
	if err := checkNow(now); err != nil {
		return Ticket{}, err
	}
	if mode != "" && mode != RecordBeforeCall && mode != RecordAfterSuccess {
		return Ticket{}, plancore.Invalid(ErrInvalidRecord, field.ErrorList{field.Invalid(field.NewPath("mode"), string(mode), "unknown recording mode")})
	}
	if mode == RecordAfterSuccess {
		if _, err := s.ownerKey(r.Owner); err != nil {
			return Ticket{}, err
		}
		if err := r.validate(); err != nil {
			return Ticket{}, err
		}
	} else if _, err := s.Record(now, r); err != nil {
		return Ticket{}, err
	}
	return Ticket{Record: r, Mode: mode}, nil
}

// Finish ends the call t stands for, at now, with the call's result and the
// name and uid the server returned (if any). Under RecordAfterSuccess only a
// success records the item, under the returned name.
func (s *State) Finish(now time.Time, t Ticket, res CallResult, name string, uid types.UID) error {
	if err := checkNow(now); err != nil {
		return err
	}
	if t.Mode == RecordAfterSuccess {
		if res != CallSucceeded {
			return nil
		}
		r := t.Record
		if name != "" {
			r.Pod = name
		}
		if uid != "" {
			r.PodUID = uid
		}
		ref, err := s.Record(now, r)
		if err != nil {
			return err
		}
		_, err = s.Conclude(now, ref, CallSucceeded, "", "")
		return err
	}
	_, err := s.Conclude(now, t.Record.Ref(), res, name, uid)
	return err
}
