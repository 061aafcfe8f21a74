// Package metrics exports plancore's outcomes as Prometheus metrics, on
// controller-runtime's registry (sigs.k8s.io/controller-runtime/pkg/metrics,
// which a manager serves on /metrics) or on any prometheus.Registerer.
//
// The cores return data and never count; this package is the counting
// wrapper. A Recorder holds counters of plan outcomes that its Observe
// methods feed, one call per plan or event, and is a capacity.DispatcherObserver
// itself; CapacityStoreCollector and TrackerCollector read the counters that
// capacity.Metrics and expectations.Tracker already keep, at scrape time.
//
//	rec, err := metrics.NewRecorder(nil) // nil: controller-runtime's registry
//	d := &capacity.Dispatcher{..., Observer: rec}
//	plan, err := reconcile.Decide(in, opts)
//	rec.ObserveReconcilePlan(plan)
//	err = metrics.Register(nil, metrics.TrackerCollector(tracker), metrics.CapacityStoreCollector(&m))
//
// Every label is bounded: a reason, kind or outcome label takes only the
// values its core declares as constants, and anything else (an empty code,
// a code a caller made up) is exported as "other". No label carries a node,
// pod, job or cluster name.
//
// # Metrics
//
//	plancore_capacity_excluded_nodes_total{reason}       counter  ObserveCapacityPlan
//	plancore_capacity_dispatcher_jobs_total{outcome}     counter  ObserveJob (one per attempt)
//	plancore_capacity_dispatcher_reserve_attempts_total  counter  ObserveJob
//	plancore_capacity_dispatcher_pending_jobs            gauge    ObserveJob
//	plancore_capacity_reserve_total{result}              counter  CapacityStoreCollector
//	plancore_capacity_ack_total{result}                  counter  CapacityStoreCollector
//	plancore_expectations_expired_total                  counter  TrackerCollector
//	plancore_expectations_overdue_total                  counter  TrackerCollector
//	plancore_expectations_pending_records                gauge    TrackerCollector
//	plancore_expectations_pending_items_total{reason}    counter  ObserveExpectations
//	plancore_lock_plans_total{kind,reason}               counter  ObserveLockPlan
//	plancore_gpu_fit_plans_total{reason}                 counter  ObserveGPUPlan
//	plancore_gpu_node_rejections_total{reason}           counter  ObserveGPUPlan
//	plancore_gpu_binds_total{result}                     counter  ObserveGPUBind
//	plancore_reconcile_plans_total{reason}               counter  ObserveReconcilePlan
//	plancore_reconcile_actions_total{kind,reason}        counter  ObserveReconcilePlan
//	plancore_dag_actions_total{action,reason}            counter  ObserveDAGPlan
//	plancore_dag_blocked_flows_total{reason}             counter  ObserveDAGPlan
package metrics

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/plancore/plancore/capacity"
	"github.com/plancore/plancore/dag"
	"github.com/plancore/plancore/expectations"
	"github.com/plancore/plancore/gpu"
	"github.com/plancore/plancore/lock"
	"github.com/plancore/plancore/reconcile"
)

// Recorder counts plan outcomes. Its methods are safe for concurrent use;
// make one with NewRecorder per registry.
type Recorder struct {
	capExcluded *prometheus.CounterVec
	jobs        *prometheus.CounterVec
	reserves    prometheus.Counter
	pending     prometheus.Gauge
	expPending  *prometheus.CounterVec
	lockPlans   *prometheus.CounterVec
	gpuPlans    *prometheus.CounterVec
	gpuRejects  *prometheus.CounterVec
	gpuBinds    *prometheus.CounterVec
	recPlans    *prometheus.CounterVec
	recActions  *prometheus.CounterVec
	dagActions  *prometheus.CounterVec
	dagBlocked  *prometheus.CounterVec
}

var _ capacity.DispatcherObserver = (*Recorder)(nil)

func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "plancore", Name: name, Help: help}, labels)
}

// NewRecorder builds a Recorder and registers its metrics on reg; a nil reg
// means controller-runtime's metrics.Registry. Registering twice on one
// registry is an error (prometheus.AlreadyRegisteredError).
func NewRecorder(reg prometheus.Registerer) (*Recorder, error) {
	r := &Recorder{
		capExcluded: counterVec("capacity_excluded_nodes_total", "Nodes capacity.Decide left out, by primary reason code.", "reason"),
		jobs:        counterVec("capacity_dispatcher_jobs_total", "Attempts of the capacity Dispatcher, by outcome.", "outcome"),
		reserves: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "plancore", Name: "capacity_dispatcher_reserve_attempts_total",
			Help: "Reserve calls made by the capacity Dispatcher's dispatches."}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "plancore", Name: "capacity_dispatcher_pending_jobs",
			Help: "Jobs the capacity Dispatcher holds (waiting or in flight), after its last attempt."}),
		expPending: counterVec("expectations_pending_items_total", "Pending expectation items seen in Satisfied results, by reason code.", "reason"),
		lockPlans:  counterVec("lock_plans_total", "Lock plans, by kind and reason code.", "kind", "reason"),
		gpuPlans:   counterVec("gpu_fit_plans_total", "GPU fit plans (gpu.Decide), by reason code.", "reason"),
		gpuRejects: counterVec("gpu_node_rejections_total", "Devices' rejections on nodes that did not fit, by reason code, counted per rejected device.", "reason"),
		gpuBinds:   counterVec("gpu_binds_total", "GPU bind flows, by result (bound, unknown, failed).", "result"),
		recPlans:   counterVec("reconcile_plans_total", "RayCluster pod plans, by the outcome's reason code.", "reason"),
		recActions: counterVec("reconcile_actions_total", "Actions of RayCluster pod plans, by kind and reason code.", "kind", "reason"),
		dagActions: counterVec("dag_actions_total", "Job creations and deletions of workflow plans, by action and reason code.", "action", "reason"),
		dagBlocked: counterVec("dag_blocked_flows_total", "Waiting flows of workflow plans, by their first reason code, counted per plan.", "reason"),
	}
	if err := Register(reg, r.capExcluded, r.jobs, r.reserves, r.pending, r.expPending, r.lockPlans, r.gpuPlans,
		r.gpuRejects, r.gpuBinds, r.recPlans, r.recActions, r.dagActions, r.dagBlocked); err != nil {
		return nil, err
	}
	return r, nil
}

