package expectations_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"pgregory.net/rapid"

	"github.com/plancore/plancore/expectations"
	"github.com/plancore/plancore/fake"
)

// This file is a simulation: a reconcile loop over fake's pod store, whose
// informer lags, gated by expectations (or, for the baseline, not gated).

// scenario is one generated run: world parameters and a script of actor events,
// one per reconcile.
type scenario struct {
	Seed     uint64
	Lag      time.Duration
	Timeout  time.Duration // create and delete timeout
	GraceMax time.Duration
	DropRate float64
	// CountTerminating makes the planner count terminating pods (KubeRay
	// counting); the State is then built with CountsTerminating.
	CountTerminating bool
	Steps            []simStep
}

type simStep struct {
	Advance time.Duration // simulated time before this reconcile
	Desired int
	// Faults for the calls of this reconcile.
	FailCreates, LoseCreates, AmbiguousCreates int
	FailDeletes, LoseDeletes                   int
	// Interference: indexes (into the API's pods, by name) of pods that turn
	// Failed, are deleted by an outsider, or get a finalizer (stuck); -1 for none.
	FailPod, OutsiderDelete, StickPod int
	Unstick                           bool
	// NameVictim, when not -1, is an autoscaler scale-down: it names one of the
	// API's pods (which the cache may not show yet) in WorkersToDelete, and
	// Desired is one lower from this step on.
	NameVictim int
}

// interferes reports whether anything but the controller changes pods' health
// or existence; no planner can then promise property 2.
func (sc scenario) interferes() bool {
	for _, s := range sc.Steps {
		if s.FailPod >= 0 || s.OutsiderDelete >= 0 {
			return true
		}
	}
	return false
}

// healthy reports whether the run has no faults, no interference, no stuck
// pods and no dropped events: a healthy system, which must never see an expiry.
func (sc scenario) healthy() bool {
	if sc.DropRate > 0 || sc.interferes() {
		return false
	}
	for _, s := range sc.Steps {
		if s.FailCreates+s.LoseCreates+s.AmbiguousCreates+s.FailDeletes+s.LoseDeletes > 0 || s.StickPod >= 0 {
			return false
		}
	}
	return true
}

func optionalIndex(t *rapid.T, label string, p float64) int {
	if rapid.Float64Range(0, 1).Draw(t, label+"?") >= p {
		return -1
	}
	return rapid.IntRange(0, 7).Draw(t, label)
}

// scenarioGen draws scenarios whose informer lag stays below the timeout
// (the safety assumption) unless lagBeyondTimeout is set.
func scenarioGen(lagBeyondTimeout bool) *rapid.Generator[scenario] {
	return rapid.Custom(func(t *rapid.T) scenario {
		sc := scenario{
			Seed:             rapid.Uint64().Draw(t, "seed"),
			Lag:              time.Duration(rapid.IntRange(0, 30).Draw(t, "lagSeconds")) * time.Second,
			Timeout:          expectations.DefaultTimeout,
			GraceMax:         time.Duration(rapid.IntRange(0, 20).Draw(t, "graceSeconds")) * time.Second,
			CountTerminating: rapid.Bool().Draw(t, "countTerminating"),
		}
		if rapid.Bool().Draw(t, "drops") {
			sc.DropRate = rapid.Float64Range(0, 1).Draw(t, "dropRate")
		}
		if lagBeyondTimeout {
			sc.Timeout = time.Duration(rapid.IntRange(1, 10).Draw(t, "timeoutSeconds")) * time.Second
			sc.Lag = sc.Timeout + time.Duration(rapid.IntRange(1, 30).Draw(t, "excessLagSeconds"))*time.Second
		}
		faulty := rapid.Bool().Draw(t, "faulty")
		interfering := rapid.Bool().Draw(t, "interfering")
		desired := rapid.IntRange(0, 6).Draw(t, "desired0")
		for i := range rapid.IntRange(1, 25).Draw(t, "steps") {
			s := simStep{FailPod: -1, OutsiderDelete: -1, StickPod: -1, NameVictim: -1}
			s.Advance = time.Duration(rapid.IntRange(1, 12).Draw(t, "advance")) * time.Second
			if i > 0 && rapid.Float64Range(0, 1).Draw(t, "rescale") < 0.3 {
				desired = rapid.IntRange(0, 6).Draw(t, "desired")
			}
			if desired > 0 && rapid.Float64Range(0, 1).Draw(t, "name") < 0.15 {
				s.NameVictim = rapid.IntRange(0, 7).Draw(t, "victim")
				desired--
			}
			s.Desired = desired
			if faulty {
				s.FailCreates = rapid.IntRange(0, 1).Draw(t, "failCreates")
				s.LoseCreates = rapid.IntRange(0, 1).Draw(t, "loseCreates")
				s.AmbiguousCreates = rapid.IntRange(0, 1).Draw(t, "ambiguousCreates")
				s.FailDeletes = rapid.IntRange(0, 1).Draw(t, "failDeletes")
				s.LoseDeletes = rapid.IntRange(0, 1).Draw(t, "loseDeletes")
				s.StickPod = optionalIndex(t, "stick", 0.2)
				s.Unstick = rapid.Float64Range(0, 1).Draw(t, "unstick") < 0.2
			}
			if interfering {
				s.FailPod = optionalIndex(t, "failPod", 0.2)
				s.OutsiderDelete = optionalIndex(t, "outsiderDelete", 0.2)
			}
			sc.Steps = append(sc.Steps, s)
		}
		return sc
	})
}

