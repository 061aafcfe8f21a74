package dag_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/plancore/plancore"
	"github.com/plancore/plancore/dag"
)

// fl builds a flow with plain targets.
func fl(name string, targets ...string) dag.Flow {
	f := dag.Flow{Name: name}
	if targets != nil {
		f.DependsOn = &dag.DependsOn{Targets: targets}
	}
	return f
}

// dep builds a flow with a depends expression.
func dep(name, expr string) dag.Flow {
	return dag.Flow{Name: name, DependsOn: &dag.DependsOn{Depends: expr}}
}

func wf(flows ...dag.Flow) dag.Workflow {
	return dag.Workflow{Name: "jf", Namespace: "ns", UID: "uid-jf", Spec: dag.Spec{Flows: flows}}
}

func summarize(is []dag.Issue) []string {
	var out []string
	for _, i := range is {
		s := fmt.Sprintf("%s %s@%d %s", i.Severity, i.Kind, i.Flow, i.Field)
		if i.Value != "" {
			s += "=" + i.Value
		}
		if i.Kind == dag.IssueCycle {
			s += " [" + i.Message + "] members=" + strings.Join(i.Members, ",")
		}
		out = append(out, s)
	}
	return out
}

func TestValidate(t *testing.T) {
	long := strings.Repeat("x", 61) // jf-<61 x> is 64 characters
	retry := func(r dag.Retry) dag.Flow { return dag.Flow{Name: "r", Retry: &r} }
	cases := []struct {
		name string
		wf   dag.Workflow
		opt  dag.Options
		want []string
	}{
		{name: "valid chain", wf: wf(fl("a"), fl("b", "a"), fl("c", "b"))},
		{name: "empty flow list is valid", wf: wf()},
		{name: "empty name", wf: wf(fl(""), fl("b")), want: []string{"Error EmptyName@0 flows[0].name"}},
		{name: "unknown target, every occurrence", wf: wf(fl("a", "x"), fl("b", "a", "x", "y")), want: []string{
			"Error UnknownTarget@0 flows[0].dependsOn.targets[0]=x",
			"Error UnknownTarget@1 flows[1].dependsOn.targets[1]=x",
			"Error UnknownTarget@1 flows[1].dependsOn.targets[2]=y",
		}},
		{name: "duplicate flow on second and later occurrences", wf: wf(fl("a"), fl("b"), fl("a"), fl("a")), want: []string{
			"Error DuplicateFlow@2 flows[2].name=a",
			"Error DuplicateFlow@3 flows[3].name=a",
		}},
		{name: "duplicate whose first definition closes a cycle", wf: wf(fl("a", "b"), fl("b", "a"), fl("b")), want: []string{
			"Error Cycle@0 flows[0].dependsOn=a [cycle: a -> b -> a] members=a,b",
			"Error DuplicateFlow@2 flows[2].name=b",
		}},
		{name: "self loop", wf: wf(fl("a", "a")), want: []string{"Error Cycle@0 flows[0].dependsOn=a [cycle: a -> a] members=a"}},
		{name: "three cycle with a downstream flow", wf: wf(fl("d", "c"), fl("a", "b"), fl("b", "c"), fl("c", "a")), want: []string{
			"Error Cycle@1 flows[1].dependsOn=a [cycle: a -> b -> c -> a] members=a,b,c",
		}},
		{name: "two cycles, each once", wf: wf(fl("p", "q"), fl("q", "p"), fl("r", "s"), fl("s", "r", "p"), fl("ok")), want: []string{
			"Error Cycle@0 flows[0].dependsOn=p [cycle: p -> q -> p] members=p,q",
			"Error Cycle@2 flows[2].dependsOn=r [cycle: r -> s -> r] members=r,s",
		}},
		{name: "job name over 63", wf: wf(fl(long)), want: []string{
			"Error NameInvalid@0 flows[0].name=jf-" + long,
			"Error LabelValueInvalid@0 flows[0].name=ns." + long,
		}},
		{name: "job name at 63 is fine", wf: wf(fl(long[:60]))},
		{name: "label value over 63", wf: dag.Workflow{Name: "j", Namespace: strings.Repeat("n", 60), Spec: dag.Spec{Flows: []dag.Flow{fl("abc")}}}, want: []string{
			"Error LabelValueInvalid@0 flows[0].name=" + strings.Repeat("n", 60) + ".abc",
		}},
		{name: "bad characters and edges", wf: wf(fl("a_b-"), fl("c/d")), want: []string{
			"Error NameInvalid@0 flows[0].name=a_b-",
			"Error NameInvalid@1 flows[1].name=c/d",
		}},
		// A label value allows upper case, '_' and '.'; a Job name does not.
		{name: "flow names the API server refuses as Job names", wf: wf(fl("Train_A"), fl("v1.2"), fl("-x")), want: []string{
			"Error NameInvalid@0 flows[0].name=Train_A",
			"Error NameInvalid@1 flows[1].name=v1.2",
			"Error NameInvalid@2 flows[2].name=-x",
		}},
		{name: "workflow name empty", wf: dag.Workflow{Namespace: "ns", Spec: dag.Spec{Flows: []dag.Flow{fl("a")}}}, want: []string{
			"Error EmptyName@-1 metadata.name",
		}},
		{name: "workflow name not an object name", wf: dag.Workflow{Name: "jf_", Namespace: "ns", Spec: dag.Spec{Flows: []dag.Flow{fl("a")}}}, want: []string{
			"Error NameInvalid@-1 metadata.name=jf_",
		}},
		{name: "dotted workflow name cannot prefix job names", wf: dag.Workflow{Name: "jf.v1", Namespace: "ns", Spec: dag.Spec{Flows: []dag.Flow{fl("a")}}}, want: []string{
			"Error NameInvalid@-1 metadata.name=jf.v1",
		}},
		{name: "dotted workflow name without flows", wf: dag.Workflow{Name: "jf.v1", Namespace: "ns"}},
		{name: "duplicate target is a warning", wf: wf(fl("a"), fl("b", "a", "a")), want: []string{"Warning DuplicateTarget@1 flows[1].dependsOn.targets[1]=a"}},
		{name: "depends syntax error names the offset", wf: wf(fl("a"), dep("b", "a &&")), want: []string{"Error ExpressionSyntax@1 flows[1].dependsOn.plancoreDepends=a &&"}},
		{name: "depends unknown result", wf: wf(fl("a"), dep("b", "a.Finished || a")), want: []string{"Error UnknownResult@1 flows[1].dependsOn.plancoreDepends=a.Finished"}},
		{name: "depends unknown target", wf: wf(fl("a"), dep("b", "a && zz.Failed")), want: []string{"Error UnknownTarget@1 flows[1].dependsOn.plancoreDepends=zz"}},
		{name: "depends on dotted flow names parses, the name is refused", wf: wf(fl("v1.2"), dep("b", "v1.2.Failed || v1.2")), want: []string{"Error NameInvalid@0 flows[0].name=v1.2"}},
		{name: "depends cycle", wf: wf(dep("a", "!b.Failed"), dep("b", "a.Done")), want: []string{"Error Cycle@0 flows[0].dependsOn=a [cycle: a -> b -> a] members=a,b"}},
		{name: "mixed forms", wf: wf(fl("a"), dag.Flow{Name: "b", DependsOn: &dag.DependsOn{Targets: []string{"a"}, Depends: "a"}}), want: []string{"Error MixedDependencyForms@1 flows[1].dependsOn"}},
		{name: "structured form", wf: wf(fl("a"), dag.Flow{Name: "b", DependsOn: &dag.DependsOn{TargetsWithStatus: []dag.TargetStatus{{Name: "a", Phase: "Completed"}, {Name: "a", Phase: "Running"}, {Name: "a", Phase: "Bogus"}}}}), want: []string{
			"Error UnknownResult@1 flows[1].dependsOn.targetsWithStatus[2].phase=Bogus",
		}},
		{name: "finally ordering", wf: dag.Workflow{Name: "jf", Namespace: "ns", Spec: dag.Spec{
			Flows:   []dag.Flow{fl("a"), dep("b", "z")},
			Finally: []dag.Flow{fl("z", "a"), dep("y", "a.Failed && z")},
		}}, want: []string{
			"Error FinallyOrdering@1 flows[1].dependsOn.plancoreDepends=z",
			"Error FinallyOrdering@2 plancoreFinally[0].dependsOn.targets",
			"Error FinallyOrdering@3 plancoreFinally[1].dependsOn.plancoreDepends=z",
		}},
		{name: "retry ranges", wf: dag.Workflow{Name: "jf", Namespace: "ns", Spec: dag.Spec{
			Flows: []dag.Flow{retry(dag.Retry{Limit: -1, On: []dag.JobPhase{"Running"}, Backoff: dag.Backoff{Duration: -1, Factor: 0.5, Cap: -2}})},
			Retry: &dag.Retry{Backoff: dag.Backoff{Duration: 10, Cap: 5}},
		}}, want: []string{
			"Error RetryRange@-1 plancoreRetry.backoff.cap",
			"Error RetryRange@0 flows[0].plancoreRetry.backoff.cap",
			"Error RetryRange@0 flows[0].plancoreRetry.backoff.duration",
			"Error RetryRange@0 flows[0].plancoreRetry.backoff.factor",
			"Error RetryRange@0 flows[0].plancoreRetry.limit",
			"Error RetryRange@0 flows[0].plancoreRetry.on[0]",
		}},
		{name: "negative parallelism and bad retain policy", wf: dag.Workflow{Name: "jf", Namespace: "ns", Spec: dag.Spec{Parallelism: -1, JobRetainPolicy: "keep"}}, want: []string{
			"Error NegativeParallelism@-1 plancoreParallelism=-1",
			"Error RetainPolicyInvalid@-1 jobRetainPolicy=keep",
		}},
		{name: "patch must be an object", wf: wf(dag.Flow{Name: "a", Patch: []byte(`[1]`)}, dag.Flow{Name: "b", Patch: []byte(` {"jobSpec":{"x":1}}`)}), want: []string{"Error PatchInvalid@0 flows[0].patch"}},
		{name: "extensions need the plancore state machine", opt: dag.VolcanoCompat(), wf: dag.Workflow{Name: "jf", Namespace: "ns", Spec: dag.Spec{
			Flows: []dag.Flow{fl("a"), dep("b", "a")}, Finally: []dag.Flow{fl("c")}, Parallelism: 2,
		}}, want: []string{
			"Error NeedsPlancoreStateMachine@-1 plancoreParallelism",
			"Error NeedsPlancoreStateMachine@1 flows[1].dependsOn",
			"Error NeedsPlancoreStateMachine@2 plancoreFinally",
		}},
		{name: "every check runs", wf: wf(fl(""), fl("a", "a", "q"), fl("a")), want: []string{
			"Error EmptyName@0 flows[0].name",
			"Error UnknownTarget@1 flows[1].dependsOn.targets[1]=q",
			"Error Cycle@1 flows[1].dependsOn=a [cycle: a -> a] members=a",
			"Error DuplicateFlow@2 flows[2].name=a",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := summarize(dag.Lint(tc.wf, tc.opt))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("issues (-want +got):\n%s", diff)
			}
			err := dag.Check(tc.wf, tc.opt)
			hasErr := false
			for _, w := range tc.want {
				hasErr = hasErr || strings.HasPrefix(w, "Error")
			}
			if hasErr != (err != nil) {
				t.Fatalf("Check = %v, want error %v", err, hasErr)
			}
			if err != nil && !errors.Is(err, dag.ErrInvalidInput) {
				t.Fatalf("Check error %v does not wrap ErrInvalidInput", err)
			}
		})
	}
}

