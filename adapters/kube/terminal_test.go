package kube_test

import (
	"errors"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/plancore/plancore"
	"github.com/plancore/plancore/adapters/kube"
	rc "github.com/plancore/plancore/reconcile"
)

func TestTerminalIfInvalid(t *testing.T) {
	inv := plancore.Invalid(rc.ErrInvalidInput, field.ErrorList{field.Required(field.NewPath("spec"), "")})
	transient := errors.New("etcd timeout")
	for _, tc := range []struct {
		name     string
		err      error
		terminal bool
	}{
		{"nil", nil, false},
		{"plain", transient, false},
		{"invalid", inv, true},
		{"wrapped invalid", fmt.Errorf("raycluster default/demo: %w", inv), true},
		{"sentinel alone", rc.ErrInvalidInput, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := kube.TerminalIfInvalid(tc.err)
			if is := errors.Is(got, reconcile.TerminalError(nil)); is != tc.terminal {
				t.Fatalf("terminal = %v, want %v (%v)", is, tc.terminal, got)
			}
			if !tc.terminal && got != tc.err {
				t.Fatalf("non-invalid error changed: %v -> %v", tc.err, got)
			}
			if tc.terminal && !errors.Is(got, rc.ErrInvalidInput) {
				t.Fatalf("terminal error lost its sentinel: %v", got)
			}
		})
	}
}
