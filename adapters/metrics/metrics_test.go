package metrics_test

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/plancore/plancore/adapters/metrics"
	"github.com/plancore/plancore/capacity"
	"github.com/plancore/plancore/dag"
	"github.com/plancore/plancore/expectations"
	"github.com/plancore/plancore/gpu"
	"github.com/plancore/plancore/lock"
	"github.com/plancore/plancore/reconcile"
)

var now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestRecorderExportsPlanOutcomes(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	rec, err := metrics.NewRecorder(reg)
	if err != nil {
		t.Fatal(err)
	}
	// A real selection: a is fine, b never sent a heartbeat, c is full.
	plan, err := capacity.Decide(capacity.Input{Now: now, Nodes: []capacity.NodeLoad{
		{ID: "a", Max: 4, HeartbeatAt: now},
		{ID: "b", Max: 4},
		{ID: "c", Max: 4, Running: 4, HeartbeatAt: now},
	}}, capacity.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec.ObserveCapacityPlan(plan)
	// A code no core declares is exported as "other".
	rec.ObserveCapacityPlan(capacity.Plan{Excluded: []capacity.Exclusion{{ID: "x", Reason: capacity.Reason{Code: "MadeUp"}}}})
	rec.ObserveJob(capacity.DispatcherEvent{Outcome: capacity.JobNoCapacity, Pending: 3, Plan: plan,
		Result: capacity.DispatchResult{Attempts: make([]capacity.Attempt, 2)}})
	rec.ObserveJob(capacity.DispatcherEvent{Outcome: capacity.JobSent, Pending: 2,
		Result: capacity.DispatchResult{Attempts: make([]capacity.Attempt, 1)}})
	rec.ObserveLockPlan(lock.Plan{Kind: lock.Refuse, Reason: lock.Reason{Code: lock.ReasonHeldByOther}})
	rec.ObserveLockPlan(lock.Plan{Kind: "Odd", Reason: lock.Reason{Code: "odd"}})
	rec.ObserveGPUPlan(gpu.Plan{Reason: gpu.Reason{Code: gpu.ReasonNoNodeFits}, Nodes: []gpu.NodeFit{
		{Node: "n1", Rejections: []gpu.Rejection{{Code: gpu.ReasonCardInsufficientMemory, Count: 2, Total: 4}, {Code: gpu.ReasonCardTypeMismatch, Count: 2, Total: 4}}},
		{Node: "n2", Rejections: []gpu.Rejection{{Code: gpu.ReasonCardInsufficientMemory, Count: 1, Total: 1}}},
	}})
	rec.ObserveGPUBind(gpu.Outcome{Bound: true})
	rec.ObserveGPUBind(gpu.Outcome{Unknown: true})
	rec.ObserveGPUBind(gpu.Outcome{})
	rec.ObserveReconcilePlan(reconcile.Plan{Verdict: reconcile.Verdict{Reason: reconcile.Reason{Code: reconcile.ReasonOK}},
		Actions: []reconcile.Action{
			{Kind: reconcile.ActionCreatePod, Reason: reconcile.Reason{Code: reconcile.ReasonScaleUp}},
			{Kind: reconcile.ActionCreatePod, Reason: reconcile.Reason{Code: reconcile.ReasonScaleUp}},
			{Kind: reconcile.ActionDeletePod, Reason: reconcile.Reason{Code: reconcile.ReasonWorkerTerminalPhase}},
		}})
	rec.ObserveDAGPlan(dag.Plan{
		Create:  []dag.CreateJob{{Reason: dag.Reason{Code: dag.ReasonDependenciesMet}}},
		Delete:  []dag.DeleteJob{{Reason: dag.Reason{Code: dag.ReasonRetry}}},
		Blocked: []dag.Blocked{{Reasons: []dag.Reason{{Code: dag.ReasonDependency}, {Code: dag.ReasonBackoff}}}, {}},
	})
	rec.ObserveExpectations(expectations.Verdict{Pending: []expectations.Entry{
		{Reason: expectations.Reason{Code: expectations.ReasonUnseen}}, {Reason: expectations.Reason{Code: expectations.ReasonUnseen}}}})

	want := `
# HELP plancore_capacity_dispatcher_jobs_total Attempts of the capacity Dispatcher, by outcome.
# TYPE plancore_capacity_dispatcher_jobs_total counter
plancore_capacity_dispatcher_jobs_total{outcome="NoCapacity"} 1
plancore_capacity_dispatcher_jobs_total{outcome="Sent"} 1
# HELP plancore_capacity_dispatcher_pending_jobs Jobs the capacity Dispatcher holds (waiting or in flight), after its last attempt.
# TYPE plancore_capacity_dispatcher_pending_jobs gauge
plancore_capacity_dispatcher_pending_jobs 2
# HELP plancore_capacity_dispatcher_reserve_attempts_total Reserve calls made by the capacity Dispatcher's dispatches.
# TYPE plancore_capacity_dispatcher_reserve_attempts_total counter
plancore_capacity_dispatcher_reserve_attempts_total 3
# HELP plancore_capacity_excluded_nodes_total Nodes capacity.Decide left out, by primary reason code.
# TYPE plancore_capacity_excluded_nodes_total counter
plancore_capacity_excluded_nodes_total{reason="CapacityExceeded"} 2
plancore_capacity_excluded_nodes_total{reason="StaleHeartbeat"} 2
plancore_capacity_excluded_nodes_total{reason="other"} 1
# HELP plancore_dag_actions_total Job creations and deletions of workflow plans, by action and reason code.
# TYPE plancore_dag_actions_total counter
plancore_dag_actions_total{action="create",reason="DependenciesMet"} 1
plancore_dag_actions_total{action="delete",reason="Retry"} 1
# HELP plancore_dag_blocked_flows_total Waiting flows of workflow plans, by their first reason code, counted per plan.
# TYPE plancore_dag_blocked_flows_total counter
plancore_dag_blocked_flows_total{reason="Dependency"} 1
plancore_dag_blocked_flows_total{reason="other"} 1
# HELP plancore_expectations_pending_items_total Pending expectation items seen in Satisfied results, by reason code.
# TYPE plancore_expectations_pending_items_total counter
plancore_expectations_pending_items_total{reason="Unseen"} 2
# HELP plancore_gpu_binds_total GPU bind flows, by result (bound, unknown, failed).
# TYPE plancore_gpu_binds_total counter
plancore_gpu_binds_total{result="bound"} 1
plancore_gpu_binds_total{result="failed"} 1
plancore_gpu_binds_total{result="unknown"} 1
# HELP plancore_gpu_fit_plans_total GPU fit plans (gpu.Decide), by reason code.
# TYPE plancore_gpu_fit_plans_total counter
plancore_gpu_fit_plans_total{reason="NoNodeFits"} 1
# HELP plancore_gpu_node_rejections_total Devices' rejections on nodes that did not fit, by reason code, counted per rejected device.
# TYPE plancore_gpu_node_rejections_total counter
plancore_gpu_node_rejections_total{reason="CardInsufficientMemory"} 3
plancore_gpu_node_rejections_total{reason="CardTypeMismatch"} 2
# HELP plancore_lock_plans_total Lock plans, by kind and reason code.
# TYPE plancore_lock_plans_total counter
plancore_lock_plans_total{kind="Refuse",reason="HeldByOther"} 1
plancore_lock_plans_total{kind="other",reason="other"} 1
# HELP plancore_reconcile_actions_total Actions of RayCluster pod plans, by kind and reason code.
# TYPE plancore_reconcile_actions_total counter
plancore_reconcile_actions_total{kind="CreatePod",reason="ScaleUp"} 2
plancore_reconcile_actions_total{kind="DeletePod",reason="WorkerTerminalPhase"} 1
# HELP plancore_reconcile_plans_total RayCluster pod plans, by the outcome's reason code.
# TYPE plancore_reconcile_plans_total counter
plancore_reconcile_plans_total{reason="OK"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	// (StaleHeartbeat and CapacityExceeded count 2: ObserveJob counts its
	// plan's exclusions as well.)
	// The same metrics twice on one registry is an error, not a panic.
	if _, err := metrics.NewRecorder(reg); err == nil {
		t.Fatal("a second Recorder on one registry registered")
	} else if are := (prometheus.AlreadyRegisteredError{}); !errors.As(err, &are) {
		t.Fatalf("err = %v, want AlreadyRegisteredError", err)
	}
}

func TestCollectorsReadCountersAtScrape(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewPedanticRegistry()
	var m capacity.Metrics
	tracker, err := expectations.NewTracker(expectations.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := metrics.Register(reg, metrics.CapacityStoreCollector(&m), metrics.TrackerCollector(tracker)); err != nil {
		t.Fatal(err)
	}
	mem, err := capacity.NewMemoryStore(capacity.MemoryStoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	store := capacity.CountingStore{Store: mem, Metrics: &m}
	if _, err := store.Heartbeat(ctx, "n", capacity.Heartbeat{Epoch: 1, Seq: 1, Max: 1}); err != nil {
		t.Fatal(err)
	}
	for _, rid := range []string{"r1", "r2"} {
		if _, err := store.Reserve(ctx, capacity.Reservation{Node: "n", RID: rid}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.Ack(ctx, capacity.Ack{Node: "n", RID: "r1", Epoch: 1, Seq: 2}); err != nil {
		t.Fatal(err)
	}
	owner := expectations.Owner{Namespace: "ns", Name: "rc", UID: "u"}
	if _, err := tracker.Record(now, expectations.Record{Owner: owner, Group: "g", Action: expectations.Create, Token: "t1"}); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP plancore_capacity_ack_total Ack calls of a capacity CountingStore, by result.
# TYPE plancore_capacity_ack_total counter
plancore_capacity_ack_total{result="duplicate"} 0
plancore_capacity_ack_total{result="epoch-mismatch"} 0
plancore_capacity_ack_total{result="error"} 0
plancore_capacity_ack_total{result="expired"} 0
plancore_capacity_ack_total{result="late"} 0
plancore_capacity_ack_total{result="ok"} 1
# HELP plancore_capacity_reserve_total Reserve calls and batch items of a capacity CountingStore, by result.
# TYPE plancore_capacity_reserve_total counter
plancore_capacity_reserve_total{result="duplicate"} 0
plancore_capacity_reserve_total{result="error"} 0
plancore_capacity_reserve_total{result="full"} 1
plancore_capacity_reserve_total{result="limit-mismatch"} 0
plancore_capacity_reserve_total{result="ok"} 1
plancore_capacity_reserve_total{result="rolled-back"} 0
plancore_capacity_reserve_total{result="stale-heartbeat"} 0
plancore_capacity_reserve_total{result="unknown-node"} 0
# HELP plancore_expectations_expired_total Expectation items reported Expired (lingering ones included).
# TYPE plancore_expectations_expired_total counter
plancore_expectations_expired_total 0
# HELP plancore_expectations_overdue_total Expectation items that passed their deadline under OnExpiry Block.
# TYPE plancore_expectations_overdue_total counter
plancore_expectations_overdue_total 0
# HELP plancore_expectations_pending_records Expectation records the tracker holds.
# TYPE plancore_expectations_pending_records gauge
plancore_expectations_pending_records 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	// The expectation expires unobserved: the next Satisfied reports it,
	// and the next scrape counts it.
	view, err := tracker.ViewFor(owner, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tracker.Satisfied(now.Add(time.Hour), owner, "g", view); err != nil {
		t.Fatal(err)
	}
	want = `
# HELP plancore_expectations_expired_total Expectation items reported Expired (lingering ones included).
# TYPE plancore_expectations_expired_total counter
plancore_expectations_expired_total 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "plancore_expectations_expired_total"); err != nil {
		t.Fatal(err)
	}
}

