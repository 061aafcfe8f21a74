package fake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/plancore/plancore/dag"
)

// DAGJobObject is one stored job as CheckDAGExecutor sees it.
type DAGJobObject struct {
	Namespace, Name string
	UID             types.UID
	Labels          map[string]string
	Annotations     map[string]string
	Owners          []metav1.OwnerReference
	// Terminating is set for a deleted job the store still shows, as a real
	// API server does for a job with finalizers.
	Terminating bool
}

// DAGHarness is one dag.Executor under test, with two fresh namespaces and
// read access to what it wrote.
type DAGHarness struct {
	// Exec is the executor under test. Every job the checks create names the
	// template DAGConformanceTemplate in its own namespace, which Exec must be
	// able to materialise.
	Exec dag.Executor
	// Namespaces are two distinct, empty namespaces the checks may use.
	Namespaces [2]string
	// Jobs returns the jobs stored in a namespace.
	Jobs func(ctx context.Context, namespace string) ([]DAGJobObject, error)
	// Status returns the last status UpdateStatus wrote for a workflow.
	Status func(ctx context.Context, namespace, name string) (dag.Status, error)
}

// NewDAGHarness builds a fresh DAGHarness for one conformance check.
type NewDAGHarness func(ctx context.Context) (DAGHarness, error)

// DAGConformanceTemplate is the template name of every job CheckDAGExecutor
// creates (dag.CreateJob.Template.Name; the namespace is the job's).
const DAGConformanceTemplate = "conformance"

// CheckDAGExecutor runs the dag.Executor contract against harnesses built by
// newHarness, in the style of testing/fstest.TestFS, and returns every
// violation it finds (nil when the executor conforms). Each check gets a
// fresh harness. It checks that CreateJob stores the plan's name, namespace,
// labels, annotations and owner reference without modifying the plan, that
// a second create returns nil or dag.ErrAlreadyExists and keeps the first
// job, that DeleteJob acts on the plan's namespace, tolerates a missing job
// (nil or dag.ErrNotFound) and honours the UID precondition with an error
// that is not dag.ErrNotFound, that UpdateStatus stores the complete status,
// and that dag.Apply of the same plan twice succeeds both times. A deleted
// job may stay terminating, as one with finalizers does.
func CheckDAGExecutor(ctx context.Context, newHarness NewDAGHarness) []Violation {
	return runChecks(ctx, dagChecks, newHarness)
}

// conformanceJob is the create action of a flow of workflow "wf" in ns, as
// dag.Decide builds it.
func conformanceJob(ns, flow string) dag.CreateJob {
	yes := true
	return dag.CreateJob{
		Flow:      flow,
		Name:      "wf-" + flow,
		Namespace: ns,
		Template:  dag.TemplateRef{Namespace: ns, Name: DAGConformanceTemplate},
		Labels: map[string]string{dag.LabelCreatedByJobFlow: ns + ".wf",
			dag.LabelCreatedByJobTemplate: ns + "." + flow},
		Annotations: map[string]string{dag.LabelCreatedByJobFlow: ns + ".wf"},
		Owner: metav1.OwnerReference{APIVersion: "flow.volcano.sh/v1alpha1", Kind: "JobFlow", Name: "wf",
			UID: "conformance-wf-uid", Controller: &yes, BlockOwnerDeletion: &yes},
		Attempt: 1,
	}
}

// cloneCreateJob deep-copies a create action.
func cloneCreateJob(c dag.CreateJob) dag.CreateJob {
	c.Labels, c.Annotations = maps.Clone(c.Labels), maps.Clone(c.Annotations)
	c.Owner = *c.Owner.DeepCopy()
	c.Patch = slices.Clone(c.Patch)
	return c
}

// dagJob finds the job named name in ns; ok false when it is absent.
func dagJob(ctx context.Context, h DAGHarness, ns, name string) (j DAGJobObject, ok bool, why string) {
	jobs, err := h.Jobs(ctx, ns)
	if err != nil {
		return DAGJobObject{}, false, fmt.Sprintf("listing jobs of %s: %v", ns, err)
	}
	for _, j := range jobs {
		if j.Name == name {
			return j, true, ""
		}
	}
	return DAGJobObject{}, false, ""
}