func TestCheckListsEveryOffenderInOneError(t *testing.T) {
	err := dag.Check(wf(fl("a", "x"), fl("b", "y"), fl("a")), dag.Options{})
	var inv *plancore.InvalidError
	if !errors.As(err, &inv) || len(inv.Errors) != 3 {
		t.Fatalf("err = %v, want an InvalidError with 3 problems", err)
	}
	want := []string{"spec.flows[0].dependsOn.targets[0]", "spec.flows[1].dependsOn.targets[0]", "spec.flows[2].name"}
	if diff := cmp.Diff(want, inv.Fields()); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
	for _, s := range []string{`"x"`, `"y"`, "DuplicateFlow", "UnknownTarget"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %s", err, s)
		}
	}
}

func TestExpressionIssueNamesFlowAndPosition(t *testing.T) {
	is := dag.Lint(wf(fl("a"), dep("train", "a && (a || )")), dag.Options{})
	if len(is) != 1 || is[0].Target != 11 || !strings.Contains(is[0].Message, `flow "train"`) || !strings.Contains(is[0].Message, "byte 11") {
		t.Fatalf("issues = %v", is)
	}
}

// volcanoProblems lists an error's problems as "field: detail", failing t
// when it is no *plancore.InvalidError wrapping ErrInvalidInput.
func volcanoProblems(t interface {
	Helper()
	Fatalf(string, ...any)
}, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var inv *plancore.InvalidError
	if !errors.As(err, &inv) || !errors.Is(err, dag.ErrInvalidInput) {
		t.Fatalf("%v is no *plancore.InvalidError wrapping ErrInvalidInput", err)
	}
	var out []string
	for _, e := range inv.Errors {
		out = append(out, e.Field+": "+e.Detail)
	}
	return out
}

