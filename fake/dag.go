package fake

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/plancore/plancore/dag"
)

// Call kinds of the DAG job runner.
const (
	KindDAGCreate = "dag.create"
	KindDAGDelete = "dag.delete"
	KindDAGStatus = "dag.status"
)

// DAGRunner is an in-memory job controller for package dag: it implements
// dag.Executor (every call goes through World.Do, so faults, latency and
// recording apply), keeps the jobs and the written statuses, advances jobs
// through their phases to a seeded or scripted end, and serves snapshots,
// optionally lagging one step behind like an informer cache.
type DAGRunner struct {
	w  *World
	mu sync.Mutex
	// jobs by "namespace/name".
	jobs     map[string]*runJob
	statuses map[string]dag.Status
	uids     int
	// view is the informer's copy, refreshed by Observe.
	view map[string][]dag.Job

	// Ends weighs the end phases drawn for jobs without a script, e.g.
	// {Completed: 8, Failed: 1, Terminated: 1}. Empty means always Completed.
	Ends map[dag.JobPhase]int
	// Script fixes the end phase of a job's successive attempts by job name;
	// attempts past the script's end draw from Ends.
	Script map[string][]dag.JobPhase
	// MaxRun bounds the running duration reported for finished jobs
	// (default one minute).
	MaxRun time.Duration
	// Lag is the probability that Snapshot returns the informer's previous
	// view instead of the current state.
	Lag float64
	// attempts counts creates per job name, for Script.
	attempts map[string]int
}

type runJob struct {
	job  dag.Job
	path []dag.JobPhase // remaining phases; the last is the end
	// annotations and owner are what CreateJob was given, kept for Objects.
	annotations map[string]string
	owner       metav1.OwnerReference
}

// NewDAGRunner returns a runner over w whose jobs always complete.
func NewDAGRunner(w *World) *DAGRunner {
	return &DAGRunner{w: w, jobs: map[string]*runJob{}, statuses: map[string]dag.Status{}, view: map[string][]dag.Job{},
		attempts: map[string]int{}, MaxRun: time.Minute}
}

var _ dag.Executor = (*DAGRunner)(nil)

// CreateJob creates the job in phase "" with its labels, unless a job of
// that name exists (dag.ErrAlreadyExists).
func (r *DAGRunner) CreateJob(_ context.Context, c dag.CreateJob) error {
	return r.w.Do(KindDAGCreate, c.Namespace+"/"+c.Name, func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		key := c.Namespace + "/" + c.Name
		if _, ok := r.jobs[key]; ok {
			return fmt.Errorf("job %s: %w", key, dag.ErrAlreadyExists)
		}
		r.uids++
		r.attempts[c.Name]++
		end := r.endFor(c.Name, r.attempts[c.Name])
		r.jobs[key] = &runJob{
			job: dag.Job{Name: c.Name, UID: types.UID(fmt.Sprintf("uid-%d", r.uids)), Labels: maps.Clone(c.Labels),
				Phase: dag.JobPhaseNone, CreationTime: r.w.Clock.Now()},
			path:        r.pathTo(end),
			annotations: maps.Clone(c.Annotations),
			owner:       *c.Owner.DeepCopy(),
		}
		return nil
	})
}

// endFor picks the end phase of a job's attempt: scripted, else drawn.
func (r *DAGRunner) endFor(name string, attempt int) dag.JobPhase {
	if s := r.Script[name]; attempt <= len(s) {
		return s[attempt-1]
	}
	if len(r.Ends) == 0 {
		return dag.JobPhaseCompleted
	}
	total := 0
	keys := slices.Sorted(maps.Keys(r.Ends))
	for _, k := range keys {
		total += r.Ends[k]
	}
	x := r.w.Faults.IntN(total)
	for _, k := range keys {
		if x < r.Ends[k] {
			return k
		}
		x -= r.Ends[k]
	}
	return dag.JobPhaseCompleted
}

// pathTo draws intermediate phases leading to end.
func (r *DAGRunner) pathTo(end dag.JobPhase) []dag.JobPhase {
	var p []dag.JobPhase
	if r.w.Faults.IntN(2) == 0 {
		p = append(p, dag.JobPhasePending)
	}
	p = append(p, dag.JobPhaseRunning)
	if r.w.Faults.IntN(4) == 0 {
		p = append(p, dag.JobPhaseRestarting, dag.JobPhaseRunning)
	}
	switch end {
	case dag.JobPhaseCompleted:
		if r.w.Faults.IntN(2) == 0 {
			p = append(p, dag.JobPhaseCompleting)
		}
	case dag.JobPhaseTerminated:
		p = append(p, dag.JobPhaseTerminating)
	case dag.JobPhaseAborted:
		p = append(p, dag.JobPhaseAborting)
	}
	return append(p, end)
}

// DeleteJob deletes the job; a missing job is dag.ErrNotFound, a UID
// precondition that does not match is an error.
func (r *DAGRunner) DeleteJob(_ context.Context, d dag.DeleteJob) error {
	key := d.Namespace + "/" + d.Name
	return r.w.Do(KindDAGDelete, key, func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		j, ok := r.jobs[key]
		if !ok {
			return fmt.Errorf("job %s: %w", key, dag.ErrNotFound)
		}
		if d.UID != "" && j.job.UID != d.UID {
			return fmt.Errorf("job %s: uid precondition %s does not match %s", key, d.UID, j.job.UID)
		}
		delete(r.jobs, key)
		return nil
	})
}

