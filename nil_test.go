package plancore_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/plancore/plancore"
)

type executor interface{ Do() }

type impl struct{}

func (*impl) Do() {}

type valueImpl struct{}

func (valueImpl) Do() {}

func TestIsNil(t *testing.T) {
	var typed *impl
	var iface executor = typed
	var m map[string]int
	rows := []struct {
		name string
		v    any
		want bool
	}{
		{"untyped nil", nil, true},
		{"typed nil pointer in an interface", iface, true},
		{"nil map", m, true},
		{"nil func", (func())(nil), true},
		{"pointer", &impl{}, false},
		{"value receiver", valueImpl{}, false},
		{"zero int", 0, false},
	}
	for _, r := range rows {
		if got := plancore.IsNil(r.v); got != r.want {
			t.Errorf("%s: IsNil = %t, want %t", r.name, got, r.want)
		}
	}
}

func TestSubError(t *testing.T) {
	kind := errors.New("core: invalid input")
	sub := plancore.SubError("core: nil executor", kind)
	wrapped := fmt.Errorf("apply: %w", sub)
	if !errors.Is(wrapped, sub) || !errors.Is(wrapped, kind) || sub.Error() != "core: nil executor" {
		t.Fatalf("SubError: Is(sub) %t, Is(kind) %t, %q", errors.Is(wrapped, sub), errors.Is(wrapped, kind), sub)
	}
	if errors.Is(sub, errors.New("core: invalid input")) {
		t.Fatal("SubError matches an error it is not")
	}
}
