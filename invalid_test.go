package plancore_test

import (
	"errors"
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
