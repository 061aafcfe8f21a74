package dag

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// histories computes a job's running histories from its previous entry.
// The previous slice is never written: a changed history is a new
// slice. With quirk (Volcano), a non-nil empty previous history stays empty
// forever; otherwise nil and empty are alike. limit k > 0 keeps the
// first entry and the last k−1 (k = 1 behaves as 2, so the open entry is
// never dropped), returning how many entries were dropped. newAttempt marks
// the first observation of a retried job under the same name: its interval
// starts now even if the phase repeats the previous attempt's.
// New slices come from a (nil: the heap).
func histories(a *arena, prev *JobStatus, phase JobPhase, now metav1.Time, quirk, newAttempt bool, limit int) ([]RunningHistory, int) {
	var h []RunningHistory
	switch historyStepOf(prev, phase, quirk, newAttempt) {
	case historyKeep:
		h = prev.RunningHistories // unchanged: shared, read-only
	case historyExtend:
		old := prev.RunningHistories
		h = a.histories(len(old) + 1)
		copy(h, old)
		h[len(old)-1].EndTimestamp = now
		h[len(old)] = RunningHistory{StartTimestamp: now, State: phase}
	case historyEmpty:
		h = []RunningHistory{}
	case historyStart:
		h = a.histories(1)
		h[0] = RunningHistory{StartTimestamp: now, State: phase}
	}
	if limit = historyLimit(limit); limit > 0 && len(h) > limit {
		dropped := len(h) - limit
		out := a.histories(limit)[:0]
		out = append(out, h[0])
		out = append(out, h[len(h)-(limit-1):]...)
		return out, dropped
	}
	return h, 0
}

// historyStep is what histories does with a job's previous history.
type historyStep int8

const (
	historyNone   historyStep = iota // no history: the job has no phase yet
	historyKeep                      // the phase goes on: the previous history, shared
	historyExtend                    // the phase changed: the previous history and a new interval
	historyEmpty                     // Volcano's quirk: an empty history stays empty
	historyStart                     // the first interval
)

func historyStepOf(prev *JobStatus, phase JobPhase, quirk, newAttempt bool) historyStep {
	switch {
	case prev != nil && len(prev.RunningHistories) > 0:
		if old := prev.RunningHistories; old[len(old)-1].State == phase && !newAttempt {
			return historyKeep
		}
		return historyExtend
	case quirk && prev != nil && prev.RunningHistories != nil:
		return historyEmpty
	case phase == JobPhaseNone:
		return historyNone
	}
	return historyStart
}

// historyLimit is the history limit in effect: 1 behaves as 2, so the open
// interval is never dropped.
func historyLimit(limit int) int {
	if limit == 1 {
		return 2
	}
	return limit
}

// historyEntries is how many entries histories takes from its arena.
func historyEntries(prev *JobStatus, phase JobPhase, quirk, newAttempt bool, limit int) int {
	length, taken := 0, 0
	switch historyStepOf(prev, phase, quirk, newAttempt) {
	case historyKeep:
		length = len(prev.RunningHistories)
	case historyExtend:
		length = len(prev.RunningHistories) + 1
		taken = length
	case historyStart:
		length, taken = 1, 1
	}
	if limit = historyLimit(limit); limit > 0 && length > limit {
		taken += limit
	}
	return taken
}

// arenaNeed counts the arena entries a plan's jobEntry and condition calls
// will take, so that one block of each serves the whole plan (reserve): a
// plan of 5,000 new histories took 20 doubling blocks.
type arenaNeed struct{ hist, durs int }

func (n *arenaNeed) add(j *Job, prev *JobStatus, opt Options) {
	n.hist += historyEntries(prev, j.Phase, opt.HistoryQuirk, isNewAttempt(j, prev), opt.HistoryLimit)
	if j.RunningDuration != nil {
		n.durs++
	}
}

// isNewAttempt reports whether j is a retried job observed for the first
// time under its flow's name: its interval starts now even if the phase
// repeats the previous attempt's.
func isNewAttempt(j *Job, prev *JobStatus) bool {
	return prev != nil && prev.RetiredUID != "" && j.UID != prev.RetiredUID
}

// arena hands out one plan's small status slices and values from a few
// blocks, so a plan of 10,000 jobs makes tens of allocations, not tens of
// thousands. Every slice it returns is capped at its length: an
// executor appending to one gets a fresh array and never writes into its
// neighbour. The nil arena allocates each value on its own.
type arena struct {
	hist     []RunningHistory
	durs     []metav1.Duration
	histNext int // size of the next history block; doubles up to arenaMax
	dursNext int
}

// arenaMin and arenaMax bound a block's entries: small plans waste little,
// large ones allocate one block per arenaMax entries.
const arenaMin, arenaMax = 16, 1024

func nextBlock(next *int, need int) int {
	*next = min(max(*next*2, arenaMin), arenaMax)
	return max(*next, need)
}

