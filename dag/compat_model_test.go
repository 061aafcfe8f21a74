package dag_test

import (
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"pgregory.net/rapid"

	"github.com/plancore/plancore/dag"
)

// modelResult is what the Volcano model decides for one sync.
type modelResult struct {
	Create []string
	Delete []string
	Write  bool
	Status dag.Status
}

// volcanoModel is a slow, separately written model of the anchor's
// controller (Volcano's JobFlow sync), used to check VolcanoCompat on random
// snapshots: the phases that do nothing or only delete, then deployJob,
// getAllJobStatus and the phase table.
func volcanoModel(s dag.Snapshot) modelResult {
	w := s.Flow
	labelled := modelLabelled(s)
	var out modelResult
	switch w.Status.State.Phase {
	case dag.PhaseFailed, dag.PhaseTerminating:
		out.Status = w.Status
		return out
	case dag.PhaseSucceed:
		if w.Spec.JobRetainPolicy == dag.RetainPolicyDelete {
			for _, j := range labelled {
				out.Delete = append(out.Delete, j.Name)
			}
			out.Status = w.Status
			return out
		}
	}
	out.Create = modelDeploy(s)
	st := modelStatus(s, labelled)
	st.State.Phase = modelPhase(w, st)
	out.Status, out.Write = st, true
	return out
}

// modelFind returns the observed job with a name, or nil.
func modelFind(s dag.Snapshot, name string) *dag.Job {
	for i := range s.Jobs {
		if s.Jobs[i].Name == name {
			return &s.Jobs[i]
		}
	}
	return nil
}