// simResult is what a run saw.
type simResult struct {
	// Violation describes the first break of property 1 (over-creation) or 2
	// (over-deletion), empty if none.
	Violation string
	// ExpiredBeforeViolation says an Expired was reported before the violation.
	ExpiredBeforeViolation bool
	// Expired counts Expired reports.
	Expired int
	// Creates and Deletes count calls made.
	Creates, Deletes int
	// Liveness describes the first check that was still unsatisfied although
	// every item should have settled, empty if none.
	Liveness string
}

var (
	simOwner   = expectations.Owner{Namespace: "ns", Name: "rc", UID: "uid-1"}
	simStart   = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	podsGR     = schema.GroupResource{Resource: "pods"}
	errQuota   = apierrors.NewForbidden(podsGR, "", errors.New("exceeded quota"))
	errTimeout = apierrors.NewServerTimeout(podsGR, "create", 1)
)

// simulate runs sc: gated by expectations when gated is set, else trusting the
// informer on every reconcile.
func simulate(sc scenario, gated bool) (simResult, error) {
	return simulateTraced(sc, gated, func(string, ...any) {})
}

// simulateTraced is simulate with a trace of every reconcile, for debugging a
// failing case.
func simulateTraced(sc scenario, gated bool, trace func(format string, args ...any)) (simResult, error) {
	w := fake.NewWorld(sc.Seed, simStart)
	st, err := expectations.New(expectations.Options{
		CreateTimeout: sc.Timeout, DeleteTimeout: sc.Timeout, CountsTerminating: sc.CountTerminating,
	})
	if err != nil {
		return simResult{}, err
	}
	m := &sim{
		sc: sc, gated: gated, trace: trace, w: w, st: st, lingering: map[string]bool{},
		store: fake.NewPodStore(w, fake.PodStoreOptions{Lag: sc.Lag, DropRate: sc.DropRate, GraceMax: sc.GraceMax}),
	}
	for _, step := range sc.Steps {
		m.desired = step.Desired
		m.disturb(step)
		if err := m.reconcile(); err != nil {
			return m.res, err
		}
	}
	return m.res, nil
}

// sim is one simulated controller: a pod API, an informer, and (when gated)
// the expectations that gate its reconciles.
type sim struct {
	sc     scenario
	gated  bool
	trace  func(format string, args ...any)
	w      *fake.World
	store  *fake.PodStore
	st     *expectations.State
	res    simResult
	tokens int
	// desired is the step's replica count.
	desired int
	// lingering are the pods of expired deletes still in view.
	lingering map[string]bool
	// deleted are the pods this pass deleted by name.
	deleted map[string]bool
	// tLast is the last time the loop recorded or concluded an item.
	tLast time.Time
	// named is WorkersToDelete: pods the autoscaler asked to remove.
	named []string
}