// histories returns a zeroed slice of n entries.
func (a *arena) histories(n int) []RunningHistory {
	if a == nil {
		return make([]RunningHistory, n)
	}
	if len(a.hist) < n {
		a.hist = make([]RunningHistory, nextBlock(&a.histNext, n))
	}
	h := a.hist[:n:n]
	a.hist = a.hist[n:]
	return h
}

// reserve makes the next blocks exactly as large as n needs, when the
// blocks in hand are smaller.
func (a *arena) reserve(n arenaNeed) {
	if len(a.hist) < n.hist {
		a.hist = make([]RunningHistory, n.hist)
	}
	if len(a.durs) < n.durs {
		a.durs = make([]metav1.Duration, n.durs)
	}
}

// duration returns a pointer to a copy of d.
func (a *arena) duration(d time.Duration) *metav1.Duration {
	if a == nil {
		return &metav1.Duration{Duration: d}
	}
	if len(a.durs) == 0 {
		a.durs = make([]metav1.Duration, nextBlock(&a.dursNext, 1))
	}
	p := &a.durs[0]
	a.durs = a.durs[1:]
	p.Duration = d
	return p
}

// jobEntry writes a job's status entry, built from the observation, into
// *e, which must be zero.
func jobEntry(a *arena, e *JobStatus, j *Job, prev *JobStatus, now metav1.Time, opt Options) {
	e.Name, e.State, e.RestartCount = j.Name, j.Phase, j.RetryCount
	if !j.CreationTime.IsZero() {
		e.StartTimestamp.Time = j.CreationTime
	}
	if j.RunningDuration != nil {
		e.EndTimestamp.Time = j.CreationTime.Add(*j.RunningDuration)
	}
	var dropped int
	e.RunningHistories, dropped = histories(a, prev, j.Phase, now, opt.HistoryQuirk, isNewAttempt(j, prev), opt.HistoryLimit)
	if prev != nil {
		e.DroppedHistories = prev.DroppedHistories
	}
	e.DroppedHistories += dropped
}

// condition is a job's conditions entry; its duration comes from a.
func condition(a *arena, j *Job) Condition {
	c := Condition{Phase: j.Phase, TaskStatusCount: j.TaskStatusCount}
	if !j.CreationTime.IsZero() {
		c.CreateTimestamp = metav1.NewTime(j.CreationTime)
	}
	if j.RunningDuration != nil {
		c.RunningDuration = a.duration(*j.RunningDuration)
	}
	return c
}

// bucketID names a status list.
type bucketID int8

const (
	bucketNone bucketID = iota - 1 // Volcano's Completing and Terminating: no list
	bucketPending
	bucketRunning
	bucketCompleting
	bucketCompleted
	bucketFailed
	bucketTerminating
	bucketTerminated
	bucketAborted
	bucketUnknown
	nBuckets
)

// bucket returns the list of a job phase and
// false for a phase string that is no Volcano job phase.
func bucket(p JobPhase, volcano bool) (bucketID, bool) {
	if volcano {
		switch p {
		case JobPhasePending:
			return bucketPending, true
		case JobPhaseRunning:
			return bucketRunning, true
		case JobPhaseCompleted:
			return bucketCompleted, true
		case JobPhaseFailed:
			return bucketFailed, true
		case JobPhaseTerminated:
			return bucketTerminated, true
		case JobPhaseCompleting, JobPhaseTerminating:
			return bucketNone, true // Volcano has no list for them.
		}
		return bucketUnknown, knownPhase(p)
	}
	switch p {
	case JobPhasePending, JobPhaseNone:
		return bucketPending, true
	case JobPhaseRunning, JobPhaseRestarting:
		return bucketRunning, true
	case JobPhaseCompleting:
		return bucketCompleting, true
	case JobPhaseCompleted:
		return bucketCompleted, true
	case JobPhaseTerminating, JobPhaseAborting:
		return bucketTerminating, true
	case JobPhaseTerminated:
		return bucketTerminated, true
	case JobPhaseAborted:
		return bucketAborted, true
	case JobPhaseFailed:
		return bucketFailed, true
	}
	return bucketUnknown, false
}

// lists collects job names per status list.
type lists [nBuckets][]string

// add buckets one job; it reports false for an unknown phase string.
func (l *lists) add(name string, p JobPhase, volcano bool) bool {
	b, known := bucket(p, volcano)
	if b != bucketNone {
		l[b] = append(l[b], name)
	}
	return known
}

