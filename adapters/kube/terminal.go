package kube

import (
	"errors"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/plancore/plancore"
)

// TerminalIfInvalid returns err wrapped in controller-runtime's
// reconcile.TerminalError when it carries a *plancore.InvalidError (errors.As):
// an object the cores refuse (a spec that does not decode, an invalid
// snapshot or options) is refused again on every retry, so the controller
// must not requeue it with backoff for ever. controller-runtime still logs a
// terminal error and counts it in its metrics, and the object's next change
// (a new watch event) reconciles it again. Any other error, and nil, is
// returned unchanged, so a transient failure keeps its retries.
//
// Wrap only the errors of the decode and planning steps, not a join that may
// also hold a transient failure (an executor's timeout): the whole join would
// then go unretried.
func TerminalIfInvalid(err error) error {
	var inv *plancore.InvalidError
	if errors.As(err, &inv) {
		return reconcile.TerminalError(err)
	}
	return err
}