// counts applies the planner's rule: Failed pods never count, lingering pods
// never count, terminating pods count only under KubeRay counting.
func (m *sim) counts(p corev1.Pod) bool {
	if p.Status.Phase == corev1.PodFailed || m.lingering[p.Name] {
		return false
	}
	return p.DeletionTimestamp == nil || m.sc.CountTerminating
}

// apiCounted applies the planner's rule to the API's pods, leaving out the
// pods this pass deleted by name (the planner counts them out too).
func (m *sim) apiCounted() int {
	n := 0
	for _, p := range m.store.Pods("ns") {
		if m.counts(p) && !m.deleted[p.Name] {
			n++
		}
	}
	return n
}

// apiRemaining counts the pods that will stay: neither Failed nor deleted
// (counted pods minus in-flight deletions: no over-deletion).
func (m *sim) apiRemaining() int {
	n := 0
	for _, p := range m.store.Pods("ns") {
		if p.Status.Phase != corev1.PodFailed && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

func (m *sim) violate(format string, args ...any) {
	if m.res.Violation == "" {
		m.res.Violation = fmt.Sprintf("at %v: ", m.w.Clock.Now().Sub(simStart)) + fmt.Sprintf(format, args...)
		m.res.ExpiredBeforeViolation = m.res.Expired > 0
	}
}

func (m *sim) pick(i int) (corev1.Pod, bool) {
	ps := m.store.Pods("ns")
	if i < 0 || len(ps) == 0 {
		return corev1.Pod{}, false
	}
	return ps[i%len(ps)], true
}

// disturb applies the step's outside events and faults, then advances the clock.
func (m *sim) disturb(step simStep) {
	ctx, store := context.Background(), m.store
	if step.NameVictim >= 0 {
		var live []corev1.Pod
		for _, p := range store.Pods("ns") {
			if p.DeletionTimestamp == nil {
				live = append(live, p)
			}
		}
		if len(live) > 0 {
			m.named = append(m.named, live[step.NameVictim%len(live)].Name)
		}
	}
	if p, ok := m.pick(step.FailPod); ok {
		_ = store.SetPhase("ns", p.Name, corev1.PodFailed)
	}
	if p, ok := m.pick(step.OutsiderDelete); ok {
		_ = store.DeletePod(ctx, "ns", p.Name, fake.DeleteOptions{})
	}
	if p, ok := m.pick(step.StickPod); ok {
		_ = store.Mutate("ns", p.Name, func(p *corev1.Pod) { p.Finalizers = []string{"stuck"} })
	}
	if step.Unstick {
		for _, p := range store.Pods("ns") {
			if len(p.Finalizers) > 0 {
				_ = store.RemoveFinalizers("ns", p.Name)
			}
		}
	}
	f := m.w.Faults
	f.Clear()
	f.FailNext(fake.KindPodCreate, step.FailCreates, errQuota)
	f.LoseResponseNext(fake.KindPodCreate, step.LoseCreates, errTimeout)
	f.FailNext(fake.KindPodCreate, step.AmbiguousCreates, errTimeout)
	f.FailNext(fake.KindPodDelete, step.FailDeletes, errQuota)
	f.LoseResponseNext(fake.KindPodDelete, step.LoseDeletes, errTimeout)
	m.w.Clock.Advance(step.Advance)
}

// reconcile is one reconcile of the group, on one snapshot of the informer.
func (m *sim) reconcile() error {
	now := m.w.Clock.Now()
	cached := m.store.Informer().List("ns", nil)
	m.trace("t+%v desired %d cache %v api %v", now.Sub(simStart), m.desired, podList(cached), podList(m.store.Pods("ns")))
	if m.gated {
		ok, err := m.gate(now, cached)
		if err != nil || !ok {
			return err
		}
	}
	stop, err := m.deleteNamed(now, cached)
	if err != nil || stop {
		return err
	}
	var counted, unhealthy []corev1.Pod
	for _, p := range cached {
		if m.deleted[p.Name] {
			continue
		}
		switch {
		case p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodFailed:
			unhealthy = append(unhealthy, p)
		case m.counts(p):
			counted = append(counted, p)
		}
	}
	if len(unhealthy) > 0 {
		// As in KubeRay, a pass that deletes unhealthy pods creates nothing.
		for _, p := range unhealthy {
			if err := m.del(now, p); err != nil {
				return err
			}
		}
		return nil
	}
	diff := m.desired - len(counted)
	if err := m.create(now, max(diff, 0)); err != nil {
		return err
	}
	if diff < 0 {
		victims := slices.DeleteFunc(slices.Clone(counted), func(p corev1.Pod) bool { return p.DeletionTimestamp != nil })
		for _, p := range victims[:min(-diff, len(victims))] {
			if err := m.del(now, p); err != nil {
				return err
			}
			// No over-deletion (only meaningful without outside interference).
			if n := m.apiRemaining(); n < m.desired && !m.sc.interferes() {
				m.violate("over-deletion: %d pods remain in the API after deleting %s, desired %d", n, p.Name, m.desired)
			}
		}
	}
	return nil
}

// gate checks the group's expectations and reports whether the pass may act;
// it also checks liveness: every item settles by its timeout (Unblock), and
// in a healthy run once the informer and the grace period allow.
func (m *sim) gate(now time.Time, cached []corev1.Pod) (bool, error) {
	r, err := m.st.Satisfied(now, simOwner, "g", expectations.NewView(cached))
	if err != nil {
		return false, err
	}
	m.trace("%s", r)
	if !r.Satisfied && !m.tLast.IsZero() && m.res.Liveness == "" {
		switch {
		case !now.Before(m.tLast.Add(max(m.sc.Timeout, m.sc.Lag))):
			m.res.Liveness = fmt.Sprintf("at %v, %v after the last record, still pending:\n%s", now.Sub(simStart), now.Sub(m.tLast), r)
		case m.sc.healthy() && !now.Before(m.tLast.Add(m.sc.Lag+m.sc.GraceMax)):
			m.res.Liveness = fmt.Sprintf("healthy run at %v, %v after the last record, still pending:\n%s", now.Sub(simStart), now.Sub(m.tLast), r)
		}
	}
	m.res.Expired += len(r.Expired)
	clear(m.lingering)
	for _, e := range r.Lingering {
		m.lingering[e.Pod] = true
	}
	return r.Satisfied, nil
}

// deleteNamed deletes WorkersToDelete first, by name, whether or not the
// cache shows the pod, as KubeRay does; a pod the snapshot did not show is
// recorded unseen. It reports whether a failed delete ended the pass.
func (m *sim) deleteNamed(now time.Time, cached []corev1.Pod) (bool, error) {
	m.deleted = map[string]bool{}
	var retry []string
	stop := false
	for _, name := range m.named {
		if stop {
			retry = append(retry, name)
			continue
		}
		var seen corev1.Pod
		for _, p := range cached {
			if p.Name == name {
				seen = p
			}
		}
		err := m.deleteOne(now, expectations.Record{Owner: simOwner, Group: "g", Action: expectations.Delete, Pod: name, PodUID: seen.UID, Seen: seen.Name != ""})
		var cerr *concludeError
		if errors.As(err, &cerr) {
			return false, cerr.err
		}
		if err != nil && !apierrors.IsNotFound(err) {
			// As in KubeRay, a failed delete ends the pass; the name stays
			// in WorkersToDelete for the next one.
			retry, stop = append(retry, name), true
			continue
		}
		m.deleted[name] = true
	}
	m.named = retry
	return stop, nil
}

// concludeError is a bookkeeping failure, as opposed to the call's own error.
type concludeError struct{ err error }

func (e *concludeError) Error() string { return e.err.Error() }

// deleteOne records rec, deletes its pod and concludes the record; it returns
// the delete's error, or a *concludeError.
func (m *sim) deleteOne(now time.Time, rec expectations.Record) error {
	m.res.Deletes++
	if m.gated {
		if _, err := m.st.Record(now, rec); err != nil {
			return &concludeError{err}
		}
	}
	err := m.store.DeletePod(context.Background(), "ns", rec.Pod, fake.DeleteOptions{UID: rec.PodUID})
	if m.gated {
		if _, cerr := m.st.Conclude(m.w.Clock.Now(), rec.Ref(), expectations.Classify(expectations.Delete, err, false), "", ""); cerr != nil {
			return &concludeError{cerr}
		}
		m.tLast = m.w.Clock.Now()
	}
	return err
}

// del deletes one pod the snapshot showed; the delete's own failure is left
// for the next pass.
func (m *sim) del(now time.Time, p corev1.Pod) error {
	err := m.deleteOne(now, expectations.Record{Owner: simOwner, Group: "g", Action: expectations.Delete, Pod: p.Name, PodUID: p.UID, Seen: true})
	var cerr *concludeError
	if errors.As(err, &cerr) {
		return cerr.err
	}
	return nil
}

// create creates n pods with generated names, each behind a token, checking
// after each that the API holds no more counted pods than desired.
func (m *sim) create(now time.Time, n int) error {
	for range n {
		m.tokens++
		token := fmt.Sprintf("tok-%d", m.tokens)
		rec := expectations.Record{Owner: simOwner, Group: "g", Action: expectations.Create, Token: token}
		if m.gated {
			if _, err := m.st.Record(now, rec); err != nil {
				return err
			}
		}
		m.res.Creates++
		created, err := m.store.CreatePod(context.Background(), corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", GenerateName: "rc-g-",
			Annotations: map[string]string{expectations.TokenAnnotation: token},
		}})
		if m.gated {
			if _, err := m.st.Conclude(m.w.Clock.Now(), rec.Ref(), expectations.Classify(expectations.Create, err, false), created.Name, created.UID); err != nil {
				return err
			}
			m.tLast = m.w.Clock.Now()
		}
		// No over-creation.
		if n := m.apiCounted(); n > m.desired {
			m.violate("over-creation: %d counted pods in the API, desired %d", n, m.desired)
		}
	}
	return nil
}