// TestLabelsListEveryDeclaredConstant reads each core's sources and checks
// that the labels this package accepts are exactly the constants declared
// there: a new reason code must be added here or it is exported as "other".
func TestLabelsListEveryDeclaredConstant(t *testing.T) {
	for _, c := range []struct {
		pkg, typ string
		got      []string
	}{
		{"reconcile", "ReasonCode", metrics.DeclaredLabels("reconcile_reason")},
		{"reconcile", "ActionKind", metrics.DeclaredLabels("reconcile_kind")},
		{"dag", "ReasonCode", metrics.DeclaredLabels("dag_reason")},
		{"lock", "ReasonCode", metrics.DeclaredLabels("lock_reason")},
		{"lock", "Kind", metrics.DeclaredLabels("lock_kind")},
		{"gpu", "ReasonCode", metrics.DeclaredLabels("gpu_reason")},
		{"expectations", "ReasonCode", metrics.DeclaredLabels("expectations_reason")},
		{"capacity", "ReasonCode", metrics.DeclaredLabels("capacity_reason")},
		{"capacity", "JobOutcome", metrics.DeclaredLabels("capacity_outcome")},
	} {
		want := declared(t, filepath.Join("..", "..", c.pkg), c.typ)
		if len(want) == 0 {
			t.Fatalf("%s.%s: no constants found", c.pkg, c.typ)
		}
		slices.Sort(c.got)
		if diff := cmp.Diff(want, c.got); diff != "" {
			t.Errorf("%s.%s labels (-declared +accepted):\n%s", c.pkg, c.typ, diff)
		}
	}
}

// declared returns the sorted values of the string constants of type typ in
// the non-test sources of dir.
func declared(t *testing.T, dir, typ string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				id, ok := vs.Type.(*ast.Ident)
				if !ok || id.Name != typ {
					continue
				}
				for _, v := range vs.Values {
					lit, ok := v.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("%s: a %s constant that is not a string literal", f, typ)
					}
					s, _ := strconv.Unquote(lit.Value)
					vals[s] = true
				}
			}
		}
	}
	return slices.Sorted(maps.Keys(vals))
}

func TestRecorderOnControllerRuntimeRegistry(t *testing.T) {
	rec, err := metrics.NewRecorder(nil)
	if err != nil {
		t.Fatal(err)
	}
	rec.ObserveGPUBind(gpu.Outcome{Bound: true})
	want := `
# HELP plancore_gpu_binds_total GPU bind flows, by result (bound, unknown, failed).
# TYPE plancore_gpu_binds_total counter
plancore_gpu_binds_total{result="bound"} 1
`
	if err := testutil.GatherAndCompare(ctrlmetrics.Registry, strings.NewReader(want), "plancore_gpu_binds_total"); err != nil {
		t.Fatal(err)
	}
}