func knownPhase(p JobPhase) bool {
	switch p {
	case JobPhaseNone, JobPhasePending, JobPhaseAborting, JobPhaseAborted, JobPhaseRunning, JobPhaseRestarting,
		JobPhaseCompleting, JobPhaseCompleted, JobPhaseTerminating, JobPhaseTerminated, JobPhaseFailed:
		return true
	}
	return false
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// fill stores the lists in st; Volcano's six lists are always non-nil.
func (l *lists) fill(st *Status) {
	st.PendingJobs, st.RunningJobs, st.CompletedJobs = nonNil(l[bucketPending]), nonNil(l[bucketRunning]), nonNil(l[bucketCompleted])
	st.FailedJobs, st.TerminatedJobs, st.UnknownJobs = nonNil(l[bucketFailed]), nonNil(l[bucketTerminated]), nonNil(l[bucketUnknown])
	st.CompletingJobs, st.TerminatingJobs, st.AbortedJobs = l[bucketCompleting], l[bucketTerminating], l[bucketAborted]
}

// active reports whether a job phase counts against parallelism.
func (o Options) active(p JobPhase) bool {
	switch p {
	case JobPhaseNone, JobPhasePending, JobPhaseRunning, JobPhaseRestarting, JobPhaseCompleting, JobPhaseTerminating, JobPhaseAborting:
		return true
	case JobPhaseAborted:
		return o.AbortedPolicy == AbortedWait
	}
	return false
}

// started reports whether a job phase is beyond ""/Pending.
func startedPhase(p JobPhase) bool { return p != JobPhaseNone && p != JobPhasePending }

// ---- equality ----

func strsEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func timePtrEqual(a, b *metav1.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Time.Equal(b.Time)
}

func entryEqual(a, b *JobStatus) bool {
	if a.Name != b.Name || a.State != b.State || !a.StartTimestamp.Time.Equal(b.StartTimestamp.Time) ||
		!a.EndTimestamp.Time.Equal(b.EndTimestamp.Time) || a.RestartCount != b.RestartCount || a.Flow != b.Flow ||
		a.Outcome != b.Outcome || a.Attempt != b.Attempt || !timePtrEqual(a.NextRetryAt, b.NextRetryAt) ||
		a.Retrying != b.Retrying || a.Started != b.Started || a.RetiredUID != b.RetiredUID ||
		a.DroppedHistories != b.DroppedHistories || len(a.RunningHistories) != len(b.RunningHistories) {
		return false
	}
	for i := range a.RunningHistories {
		x, y := &a.RunningHistories[i], &b.RunningHistories[i]
		if x.State != y.State || !x.StartTimestamp.Time.Equal(y.StartTimestamp.Time) || !x.EndTimestamp.Time.Equal(y.EndTimestamp.Time) {
			return false
		}
	}
	return true
}

func conditionEqual(a, b Condition) bool {
	if a.Phase != b.Phase || !a.CreateTimestamp.Time.Equal(b.CreateTimestamp.Time) || len(a.TaskStatusCount) != len(b.TaskStatusCount) {
		return false
	}
	if (a.RunningDuration == nil) != (b.RunningDuration == nil) || a.RunningDuration != nil && a.RunningDuration.Duration != b.RunningDuration.Duration {
		return false
	}
	for k, x := range a.TaskStatusCount {
		y, ok := b.TaskStatusCount[k]
		if !ok || len(x.Phase) != len(y.Phase) {
			return false
		}
		for p, n := range x.Phase {
			if m, ok := y.Phase[p]; !ok || m != n {
				return false
			}
		}
	}
	return true
}

// statusEqual compares two statuses field by field, nil and empty alike.
func statusEqual(a, b *Status) bool {
	if a.State != b.State || a.SpecHash != b.SpecHash || (a.SpecChange == nil) != (b.SpecChange == nil) ||
		a.SpecChange != nil && *a.SpecChange != *b.SpecChange {
		return false
	}
	for _, p := range [][2][]string{{a.PendingJobs, b.PendingJobs}, {a.RunningJobs, b.RunningJobs}, {a.FailedJobs, b.FailedJobs},
		{a.CompletedJobs, b.CompletedJobs}, {a.TerminatedJobs, b.TerminatedJobs}, {a.UnknownJobs, b.UnknownJobs},
		{a.CompletingJobs, b.CompletingJobs}, {a.TerminatingJobs, b.TerminatingJobs}, {a.AbortedJobs, b.AbortedJobs},
		{a.OrphanJobs, b.OrphanJobs}} {
		if !strsEqual(p[0], p[1]) {
			return false
		}
	}
	if len(a.JobStatusList) != len(b.JobStatusList) || len(a.Conditions) != len(b.Conditions) || len(a.WaitingFlows) != len(b.WaitingFlows) {
		return false
	}
	for i := range a.JobStatusList {
		if !entryEqual(&a.JobStatusList[i], &b.JobStatusList[i]) {
			return false
		}
	}
	for k, c := range a.Conditions {
		d, ok := b.Conditions[k]
		if !ok || !conditionEqual(c, d) {
			return false
		}
	}
	for i := range a.WaitingFlows {
		if a.WaitingFlows[i].Flow != b.WaitingFlows[i].Flow || !strsEqual(a.WaitingFlows[i].Reasons, b.WaitingFlows[i].Reasons) {
			return false
		}
	}
	return true
}