// TestGatedLoopNeverOvershoots says: with the informer lag
// below the timeout, a loop gated by expectations never creates more pods than
// desired and never deletes below the desired count, whatever the faults.
func TestGatedLoopNeverOvershoots(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sc := scenarioGen(false).Draw(t, "scenario")
		res, err := simulate(sc, true)
		if err != nil {
			t.Fatal(err)
		}
		if res.Violation != "" {
			t.Fatalf("gated loop broke: %s", res.Violation)
		}
		if res.Liveness != "" {
			t.Fatalf("liveness: %s", res.Liveness)
		}
		// A healthy system never alerts.
		if sc.healthy() && res.Expired > 0 {
			t.Fatalf("healthy run reported %d expiries", res.Expired)
		}
	})
}

// TestUngatedLoopOvershoots says: the same generator and loop
// without expectations must overshoot, or the generator proves nothing.
func TestUngatedLoopOvershoots(t *testing.T) {
	gen := scenarioGen(false)
	const budget = 300
	found, first := 0, ""
	for i := range budget {
		sc := gen.Example(i)
		res, err := simulate(sc, false)
		if err != nil {
			t.Fatal(err)
		}
		if res.Violation != "" {
			found++
			if first == "" {
				first = fmt.Sprintf("example %d: %s", i, res.Violation)
			}
		}
	}
	if found == 0 {
		t.Fatalf("the ungated loop never overshot in %d scenarios: the generator is too weak", budget)
	}
	t.Logf("ungated loop overshot in %d of %d scenarios; first: %s", found, budget, first)
}

// TestExpiryExplainsOvershoot says: with the lag beyond the
// timeout, overshoot is possible, but only after an Expired report.
func TestExpiryExplainsOvershoot(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sc := scenarioGen(true).Draw(t, "scenario")
		res, err := simulate(sc, true)
		if err != nil {
			t.Fatal(err)
		}
		if res.Violation != "" && !res.ExpiredBeforeViolation {
			t.Fatalf("broke without an Expired report first: %s", res.Violation)
		}
		if res.Liveness != "" {
			t.Fatalf("liveness: %s", res.Liveness)
		}
	})
}

func podList(ps []corev1.Pod) []string {
	var out []string
	for _, p := range ps {
		n := p.Name
		if p.DeletionTimestamp != nil {
			n += "~"
		}
		if p.Status.Phase == corev1.PodFailed {
			n += "!"
		}
		out = append(out, n)
	}
	return out
}
