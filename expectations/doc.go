// Package expectations records the pod creations and deletions a controller
// has just asked the API server for, and tells a reconcile whether its informer
// cache has caught up. While a group of pods is unsatisfied the reconcile must
// not create or delete in it: a stale cache leads to duplicate pods, and then to
// the deletion of the surplus (KubeRay #715, #3286).
//
// An item is one expected create or delete of one pod, keyed by owner UID,
// group and pod name (or, for a create whose name the server generates, a
// token until the name is known). Every check decides each item of the group
// against the caller's snapshot of pods, the View:
//
//   - a create is Observed once its pod is in the view (present or
//     terminating), or an event latched it as seen;
//   - a delete is Observed once its pod is gone from the view after having been
//     seen (absence of a pod the cache never showed proves nothing), or, with
//     SatisfiedByTerminating, once the pod is terminating;
//   - an item not observed by its deadline Expires. Expiry is reported apart
//     from observation, because it usually means the cache is still stale.
//
// # Usage
//
// Record before each API call, conclude after it, and check the group on the
// snapshot the plan is built from:
//
//	st, _ := expectations.New(expectations.Options{}) // plancore defaults
//	ref, _ := st.Record(now, expectations.Record{Owner: rc, Group: "gpu",
//		Action: expectations.Create, Token: "t1"})
//	pod, err := client.Create(ctx, pod)               // your API call
//	st.Conclude(now, ref, expectations.Classify(expectations.Create, err, false), pod.Name, pod.UID)
//	...
//	view, _ := st.ViewFor(rc, cachedPods)             // once per snapshot
//	res, _ := st.Satisfied(now, rc, "gpu", view)
//	if !res.Satisfied {
//		return ctrl.Result{RequeueAfter: res.RequeueAfter}, nil // plan nothing for "gpu"
//	}
//
// ViewFor indexes only the pods the owner's records can match; NewView indexes
// every pod, for a view shared between many owners. Both give the same results.
//
// A pure planner holding a State in its snapshot calls Check, which decides the
// same way and changes nothing. A live controller shares a Tracker (a State
// behind a mutex) between its informer handlers and reconciles; handlers may
// call Observe so a pod created and deleted between two checks settles at once.
// Call Forget when the owner is gone, and Prune now and then. The zero Tracker
// is ready to use with the default Options.
//
// Unlike the planners, whose input holds the time, State and Tracker are a
// stateful helper called once per event, so their methods take now as their
// first argument; a zero now is refused (ErrInvalidInput naming "now"),
// because an item recorded at the zero time would expire at once and the
// next pass on a lagging cache would duplicate its create. Every invalid
// owner, record or option is an error naming its field path and value
// (*plancore.InvalidError); ErrInvalidOwner and ErrInvalidRecord both wrap
// ErrInvalidInput. A pending item's Reason carries a ReasonCode to match on.
//
// # Obligations
//
//  1. Record an item BEFORE the API call it expects (Record or Begin), so
//     a pass that starts while the call is in flight sees it.
//  2. Conclude it AFTER the call with Classify of the call's error: a
//     definite failure rolls the item back, an ambiguous one (a timeout)
//     keeps it until its pod is seen or it expires.
//  3. Check (or Satisfied) the group on the snapshot a plan is built from,
//     and plan nothing for a group that is not satisfied; requeue after the
//     Verdict's RequeueAfter.
//  4. Feed informer events to Observe where you can, and Forget an owner
//     when it is deleted.
//
// # Determinism
//
// Nothing in this package reads a clock, draws randomness, logs or starts a
// goroutine: the time is always an argument. Every item of a group is checked
// (no early exit at the first unsatisfied one, unlike KubeRay #4209), in key
// order, so a Verdict lists its items sorted and its String is byte-identical for
// identical inputs. Checking twice with the same arguments gives the same
// verdict, Pending list and RequeueAfter, and settles nothing new. A View is never
// modified.
//
// # Compatibility
//
// The zero Options are plancore's defaults, which fix defects of the anchors:
// deletes time out (KubeRay #4078, OpenKruise #1765), expiry is reported apart
// from observation (kubernetes #129795), items are recorded before the call
// (kubernetes #67662), owners are keyed by UID (kubernetes #69376), and every
// item is decided from the view rather than from counted events (kubernetes
// #110631). KubeRay, Kubernetes and OpenKruise return the options closest to
// each anchor; RecordAfterSuccess restores KubeRay's recording after the call.
package expectations
