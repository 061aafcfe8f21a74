package plancore_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plancore/plancore"
)

var errKind = errors.New("core: invalid input")

func TestInvalidNilWhenNoErrors(t *testing.T) {
	if err := plancore.Invalid(errKind, nil); err != nil {
		t.Fatalf("Invalid(kind, nil) = %v, want nil", err)
	}
}

func TestInvalidNamesEveryField(t *testing.T) {
	errs := field.ErrorList{
		field.Invalid(field.NewPath("spec", "replicas"), -1, "must be >= 0"),
		field.Required(field.NewPath("now"), "a zero time is not a time"),
	}
	err := plancore.Invalid(errKind, errs)
	if !errors.Is(err, errKind) {
		t.Fatalf("errors.Is(%v, kind) = false", err)
	}
	var inv *plancore.InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("errors.As(%v, *InvalidError) = false", err)
	}
	if got := strings.Join(inv.Fields(), ","); got != "spec.replicas,now" {
		t.Fatalf("Fields() = %q", got)
	}
	for _, want := range []string{"core: invalid input", "spec.replicas", "-1", "now"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Error() = %q, missing %q", err.Error(), want)
		}
	}
}

// TestJoin: options and input problems in one *InvalidError, matching both
// kinds; a plain error among them falls back to errors.Join.
func TestJoin(t *testing.T) {
	errOpts, errIn := errors.New("core: invalid options"), errors.New("core: invalid input")
	opts := plancore.Invalid(errOpts, field.ErrorList{field.Invalid(field.NewPath("ttl"), -1, "must not be negative")})
	in := plancore.Invalid(errIn, field.ErrorList{field.Required(field.NewPath("now"), ""), field.Required(field.NewPath("node"), "")})
	err := plancore.Join(opts, nil, fmt.Errorf("planning: %w", in))
	var inv *plancore.InvalidError
	if !errors.As(err, &inv) || !errors.Is(err, errOpts) || !errors.Is(err, errIn) {
		t.Fatalf("Join = %v: As %t", err, errors.As(err, &inv))
	}
	if got := inv.Fields(); !slices.Equal(got, []string{"ttl", "now", "node"}) {
		t.Errorf("fields = %v", got)
	}
	if plancore.Join(nil, nil) != nil || plancore.Join(nil, in) == nil {
		t.Error("Join of nothing must be nil, of one error that error")
	}
	plain := errors.New("io")
	if j := plancore.Join(in, plain); !errors.Is(j, plain) || !errors.Is(j, errIn) {
		t.Errorf("Join with a plain error = %v", j)
	}
}