// UpdateStatus stores the workflow's status.
func (r *DAGRunner) UpdateStatus(_ context.Context, namespace, name string, st dag.Status) error {
	return r.w.Do(KindDAGStatus, namespace+"/"+name, func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.statuses[namespace+"/"+name] = st
		return nil
	})
}

// Status returns the last status written for the workflow.
func (r *DAGRunner) Status(namespace, name string) dag.Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.statuses[namespace+"/"+name]
}

// Step moves every job one phase along its path; a job reaching its end gets
// a seeded running duration and restart count.
func (r *DAGRunner) Step() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, key := range slices.Sorted(maps.Keys(r.jobs)) {
		r.advance(r.jobs[key], false)
	}
}

// Finish moves every job to the end of its path.
func (r *DAGRunner) Finish() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, key := range slices.Sorted(maps.Keys(r.jobs)) {
		r.advance(r.jobs[key], true)
	}
}

func (r *DAGRunner) advance(j *runJob, all bool) {
	for len(j.path) > 0 {
		j.job.Phase, j.path = j.path[0], j.path[1:]
		if len(j.path) == 0 {
			d := time.Duration(r.w.Faults.IntN(int(r.MaxRun/time.Second)+1)) * time.Second
			j.job.RunningDuration = &d
			j.job.RetryCount = int32(r.w.Faults.IntN(3))
		}
		if !all {
			return
		}
	}
}

// SetPhase forces a job's phase (and ends its path there), for scripted tests.
func (r *DAGRunner) SetPhase(namespace, name string, p dag.JobPhase) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	j, ok := r.jobs[namespace+"/"+name]
	if ok {
		j.job.Phase, j.path = p, nil
	}
	return ok
}

// SetTasks sets a job's task status counts (task → pod phase → pods), as a
// Volcano job controller reports them, for probe scenarios. Jobs
// report none until it is called.
func (r *DAGRunner) SetTasks(namespace, name string, counts map[string]map[string]int32) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	j, ok := r.jobs[namespace+"/"+name]
	if ok {
		j.job.TaskStatusCount = make(map[string]dag.TaskState, len(counts))
		for task, phases := range counts {
			j.job.TaskStatusCount[task] = dag.TaskState{Phase: maps.Clone(phases)}
		}
	}
	return ok
}

// Objects returns the stored jobs of a namespace as CheckDAGExecutor sees
// them, sorted by name: the labels, annotations and owner reference CreateJob
// was given. The fake deletes at once, so none is ever terminating.
func (r *DAGRunner) Objects(namespace string) []DAGJobObject {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []DAGJobObject
	for _, key := range slices.Sorted(maps.Keys(r.jobs)) {
		j := r.jobs[key]
		if j.namespace(key) != namespace {
			continue
		}
		o := DAGJobObject{Namespace: namespace, Name: j.job.Name, UID: j.job.UID,
			Labels: maps.Clone(j.job.Labels), Annotations: maps.Clone(j.annotations)}
		if j.owner.UID != "" || j.owner.Name != "" {
			o.Owners = []metav1.OwnerReference{*j.owner.DeepCopy()}
		}
		out = append(out, o)
	}
	return out
}

// namespace returns the namespace part of the job's key "namespace/name".
func (j *runJob) namespace(key string) string {
	return key[:len(key)-len(j.job.Name)-1]
}

// Jobs returns the current jobs of a namespace sorted by name, as deep copies.
func (r *DAGRunner) Jobs(namespace string) []dag.Job {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.current(namespace)
}

func (r *DAGRunner) current(namespace string) []dag.Job {
	var out []dag.Job
	for _, key := range slices.Sorted(maps.Keys(r.jobs)) {
		j := r.jobs[key]
		if j.namespace(key) != namespace {
			continue
		}
		c := j.job
		c.Labels = maps.Clone(j.job.Labels)
		if j.job.TaskStatusCount != nil {
			c.TaskStatusCount = make(map[string]dag.TaskState, len(j.job.TaskStatusCount))
			for task, ts := range j.job.TaskStatusCount {
				c.TaskStatusCount[task] = dag.TaskState{Phase: maps.Clone(ts.Phase)}
			}
		}
		if j.job.RunningDuration != nil {
			d := *j.job.RunningDuration
			c.RunningDuration = &d
		}
		out = append(out, c)
	}
	return out
}

// Snapshot builds the next snapshot of a workflow: its last written status,
// the jobs of its namespace in a seeded shuffled order (or, with probability
// Lag, the previous view), and the clock's time.
func (r *DAGRunner) Snapshot(wf dag.Workflow) dag.Snapshot {
	wf.Status = r.Status(wf.Namespace, wf.Name)
	r.mu.Lock()
	jobs := r.current(wf.Namespace)
	if prev, ok := r.view[wf.Namespace]; ok && r.Lag > 0 && r.w.Faults.Float64() < r.Lag {
		jobs = prev
	} else {
		r.view[wf.Namespace] = jobs
	}
	jobs = slices.Clone(jobs)
	for i := len(jobs) - 1; i > 0; i-- {
		k := r.w.Faults.IntN(i + 1)
		jobs[i], jobs[k] = jobs[k], jobs[i]
	}
	r.mu.Unlock()
	return dag.Snapshot{Flow: wf, Jobs: jobs, Now: r.w.Clock.Now()}
}