func TestValidateVolcano(t *testing.T) {
	cases := []struct {
		name string
		spec dag.Spec
		want []string
	}{
		{"chain", dag.Spec{Flows: []dag.Flow{fl("a"), fl("b", "a")}}, nil},
		{"unknown vertex", dag.Spec{Flows: []dag.Flow{fl("a", "q")}}, []string{"spec.flows[0].dependsOn.targets[0]: jobflow Flow is not DAG: vertex is not defined: q"}},
		{"cycle", dag.Spec{Flows: []dag.Flow{fl("a", "b"), fl("b", "a")}}, []string{"spec.flows: jobflow Flow is not DAG"}},
		{"self loop", dag.Spec{Flows: []dag.Flow{fl("a", "a")}}, []string{"spec.flows: jobflow Flow is not DAG"}},
		// Returning at the first problem (the webhook's way, and the old
		// error here) makes this fail.
		{"every problem at once", dag.Spec{Flows: []dag.Flow{fl("a", "q"), fl("b", "c", "r"), fl("c", "b")}}, []string{
			"spec.flows[0].dependsOn.targets[0]: jobflow Flow is not DAG: vertex is not defined: q",
			"spec.flows[1].dependsOn.targets[1]: jobflow Flow is not DAG: vertex is not defined: r",
			"spec.flows: jobflow Flow is not DAG"}},
		// The webhook keeps the last definition of a duplicate, so a cycle
		// closed by the first definition gets through.
		{"duplicate hides a cycle", dag.Spec{Flows: []dag.Flow{fl("a", "b"), fl("b", "a"), fl("b")}}, nil},
		{"duplicate targets are harmless", dag.Spec{Flows: []dag.Flow{fl("a"), fl("b", "a", "a")}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// An error of another type (the old one, worded as the
			// webhook's message alone) makes every refusing row fail.
			got := volcanoProblems(t, dag.ValidateVolcano(tc.spec))
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Fatalf("ValidateVolcano (-want +got):\n%s", d)
			}
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	old := wf(fl("a"), fl("b", "a"))
	running := old
	running.Status = dag.Status{State: dag.State{Phase: dag.PhaseRunning}, RunningJobs: []string{"jf-a"}}
	appended := wf(fl("a"), fl("b", "a"), fl("c", "b"))
	edited := wf(fl("a"), fl("b"))
	// The renames below differ only in the high bytes of two 8-byte words;
	// a word-wise FNV-1a without a final mix gave both sides one hash.
	prep := wf(fl("prepare-dataset1"), fl("train", "prepare-dataset1"))
	prepRunning := prep
	prepRunning.Status = running.Status
	renamed := wf(fl("preparecdatasets"), fl("train", "preparecdatasets"))
	dashed, dotted := wf(fl("prepare-dataset-")), wf(fl("prepare.datasetX"))
	dashedRunning := dashed
	dashedRunning.Status = running.Status
	cases := []struct {
		name     string
		old, new dag.Workflow
		opt      dag.Options
		want     []string
	}{
		{"no job yet: any edit", old, edited, dag.Options{}, nil},
		{"running: edit rejected", running, edited, dag.Options{}, []string{"Error SpecImmutable@-1 flows"}},
		{"running: append rejected by default", running, appended, dag.Options{}, []string{"Error SpecImmutable@-1 flows"}},
		{"running: append allowed", running, appended, dag.Options{AllowAppend: true}, nil},
		{"running: same spec", running, old, dag.Options{}, nil},
		{"running: prepare-dataset1 renamed preparecdatasets", prepRunning, renamed, dag.Options{}, []string{"Error SpecImmutable@-1 flows"}},
		{"running: prepare-dataset- renamed prepare.datasetX", dashedRunning, dotted, dag.Options{}, []string{"Error SpecImmutable@-1 flows", "Error NameInvalid@0 flows[0].name=prepare.datasetX"}},
	}
	for _, pair := range [][2]dag.Workflow{{prep, renamed}, {dashed, dotted}} {
		if a, b := dag.SpecHash(pair[0].Spec), dag.SpecHash(pair[1].Spec); a == b {
			t.Errorf("SpecHash(%s) == SpecHash(%s) == %s", pair[0].Spec.Flows[0].Name, pair[1].Spec.Flows[0].Name, a)
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, summarize(dag.ValidateUpdate(tc.old, tc.new, tc.opt))); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestTopo pins Topo's documented order: Kahn's algorithm seeded in spec
// order, even where the planner walks plain spec order instead.
func TestTopo(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    dag.Workflow
		want []int
	}{
		{"backward edges: Kahn, not spec order", wf(fl("a"), fl("b", "a"), fl("c")), []int{0, 2, 1}},
		{"a forward edge", wf(fl("a", "b"), fl("b")), []int{1, 0}},
		{"finally after main", func() dag.Workflow { w := wf(fl("a"), fl("b", "a")); w.Spec.Finally = []dag.Flow{fl("z")}; return w }(), []int{0, 2, 1}},
	} {
		got, err := dag.Topo(tc.w, dag.Options{})
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: Topo = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	if _, err := dag.Topo(wf(fl("a", "b"), fl("b", "a")), dag.Options{}); !errors.Is(err, dag.ErrInvalidInput) {
		t.Fatalf("cycle: err = %v", err)
	}
}

// volcanoReference is the webhook's rule written the slow, obvious way: keep
// each name's last definition, refuse every undefined target, and refuse the
// spec when some kept flow reaches itself by following defined targets.
func volcanoReference(spec dag.Spec) []string {
	var out []string
	last := map[string]dag.Flow{}
	lastIndex := map[string]int{}
	for i, f := range spec.Flows {
		last[f.Name] = f
		lastIndex[f.Name] = i
	}
	for i, f := range spec.Flows {
		if lastIndex[f.Name] != i || f.DependsOn == nil {
			continue
		}
		for j, t := range f.DependsOn.Targets {
			if _, ok := last[t]; !ok {
				out = append(out, fmt.Sprintf("spec.flows[%d].dependsOn.targets[%d]: jobflow Flow is not DAG: vertex is not defined: %s", i, j, t))
			}
		}
	}
	var reaches func(from, to string, seen map[string]bool) bool
	reaches = func(from, to string, seen map[string]bool) bool {
		if seen[from] {
			return false
		}
		seen[from] = true
		if d := last[from].DependsOn; d != nil {
			for _, t := range d.Targets {
				if t == to || reaches(t, to, seen) {
					return true
				}
			}
		}
		return false
	}
	for name := range last {
		if reaches(name, name, map[string]bool{}) {
			return append(out, "spec.flows: jobflow Flow is not DAG")
		}
	}
	return out
}

// TestPropValidateVolcanoMatchesReference draws small specs with duplicate
// names, duplicate targets, undefined targets and cycles. Breaking the
// duplicate-target stamp (counting a repeated target twice) makes it fail.
func TestPropValidateVolcanoMatchesReference(t *testing.T) {
	names := []string{"a", "b", "c", "d", "e"}
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 7).Draw(t, "flows")
		spec := dag.Spec{}
		for i := 0; i < n; i++ {
			name := rapid.SampledFrom(names).Draw(t, "name")
			targets := rapid.SliceOfN(rapid.SampledFrom(append(names, "zz")), 0, 4).Draw(t, "targets")
			spec.Flows = append(spec.Flows, fl(name, targets...))
		}
		// Both list the undefined targets in spec order, then the cycle.
		got := volcanoProblems(t, dag.ValidateVolcano(spec))
		if want := volcanoReference(spec); !slices.Equal(got, want) {
			t.Fatalf("ValidateVolcano = %q, reference = %q", got, want)
		}
	})
}
