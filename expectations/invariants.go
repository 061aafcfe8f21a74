package expectations

import (
	"errors"
	"fmt"
	"reflect"
	"time"
)

// CheckResult reports every way r, the result of s.Check(now, owner, group,
// view), breaks the wake-up contract, joined into one error, or nil. It is
// what plancore's own property checks, exported for properties over code that
// requeues on expectations:
//
//   - r is what Check answers for these arguments (Check is deterministic);
//   - RequeueAfter is never negative, and it is exact: with the same view the
//     pending list and Satisfied are unchanged a nanosecond before
//     now+RequeueAfter, and the pending list has changed at it;
//   - with no RequeueAfter, nothing pending changes however long one waits,
//     except entries becoming overdue (Block reports those without a wake-up).
//
// It reads s and changes nothing.
func CheckResult(s *State, now time.Time, owner Owner, group string, view *View, r Verdict) error {
	again, err := s.Check(now, owner, group, view)
	if err != nil {
		return fmt.Errorf("Check refuses the arguments: %w", err)
	}
	if !reflect.DeepEqual(again, r) {
		return errors.New("the result is not what Check answers for these arguments")
	}
	if r.RequeueAfter < 0 {
		return fmt.Errorf("RequeueAfter %v is negative", r.RequeueAfter)
	}
	if r.RequeueAfter == 0 {
		later, err := s.Check(now.Add(1000*time.Hour), owner, group, view)
		if err == nil && !sameEntries(r.Pending, later.Pending) && len(later.Overdue) == 0 {
			return errors.New("no RequeueAfter, yet the pending list changes later")
		}
		return nil
	}
	next := now.Add(r.RequeueAfter)
	before, err := s.Check(next.Add(-time.Nanosecond), owner, group, view)
	if err != nil || !sameEntries(r.Pending, before.Pending) || before.Satisfied != r.Satisfied {
		return fmt.Errorf("the result changes before RequeueAfter %v", r.RequeueAfter)
	}
	at, err := s.Check(next, owner, group, view)
	if err != nil || sameEntries(r.Pending, at.Pending) {
		return fmt.Errorf("the pending list has not changed at RequeueAfter %v", r.RequeueAfter)
	}
	return nil
}

// sameEntries compares entry lists, an empty list equal to none.
func sameEntries(a, b []Entry) bool {
	return (len(a) == 0 && len(b) == 0) || reflect.DeepEqual(a, b)
}

// CheckState reports how s's bookkeeping disagrees with itself, or nil: given
// every owner that holds records (more are fine), each owner's Count is not
// negative and is zero exactly when it has no groups, and the counts add up to
// Len. Owners that are the same under Options.OwnerIdentity count once.
func CheckState(s *State, owners []Owner) error {
	var errs []error
	total := 0
	seen := map[string]bool{}
	for _, o := range owners {
		key := string(o.UID)
		if s.Options().OwnerIdentity == ByName {
			key = o.Namespace + "/" + o.Name
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		n := s.Count(o)
		if n < 0 || (n == 0) != (len(s.Groups(o)) == 0) {
			errs = append(errs, fmt.Errorf("owner %s: Count %d with groups %v", o, n, s.Groups(o)))
		}
		total += n
	}
	if total != s.Len() {
		errs = append(errs, fmt.Errorf("Len %d, the owners' counts add up to %d", s.Len(), total))
	}
	return errors.Join(errs...)
}