// dagGone reports why a job that should be deleted is not: "" when it is
// absent or terminating.
func dagGone(ctx context.Context, h DAGHarness, ns, name, when string) string {
	j, ok, why := dagJob(ctx, h, ns, name)
	switch {
	case why != "":
		return why
	case ok && !j.Terminating:
		return fmt.Sprintf("%s the job %s/%s still exists and is not terminating", when, ns, name)
	}
	return ""
}

// dagLive reads a job that must exist and not be terminating.
func dagLive(ctx context.Context, h DAGHarness, ns, name, when string) (DAGJobObject, string) {
	j, ok, why := dagJob(ctx, h, ns, name)
	switch {
	case why != "":
		return j, why
	case !ok:
		return j, fmt.Sprintf("%s the job %s/%s is missing", when, ns, name)
	case j.Terminating:
		return j, fmt.Sprintf("%s the job %s/%s is terminating", when, ns, name)
	}
	return j, ""
}

// dagCreate creates the job of flow in ns and reads it back; why says what
// went wrong.
func dagCreate(ctx context.Context, h DAGHarness, ns, flow string) (c dag.CreateJob, j DAGJobObject, why string) {
	c = conformanceJob(ns, flow)
	if err := h.Exec.CreateJob(ctx, c); err != nil {
		return c, j, fmt.Sprintf("create in %s: %v", ns, err)
	}
	j, why = dagLive(ctx, h, ns, c.Name, "after create")
	return c, j, why
}

// subset reports the keys of want that got lacks or holds with another value.
func subset(want, got map[string]string) []string {
	var bad []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if v, ok := got[k]; !ok || v != want[k] {
			bad = append(bad, fmt.Sprintf("%s=%q (got %q)", k, want[k], got[k]))
		}
	}
	return bad
}

