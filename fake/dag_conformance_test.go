package fake_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plancore/plancore/dag"
	"github.com/plancore/plancore/fake"
)

// dagHarness builds a harness over a fresh DAGRunner, with exec wrapping it.
func dagHarness(seed uint64, wrap func(*fake.DAGRunner) dag.Executor) fake.NewDAGHarness {
	return func(context.Context) (fake.DAGHarness, error) {
		seed++
		r := fake.NewDAGRunner(fake.NewWorld(seed, podsT0))
		return fake.DAGHarness{
			Exec:       wrap(r),
			Namespaces: [2]string{"ns-a", "ns-b"},
			Jobs: func(_ context.Context, ns string) ([]fake.DAGJobObject, error) {
				return r.Objects(ns), nil
			},
			Status: func(_ context.Context, ns, name string) (dag.Status, error) { return r.Status(ns, name), nil },
		}, nil
	}
}

func TestDAGRunnerConforms(t *testing.T) {
	vs := fake.CheckDAGExecutor(context.Background(), dagHarness(0, func(r *fake.DAGRunner) dag.Executor { return r }))
	for _, v := range vs {
		t.Error(v)
	}
}

// Each of these executors breaks one clause of the dag.Executor contract the
// way a hand-written executor might.
type (
	// plainExists reports an existing job with an error that does not wrap
	// dag.ErrAlreadyExists, so dag.Apply stops instead of counting it.
	plainExists struct{ *fake.DAGRunner }
	// ignoresUID deletes whatever has the name: a re-created job is lost.
	ignoresUID struct{ *fake.DAGRunner }
	// firstNamespace deletes in the first namespace it ever created in, as
	// an executor bound to one namespace that ignores DeleteJob.Namespace.
	firstNamespace struct {
		*fake.DAGRunner
		ns *string
	}
	// dropsAnnotations loses the plan's annotations and owner.
	dropsAnnotations struct{ *fake.DAGRunner }
	// editsPlan edits the plan's label map in place.
	editsPlan struct{ *fake.DAGRunner }
	// notFoundAsError reports a missing job with a plain error.
	notFoundAsError struct{ *fake.DAGRunner }
)

func (e plainExists) CreateJob(ctx context.Context, c dag.CreateJob) error {
	if err := e.DAGRunner.CreateJob(ctx, c); errors.Is(err, dag.ErrAlreadyExists) {
		return errors.New("job exists")
	} else {
		return err
	}
}

func (e ignoresUID) DeleteJob(ctx context.Context, d dag.DeleteJob) error {
	d.UID = ""
	return e.DAGRunner.DeleteJob(ctx, d)
}

func (e firstNamespace) CreateJob(ctx context.Context, c dag.CreateJob) error {
	if *e.ns == "" {
		*e.ns = c.Namespace
	}
	return e.DAGRunner.CreateJob(ctx, c)
}

func (e firstNamespace) DeleteJob(ctx context.Context, d dag.DeleteJob) error {
	d.Namespace = *e.ns
	return e.DAGRunner.DeleteJob(ctx, d)
}

func (e dropsAnnotations) CreateJob(ctx context.Context, c dag.CreateJob) error {
	c.Annotations = nil
	c.Owner.Controller = nil
	return e.DAGRunner.CreateJob(ctx, c)
}

func (e editsPlan) CreateJob(ctx context.Context, c dag.CreateJob) error {
	c.Labels["plancore.io/attempt"] = "1"
	return e.DAGRunner.CreateJob(ctx, c)
}

func (e notFoundAsError) DeleteJob(ctx context.Context, d dag.DeleteJob) error {
	if err := e.DAGRunner.DeleteJob(ctx, d); errors.Is(err, dag.ErrNotFound) {
		return errors.New("no such job")
	} else {
		return err
	}
}

// wantViolations fails t unless vs names exactly the checks want, in order.
func wantViolations(t *testing.T, vs []fake.Violation, want []string) {
	t.Helper()
	var checks []string
	for _, v := range vs {
		checks = append(checks, v.Check)
	}
	if diff := cmp.Diff(want, checks); diff != "" {
		t.Fatalf("violations (-want +got):\n%s\n%v", diff, vs)
	}
}

func TestDAGConformanceFindsViolations(t *testing.T) {
	for _, tc := range []struct {
		name string
		wrap func(*fake.DAGRunner) dag.Executor
		want []string
	}{
		{"already exists as a plain error", func(r *fake.DAGRunner) dag.Executor { return plainExists{r} }, []string{
			"create of an existing job returns nil or dag.ErrAlreadyExists and keeps the first",
			"dag.Apply of the same plan twice succeeds both times",
		}},
		{"delete ignores the UID", func(r *fake.DAGRunner) dag.Executor { return ignoresUID{r} }, []string{
			"delete with another job's UID fails, not as dag.ErrNotFound, and keeps the job",
			"delete with another job's UID fails, not as dag.ErrNotFound, and keeps the job",
		}},
		{"delete ignores the namespace", func(r *fake.DAGRunner) dag.Executor { return firstNamespace{r, new(string)} }, []string{
			"jobs of one name in two namespaces are distinct; delete acts on the plan's namespace",
			"jobs of one name in two namespaces are distinct; delete acts on the plan's namespace",
		}},
		{"annotations and owner dropped", func(r *fake.DAGRunner) dag.Executor { return dropsAnnotations{r} }, []string{
			"create stores the plan's name, namespace, labels, annotations and owner",
			"create stores the plan's name, namespace, labels, annotations and owner",
		}},
		{"the plan edited", func(r *fake.DAGRunner) dag.Executor { return editsPlan{r} }, []string{
			"create does not modify the plan",
		}},
		{"not found as a plain error", func(r *fake.DAGRunner) dag.Executor { return notFoundAsError{r} }, []string{
			"delete of a missing job returns nil or dag.ErrNotFound",
			"delete twice: the second returns nil or dag.ErrNotFound",
			"dag.Apply of the same plan twice succeeds both times",
			"dag.Apply of the same plan twice succeeds both times",
			"dag.Apply of the same plan twice succeeds both times",
			"dag.Apply of the same plan twice succeeds both times",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantViolations(t, fake.CheckDAGExecutor(context.Background(), dagHarness(0, tc.wrap)), tc.want)
		})
	}
	failing := fake.CheckDAGExecutor(context.Background(), func(context.Context) (fake.DAGHarness, error) {
		return fake.DAGHarness{}, errors.New("no cluster")
	})
	if len(failing) == 0 || !slices.ContainsFunc(failing, func(v fake.Violation) bool { return strings.Contains(v.Detail, "no cluster") }) {
		t.Fatalf("constructor failure not reported: %v", failing)
	}
}