// Register registers every collector on reg (controller-runtime's
// metrics.Registry when nil) and returns the errors joined.
func Register(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	if reg == nil {
		reg = ctrlmetrics.Registry
	}
	var errs []error
	for _, c := range cs {
		errs = append(errs, reg.Register(c))
	}
	return errors.Join(errs...)
}

// ObserveCapacityPlan counts p's excluded nodes by primary reason.
func (r *Recorder) ObserveCapacityPlan(p capacity.Plan) {
	for _, e := range p.Excluded {
		r.capExcluded.WithLabelValues(label(capacityExclusions, e.Reason.Code)).Inc()
	}
}

// ObserveJob counts one attempt of the capacity Dispatcher: its outcome, its
// reserve calls, and the jobs still held. It implements
// capacity.DispatcherObserver. The attempt's exclusions are counted too
// (ObserveCapacityPlan of its plan).
func (r *Recorder) ObserveJob(e capacity.DispatcherEvent) {
	r.jobs.WithLabelValues(label(jobOutcomes, e.Outcome)).Inc()
	r.reserves.Add(float64(len(e.Result.Attempts)))
	r.pending.Set(float64(e.Pending))
	r.ObserveCapacityPlan(e.Plan)
}

// ObserveExpectations counts the pending items of a Satisfied result by
// reason.
func (r *Recorder) ObserveExpectations(res expectations.Verdict) {
	for _, e := range res.Pending {
		r.expPending.WithLabelValues(label(expectationsReasons, e.Reason.Code)).Inc()
	}
}

// ObserveLockPlan counts one lock plan.
func (r *Recorder) ObserveLockPlan(p lock.Plan) {
	r.lockPlans.WithLabelValues(label(lockKinds, p.Kind), label(lockReasons, p.Reason.Code)).Inc()
}

// ObserveGPUPlan counts one fit plan by its reason, and the rejections of
// the nodes that did not fit.
func (r *Recorder) ObserveGPUPlan(p gpu.Plan) {
	r.gpuPlans.WithLabelValues(label(gpuReasons, p.Reason.Code)).Inc()
	for _, n := range p.Nodes {
		for _, rej := range n.Rejections {
			r.gpuRejects.WithLabelValues(label(gpuReasons, rej.Code)).Add(float64(rej.Count))
		}
	}
}

// ObserveGPUBind counts one bind flow's outcome: bound, unknown (the bind
// call's result is unknown) or failed.
func (r *Recorder) ObserveGPUBind(o gpu.Outcome) {
	result := "failed"
	switch {
	case o.Bound:
		result = "bound"
	case o.Unknown:
		result = "unknown"
	}
	r.gpuBinds.WithLabelValues(result).Inc()
}

// ObserveReconcilePlan counts one pod plan by its outcome's reason, and its
// actions by kind and reason.
func (r *Recorder) ObserveReconcilePlan(p reconcile.Plan) {
	r.recPlans.WithLabelValues(label(reconcileReasons, p.Verdict.Reason.Code)).Inc()
	for _, a := range p.Actions {
		r.recActions.WithLabelValues(label(reconcileKinds, a.Kind), label(reconcileReasons, a.Reason.Code)).Inc()
	}
}

// ObserveDAGPlan counts one workflow plan's creations and deletions by
// reason, and its waiting flows by their first reason.
func (r *Recorder) ObserveDAGPlan(p dag.Plan) {
	for _, c := range p.Create {
		r.dagActions.WithLabelValues("create", label(dagReasons, c.Reason.Code)).Inc()
	}
	for _, d := range p.Delete {
		r.dagActions.WithLabelValues("delete", label(dagReasons, d.Reason.Code)).Inc()
	}
	for _, b := range p.Blocked {
		code := dag.ReasonCode("")
		if len(b.Reasons) > 0 {
			code = b.Reasons[0].Code
		}
		r.dagBlocked.WithLabelValues(label(dagReasons, code)).Inc()
	}
}