var dagChecks = []check[DAGHarness]{
	{"create stores the plan's name, namespace, labels, annotations and owner", func(ctx context.Context, h DAGHarness) []string {
		ns := h.Namespaces[0]
		c, j, why := dagCreate(ctx, h, ns, "a")
		if why != "" {
			return []string{why}
		}
		var out []string
		if j.UID == "" || j.Namespace != ns {
			out = append(out, fmt.Sprintf("stored job has uid %q namespace %q, want a UID and %q", j.UID, j.Namespace, ns))
		}
		if bad := subset(c.Labels, j.Labels); bad != nil {
			out = append(out, fmt.Sprintf("labels lack %v", bad))
		}
		if bad := subset(c.Annotations, j.Annotations); bad != nil {
			out = append(out, fmt.Sprintf("annotations lack %v", bad))
		}
		if !slices.ContainsFunc(j.Owners, func(o metav1.OwnerReference) bool { return reflect.DeepEqual(o, c.Owner) }) {
			out = append(out, fmt.Sprintf("owner references %+v lack the plan's controller owner %+v", j.Owners, c.Owner))
		}
		if other, err := h.Jobs(ctx, h.Namespaces[1]); err != nil || len(other) != 0 {
			out = append(out, fmt.Sprintf("the other namespace holds %v (%v) after a create in %s", other, err, ns))
		}
		return out
	}},
	{"create does not modify the plan", func(ctx context.Context, h DAGHarness) []string {
		c := conformanceJob(h.Namespaces[0], "a")
		before := cloneCreateJob(c)
		if err := h.Exec.CreateJob(ctx, c); err != nil {
			return []string{fmt.Sprintf("create: %v", err)}
		}
		if !reflect.DeepEqual(before, c) {
			return []string{fmt.Sprintf("the create action changed from %+v to %+v", before, c)}
		}
		return nil
	}},
	{"create of an existing job returns nil or dag.ErrAlreadyExists and keeps the first", func(ctx context.Context, h DAGHarness) []string {
		ns := h.Namespaces[0]
		c, first, why := dagCreate(ctx, h, ns, "a")
		if why != "" {
			return []string{why}
		}
		again := cloneCreateJob(c)
		again.Labels["changed"] = "yes"
		var out []string
		if err := h.Exec.CreateJob(ctx, again); err != nil && !errors.Is(err, dag.ErrAlreadyExists) {
			out = append(out, fmt.Sprintf("second create returned %v, want nil or an error wrapping dag.ErrAlreadyExists", err))
		}
		j, why := dagLive(ctx, h, ns, c.Name, "after the second create")
		if why != "" {
			return append(out, why)
		}
		if j.UID != first.UID || j.Labels["changed"] != "" {
			out = append(out, "the second create replaced or changed the first job")
		}
		return out
	}},
	{"jobs of one name in two namespaces are distinct; delete acts on the plan's namespace", func(ctx context.Context, h DAGHarness) []string {
		var uids [2]types.UID
		for i, ns := range h.Namespaces {
			_, j, why := dagCreate(ctx, h, ns, "a")
			if why != "" {
				return []string{why}
			}
			uids[i] = j.UID
		}
		var out []string
		if uids[0] == uids[1] {
			out = append(out, fmt.Sprintf("both namespaces' jobs have uid %q", uids[0]))
		}
		if err := h.Exec.DeleteJob(ctx, dag.DeleteJob{Flow: "a", Name: "wf-a", Namespace: h.Namespaces[1], UID: uids[1], Reason: dag.Reason{Code: dag.ReasonRetry}}); err != nil {
			out = append(out, fmt.Sprintf("delete in %s: %v", h.Namespaces[1], err))
		}
		if why := dagGone(ctx, h, h.Namespaces[1], "wf-a", "after its delete"); why != "" {
			out = append(out, why)
		}
		if j, why := dagLive(ctx, h, h.Namespaces[0], "wf-a", "after a delete in the other namespace"); why != "" {
			out = append(out, why)
		} else if j.UID != uids[0] {
			out = append(out, fmt.Sprintf("the job in %s changed uid from %q to %q", h.Namespaces[0], uids[0], j.UID))
		}
		return out
	}},
	{"delete with the job's UID removes it", func(ctx context.Context, h DAGHarness) []string {
		ns := h.Namespaces[0]
		c, j, why := dagCreate(ctx, h, ns, "a")
		if why != "" {
			return []string{why}
		}
		if err := h.Exec.DeleteJob(ctx, dag.DeleteJob{Flow: "a", Name: c.Name, Namespace: ns, UID: j.UID, Reason: dag.Reason{Code: dag.ReasonRetry}}); err != nil {
			return []string{fmt.Sprintf("delete: %v", err)}
		}
		if why := dagGone(ctx, h, ns, c.Name, "after delete"); why != "" {
			return []string{why}
		}
		return nil
	}},
	{"delete without a UID removes the job", func(ctx context.Context, h DAGHarness) []string {
		ns := h.Namespaces[0]
		c := conformanceJob(ns, "a")
		if err := h.Exec.CreateJob(ctx, c); err != nil {
			return []string{fmt.Sprintf("create: %v", err)}
		}
		if err := h.Exec.DeleteJob(ctx, dag.DeleteJob{Name: c.Name, Namespace: ns, Reason: dag.Reason{Code: dag.ReasonRetention}}); err != nil {
			return []string{fmt.Sprintf("delete: %v", err)}
		}
		if why := dagGone(ctx, h, ns, c.Name, "after delete"); why != "" {
			return []string{why}
		}
		return nil
	}},
	{"delete of a missing job returns nil or dag.ErrNotFound", func(ctx context.Context, h DAGHarness) []string {
		ns := h.Namespaces[0]
		err := h.Exec.DeleteJob(ctx, dag.DeleteJob{Flow: "a", Name: "wf-missing", Namespace: ns, UID: "missing-uid", Reason: dag.Reason{Code: dag.ReasonRetry}})
		if err != nil && !errors.Is(err, dag.ErrNotFound) {
			return []string{fmt.Sprintf("delete returned %v, want nil or an error wrapping dag.ErrNotFound", err)}
		}
		return nil
	}},
	{"delete twice: the second returns nil or dag.ErrNotFound", func(ctx context.Context, h DAGHarness) []string {
		ns := h.Namespaces[0]
		c, j, why := dagCreate(ctx, h, ns, "a")
		if why != "" {
			return []string{why}
		}
		d := dag.DeleteJob{Flow: "a", Name: c.Name, Namespace: ns, UID: j.UID, Reason: dag.Reason{Code: dag.ReasonRetry}}
		var out []string
		if err := h.Exec.DeleteJob(ctx, d); err != nil {
			out = append(out, fmt.Sprintf("first delete: %v", err))
		}
		if err := h.Exec.DeleteJob(ctx, d); err != nil && !errors.Is(err, dag.ErrNotFound) {
			out = append(out, fmt.Sprintf("second delete returned %v, want nil or an error wrapping dag.ErrNotFound", err))
		}
		if why := dagGone(ctx, h, ns, c.Name, "after two deletes"); why != "" {
			out = append(out, why)
		}
		return out
	}},
	{"delete with another job's UID fails, not as dag.ErrNotFound, and keeps the job", func(ctx context.Context, h DAGHarness) []string {
		ns := h.Namespaces[0]
		c, j, why := dagCreate(ctx, h, ns, "a")
		if why != "" {
			return []string{why}
		}
		var out []string
		err := h.Exec.DeleteJob(ctx, dag.DeleteJob{Flow: "a", Name: c.Name, Namespace: ns, UID: "not-" + j.UID, Reason: dag.Reason{Code: dag.ReasonRetry}})
		switch {
		case err == nil:
			out = append(out, "delete with a stale UID precondition succeeded")
		case errors.Is(err, dag.ErrNotFound):
			// dag.Apply would count the job as deleted although it exists.
			out = append(out, fmt.Sprintf("delete with a stale UID precondition returned %v, which wraps dag.ErrNotFound", err))
		}
		if after, why := dagLive(ctx, h, ns, c.Name, "after a delete whose precondition failed"); why != "" {
			out = append(out, why)
		} else if after.UID != j.UID {
			out = append(out, fmt.Sprintf("the job's uid changed from %q to %q", j.UID, after.UID))
		}
		return out
	}},
	{"update status stores the complete status; a later write replaces it", func(ctx context.Context, h DAGHarness) []string {
		ns := h.Namespaces[0]
		first := dag.Status{State: dag.State{Phase: dag.PhaseRunning}, RunningJobs: []string{"wf-a"}, PendingJobs: []string{"wf-b"},
			JobStatusList: []dag.JobStatus{{Name: "wf-a", State: dag.JobPhaseRunning}}}
		second := dag.Status{State: dag.State{Phase: dag.PhaseSucceed}, CompletedJobs: []string{"wf-a", "wf-b"}, SpecHash: "h1"}
		var out []string
		for _, st := range []dag.Status{first, second} {
			if err := h.Exec.UpdateStatus(ctx, ns, "wf", st); err != nil {
				return append(out, fmt.Sprintf("update status: %v", err))
			}
			got, err := h.Status(ctx, ns, "wf")
			if err != nil {
				return append(out, fmt.Sprintf("reading the status back: %v", err))
			}
			// Compared as JSON, the status's wire form, so a store that
			// round-trips it through JSON compares equal.
			w, _ := json.Marshal(st)
			g, _ := json.Marshal(got)
			if string(w) != string(g) {
				out = append(out, fmt.Sprintf("stored status %s, want %s", g, w))
			}
		}
		return out
	}},
	{"dag.Apply of the same plan twice succeeds both times", func(ctx context.Context, h DAGHarness) []string {
		ns := h.Namespaces[0]
		plan := dag.Plan{Name: "wf", Namespace: ns,
			Delete:      []dag.DeleteJob{{Flow: "gone", Name: "wf-gone", Namespace: ns, UID: "gone-uid", Reason: dag.Reason{Code: dag.ReasonRetry}}},
			Create:      []dag.CreateJob{conformanceJob(ns, "a"), conformanceJob(ns, "b")},
			WriteStatus: true, Status: dag.Status{State: dag.State{Phase: dag.PhaseRunning}, PendingJobs: []string{"wf-a", "wf-b"}}}
		var out []string
		var uids []types.UID
		for round := 1; round <= 2; round++ {
			if _, err := dag.Apply(ctx, plan, h.Exec); err != nil {
				out = append(out, fmt.Sprintf("apply #%d: %v", round, err))
			}
			jobs, err := h.Jobs(ctx, ns)
			if err != nil {
				return append(out, fmt.Sprintf("listing jobs: %v", err))
			}
			slices.SortFunc(jobs, func(a, b DAGJobObject) int { return strings.Compare(a.Name, b.Name) })
			var names []string
			var now []types.UID
			for _, j := range jobs {
				names = append(names, j.Name)
				now = append(now, j.UID)
			}
			if !slices.Equal(names, []string{"wf-a", "wf-b"}) {
				out = append(out, fmt.Sprintf("after apply #%d the namespace holds %v, want [wf-a wf-b]", round, names))
			}
			if uids != nil && !slices.Equal(uids, now) {
				out = append(out, fmt.Sprintf("the second apply replaced jobs: uids %v, then %v", uids, now))
			}
			uids = now
		}
		return out
	}},
}