// modelLabelled lists the workflow's labelled jobs: the spec's job names in
// order, once each, then the other labelled jobs by name.
func modelLabelled(s dag.Snapshot) []dag.Job {
	w := s.Flow
	label := w.Namespace + "." + w.Name
	isLabelled := func(j *dag.Job) bool { return j != nil && j.Labels[dag.LabelCreatedByJobFlow] == label }
	var names []string
	for _, f := range w.Spec.Flows {
		if n := w.Name + "-" + f.Name; !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	var labelled []dag.Job
	for _, n := range names {
		if j := modelFind(s, n); isLabelled(j) {
			labelled = append(labelled, *j)
		}
	}
	var rest []dag.Job
	for _, j := range s.Jobs {
		if isLabelled(&j) && !slices.Contains(names, j.Name) {
			rest = append(rest, j)
		}
	}
	sort.Slice(rest, func(a, b int) bool { return rest[a].Name < rest[b].Name })
	return append(labelled, rest...)
}

// modelDeploy is deployJob: every missing job whose targets all completed.
func modelDeploy(s dag.Snapshot) []string {
	w := s.Flow
	var create []string
	for _, f := range w.Spec.Flows {
		n := w.Name + "-" + f.Name
		if modelFind(s, n) != nil || slices.Contains(create, n) {
			continue
		}
		ok := true
		if f.DependsOn != nil {
			for _, t := range f.DependsOn.Targets {
				if j := modelFind(s, w.Name+"-"+t); j == nil || j.Phase != dag.JobPhaseCompleted {
					ok = false
					break
				}
			}
		}
		if ok {
			create = append(create, n)
		}
	}
	return create
}

// modelStatus is getAllJobStatus: the six lists, the conditions and the job
// status list with its running histories.
func modelStatus(s dag.Snapshot, labelled []dag.Job) dag.Status {
	st := dag.Status{PendingJobs: []string{}, RunningJobs: []string{}, FailedJobs: []string{}, CompletedJobs: []string{},
		TerminatedJobs: []string{}, UnknownJobs: []string{}, Conditions: map[string]dag.Condition{}}
	list := slices.Clone(s.Flow.Status.JobStatusList)
	now := metav1.NewTime(s.Now)
	for _, j := range labelled {
		modelBucket(&st, j)
		c := dag.Condition{Phase: j.Phase, CreateTimestamp: metav1.NewTime(j.CreationTime), TaskStatusCount: j.TaskStatusCount}
		if j.RunningDuration != nil {
			c.RunningDuration = &metav1.Duration{Duration: *j.RunningDuration}
		}
		st.Conditions[j.Name] = c
		at := -1
		for k := range list {
			if list[k].Name == j.Name {
				at = k
			}
		}
		e := modelEntry(j, list, at, now)
		if at >= 0 {
			list[at] = e
		} else {
			list = append(list, e)
		}
	}
	st.JobStatusList = list
	return st
}

// modelBucket puts a job in its list (Completing and Terminating in none).
func modelBucket(st *dag.Status, j dag.Job) {
	switch j.Phase {
	case dag.JobPhasePending:
		st.PendingJobs = append(st.PendingJobs, j.Name)
	case dag.JobPhaseRunning:
		st.RunningJobs = append(st.RunningJobs, j.Name)
	case dag.JobPhaseCompleted:
		st.CompletedJobs = append(st.CompletedJobs, j.Name)
	case dag.JobPhaseFailed:
		st.FailedJobs = append(st.FailedJobs, j.Name)
	case dag.JobPhaseTerminated:
		st.TerminatedJobs = append(st.TerminatedJobs, j.Name)
	case dag.JobPhaseCompleting, dag.JobPhaseTerminating:
	default:
		st.UnknownJobs = append(st.UnknownJobs, j.Name)
	}
}

// modelEntry is a job's new status entry, its history continued from the
// previous entry list[at] (at < 0: none) with the anchor's quirk: a non-nil
// empty history is never seeded.
func modelEntry(j dag.Job, list []dag.JobStatus, at int, now metav1.Time) dag.JobStatus {
	e := dag.JobStatus{Name: j.Name, State: j.Phase, StartTimestamp: metav1.NewTime(j.CreationTime), RestartCount: j.RetryCount}
	if j.RunningDuration != nil {
		e.EndTimestamp = metav1.NewTime(j.CreationTime.Add(*j.RunningDuration))
	}
	var prevH []dag.RunningHistory
	hasPrev := false
	if at >= 0 {
		prevH, hasPrev = list[at].RunningHistories, list[at].RunningHistories != nil
	}
	switch {
	case len(prevH) > 0:
		if prevH[len(prevH)-1].State == j.Phase {
			e.RunningHistories = prevH
		} else {
			h := slices.Clone(prevH)
			h[len(h)-1].EndTimestamp = now
			e.RunningHistories = append(h, dag.RunningHistory{StartTimestamp: now, State: j.Phase})
		}
	case hasPrev:
		e.RunningHistories = []dag.RunningHistory{}
	case j.Phase != "":
		e.RunningHistories = []dag.RunningHistory{{StartTimestamp: now, State: j.Phase}}
	}
	return e
}

// modelPhase is the anchor's Pending/Running/Succeed/Failed table.
func modelPhase(w dag.Workflow, st dag.Status) dag.Phase {
	r, c, f, t := len(st.RunningJobs), len(st.CompletedJobs), len(st.FailedJobs), len(st.TerminatedJobs)
	phase := w.Status.State.Phase
	switch phase {
	case "", dag.PhasePending:
		if (r > 0 || c > 0) && f == 0 {
			phase = dag.PhaseRunning
		} else if f > 0 || t > 0 {
			phase = dag.PhaseFailed
		} else {
			phase = dag.PhasePending
		}
	case dag.PhaseRunning:
		if c == len(w.Spec.Flows) {
			phase = dag.PhaseSucceed
		} else if f > 0 || t > 0 {
			phase = dag.PhaseFailed
		}
	}
	return phase
}

// TestPropertyCompatMatchesModel checks that VolcanoCompat equals
// the model on random snapshots (duplicates, unknown targets, cycles,
// foreign, unlabelled and orphan jobs, odd phases and previous statuses).
func TestPropertyCompatMatchesModel(t *testing.T) {
	pool := []string{"a", "b", "c", "d"}
	phases := []dag.JobPhase{"", "Pending", "Running", "Completed", "Completing", "Failed", "Terminated", "Terminating", "Aborted", "Aborting", "Restarting", "Odd"}
	rapid.Check(t, func(t *rapid.T) {
		w := dag.Workflow{Name: "jf", Namespace: "ns", UID: "u"}
		for range rapid.IntRange(0, 5).Draw(t, "flows") {
			f := dag.Flow{Name: rapid.SampledFrom(pool).Draw(t, "name")}
			if rapid.Bool().Draw(t, "deps") {
				f.DependsOn = &dag.DependsOn{Targets: rapid.SliceOfN(rapid.SampledFrom(append(pool, "zz")), 0, 3).Draw(t, "targets")}
			}
			w.Spec.Flows = append(w.Spec.Flows, f)
		}
		if rapid.Bool().Draw(t, "delete") {
			w.Spec.JobRetainPolicy = dag.RetainPolicyDelete
		}
		w.Status.State.Phase = rapid.SampledFrom([]dag.Phase{"", "Pending", "Running", "Succeed", "Failed", "Terminating"}).Draw(t, "phase")
		now := t0.Add(time.Hour)
		for _, n := range rapid.SliceOfNDistinct(rapid.SampledFrom(append(pool, "old")), 0, 4, func(s string) string { return s }).Draw(t, "prevEntries") {
			e := dag.JobStatus{Name: "jf-" + n, State: rapid.SampledFrom(phases).Draw(t, "pstate")}
			switch rapid.IntRange(0, 2).Draw(t, "hist") {
			case 1:
				e.RunningHistories = []dag.RunningHistory{}
			case 2:
				e.RunningHistories = []dag.RunningHistory{{StartTimestamp: metav1.NewTime(t0), State: rapid.SampledFrom(phases).Draw(t, "hstate")}}
			}
			w.Status.JobStatusList = append(w.Status.JobStatusList, e)
		}
		var jobs []dag.Job
		for k, n := range rapid.SliceOfNDistinct(rapid.SampledFrom(append(pool, "old", "zz")), 0, 6, func(s string) string { return s }).Draw(t, "jobs") {
			j := dag.Job{Name: "jf-" + n, UID: types.UID(fmt.Sprint(k)), Phase: rapid.SampledFrom(phases).Draw(t, "jphase"), CreationTime: t0.Add(time.Duration(k) * time.Minute),
				RetryCount: rapid.Int32Range(0, 3).Draw(t, "retry")}
			switch rapid.IntRange(0, 3).Draw(t, "label") {
			case 0:
				j.Labels = map[string]string{dag.LabelCreatedByJobFlow: "ns.other"}
			case 1:
			default:
				j.Labels = map[string]string{dag.LabelCreatedByJobFlow: "ns.jf"}
			}
			if rapid.Bool().Draw(t, "ran") {
				d := time.Duration(rapid.IntRange(0, 600).Draw(t, "secs")) * time.Second
				j.RunningDuration = &d
			}
			jobs = append(jobs, j)
		}
		s := dag.Snapshot{Flow: w, Jobs: jobs, Now: now}
		want := volcanoModel(deepCopySnapshot(s))
		res, err := dag.Decide(s, dag.VolcanoCompat())
		if err != nil {
			t.Fatal(err)
		}
		got := modelResult{Write: res.WriteStatus, Status: res.Status}
		for _, c := range res.Create {
			got.Create = append(got.Create, c.Name)
		}
		for _, d := range res.Delete {
			got.Delete = append(got.Delete, d.Name)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("VolcanoCompat differs from the model (-model +plan):\n%s", diff)
		}
	})
}
