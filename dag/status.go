package dag

import (
	"strconv"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// histories computes a job's running histories from its previous entry
// (§1.4). The previous slice is never written: a changed history is a new
// slice. With quirk (Volcano), a non-nil empty previous history stays empty
// forever; otherwise nil and empty are alike (D8). limit k > 0 keeps the
// first entry and the last k−1 (k = 1 behaves as 2, so the open entry is
// never dropped), returning how many entries were dropped. newAttempt marks
// the first observation of a retried job under the same name: its interval
// starts now even if the phase repeats the previous attempt's.
func histories(prev *JobStatus, phase JobPhase, now metav1.Time, quirk, newAttempt bool, limit int) ([]RunningHistory, int) {
	var h []RunningHistory
	switch {
	case prev != nil && len(prev.RunningHistories) > 0:
		old := prev.RunningHistories
		if old[len(old)-1].State == phase && !newAttempt {
			h = old // unchanged: shared, read-only
		} else {
			h = make([]RunningHistory, len(old)+1)
			copy(h, old)
			h[len(old)-1].EndTimestamp = now
			h[len(old)] = RunningHistory{StartTimestamp: now, State: phase}
		}
	case quirk && prev != nil && prev.RunningHistories != nil:
		h = []RunningHistory{}
	case phase == JobPhaseNone:
		h = nil
	default:
		h = []RunningHistory{{StartTimestamp: now, State: phase}}
	}
	if limit == 1 {
		limit = 2
	}
	if limit > 0 && len(h) > limit {
		dropped := len(h) - limit
		out := make([]RunningHistory, 0, limit)
		out = append(out, h[0])
		out = append(out, h[len(h)-(limit-1):]...)
		return out, dropped
	}
	return h, 0
}

// jobEntry writes a job's status entry, built from the observation, into
// *e, which must be zero (§1.4).
func jobEntry(e *JobStatus, j *Job, prev *JobStatus, now metav1.Time, opt Options) {
	e.Name, e.State, e.RestartCount = j.Name, j.Phase, j.RetryCount
	if !j.CreationTime.IsZero() {
		e.StartTimestamp.Time = j.CreationTime
	}
	if j.RunningDuration != nil {
		e.EndTimestamp.Time = j.CreationTime.Add(*j.RunningDuration)
	}
	var dropped int
	newAttempt := prev != nil && prev.RetiredUID != "" && j.UID != prev.RetiredUID
	e.RunningHistories, dropped = histories(prev, j.Phase, now, opt.HistoryQuirk, newAttempt, opt.HistoryLimit)
	if prev != nil {
		e.DroppedHistories = prev.DroppedHistories
	}
	e.DroppedHistories += dropped
}

func condition(j *Job) Condition {
	c := Condition{Phase: j.Phase, TaskStatusCount: j.TaskStatusCount}
	if !j.CreationTime.IsZero() {
		c.CreateTimestamp = metav1.NewTime(j.CreationTime)
	}
	if j.RunningDuration != nil {
		c.RunningDuration = &metav1.Duration{Duration: *j.RunningDuration}
	}
	return c
}

// lists collects job names per status list.
type lists struct {
	pending, running, completing, completed, failed, terminating, terminated, aborted, unknown []string
}

// add buckets one job; it reports false for an unknown phase string.
func (l *lists) add(name string, p JobPhase, volcano bool) bool {
	if volcano {
		switch p {
		case JobPhasePending:
			l.pending = append(l.pending, name)
		case JobPhaseRunning:
			l.running = append(l.running, name)
		case JobPhaseCompleted:
			l.completed = append(l.completed, name)
		case JobPhaseFailed:
			l.failed = append(l.failed, name)
		case JobPhaseTerminated:
			l.terminated = append(l.terminated, name)
		case JobPhaseCompleting, JobPhaseTerminating:
			// Volcano has no list for them (§1.3).
		default:
			l.unknown = append(l.unknown, name)
			return knownPhase(p)
		}
		return true
	}
	switch p {
	case JobPhasePending, JobPhaseNone:
		l.pending = append(l.pending, name)
	case JobPhaseRunning, JobPhaseRestarting:
		l.running = append(l.running, name)
	case JobPhaseCompleting:
		l.completing = append(l.completing, name)
	case JobPhaseCompleted:
		l.completed = append(l.completed, name)
	case JobPhaseTerminating, JobPhaseAborting:
		l.terminating = append(l.terminating, name)
	case JobPhaseTerminated:
		l.terminated = append(l.terminated, name)
	case JobPhaseAborted:
		l.aborted = append(l.aborted, name)
	case JobPhaseFailed:
		l.failed = append(l.failed, name)
	default:
		l.unknown = append(l.unknown, name)
		return false
	}
	return true
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
	st.PendingJobs, st.RunningJobs, st.CompletedJobs = nonNil(l.pending), nonNil(l.running), nonNil(l.completed)
	st.FailedJobs, st.TerminatedJobs, st.UnknownJobs = nonNil(l.failed), nonNil(l.terminated), nonNil(l.unknown)
	st.CompletingJobs, st.TerminatingJobs, st.AbortedJobs = l.completing, l.terminating, l.aborted
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

// ---- size ----

// jsonStrLen is the length of s as encoding/json writes it, quotes included
// (HTML-safe escaping, invalid UTF-8 replaced by \ufffd).
func jsonStrLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f':
				n += 2
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}

func intLen(v int64) int {
	if v == 0 {
		return 1
	}
	n := 0
	if v < 0 {
		n++
	}
	for v != 0 {
		n++
		v /= 10
	}
	return n
}

// timeLen is the JSON length of a metav1.Time.
func timeLen(t metav1.Time) int {
	if t.IsZero() {
		return 4 // null
	}
	// Years 0000 to 9999 print in 20 characters: "2006-01-02T15:04:05Z".
	if u := t.Unix(); u >= -62167219200 && u <= 253402300799 {
		return 22
	}
	return 2 + len(t.UTC().Format(time.RFC3339))
}

// sizer accumulates the JSON length of an object's fields.
type sizer struct {
	n      int
	fields int
}

func (z *sizer) key(k string) {
	if z.fields > 0 {
		z.n++ // comma
	}
	z.fields++
	z.n += len(k) + 3 // "k":
}

func (z *sizer) str(k, v string, omitEmpty bool) {
	if omitEmpty && v == "" {
		return
	}
	z.key(k)
	z.n += jsonStrLen(v)
}

func (z *sizer) strs(k string, v []string) {
	if len(v) == 0 {
		return
	}
	z.key(k)
	z.n += 2 + len(v) - 1
	for _, s := range v {
		z.n += jsonStrLen(s)
	}
}

func (z *sizer) int(k string, v int64) {
	if v == 0 {
		return
	}
	z.key(k)
	z.n += intLen(v)
}

func (z *sizer) obj(k string, n int) {
	z.key(k)
	z.n += n
}

func (z *sizer) done() int { return z.n + 2 }

// historyLen is the JSON length of {"startTimestamp":…,"endTimestamp":…,"state":…}.
func historyLen(h *RunningHistory) int {
	n := len(`{"startTimestamp":,"endTimestamp":}`) + timeLen(h.StartTimestamp) + timeLen(h.EndTimestamp)
	if h.State != "" {
		n += len(`,"state":`) + jsonStrLen(string(h.State))
	}
	return n
}

func entryLen(e *JobStatus) int {
	var z sizer
	z.str("name", e.Name, true)
	z.str("state", string(e.State), true)
	z.obj("startTimestamp", timeLen(e.StartTimestamp))
	z.obj("endTimestamp", timeLen(e.EndTimestamp))
	z.int("restartCount", int64(e.RestartCount))
	if len(e.RunningHistories) > 0 {
		n := 2 + len(e.RunningHistories) - 1
		for i := range e.RunningHistories {
			n += historyLen(&e.RunningHistories[i])
		}
		z.obj("runningHistories", n)
	}
	z.str("flow", e.Flow, true)
	z.str("outcome", string(e.Outcome), true)
	z.int("attempt", int64(e.Attempt))
	if e.NextRetryAt != nil {
		z.obj("nextRetryAt", timeLen(*e.NextRetryAt))
	}
	if e.Retrying {
		z.obj("retrying", 4)
	}
	if e.Started {
		z.obj("started", 4)
	}
	z.str("retiredUID", string(e.RetiredUID), true)
	z.int("droppedHistories", int64(e.DroppedHistories))
	return z.done()
}

func taskStateLen(t TaskState) int {
	var z sizer
	if len(t.Phase) > 0 {
		n := 2 + len(t.Phase) - 1
		for k, v := range t.Phase {
			n += jsonStrLen(k) + 1 + intLen(int64(v))
		}
		z.obj("phase", n)
	}
	return z.done()
}

func conditionLen(c *Condition) int {
	var z sizer
	z.str("phase", string(c.Phase), true)
	z.obj("createTime", timeLen(c.CreateTimestamp))
	if c.RunningDuration != nil {
		z.obj("runningDuration", jsonStrLen(c.RunningDuration.Duration.String()))
	}
	if len(c.TaskStatusCount) > 0 {
		n := 2 + len(c.TaskStatusCount) - 1
		for k, v := range c.TaskStatusCount {
			n += jsonStrLen(k) + 1 + taskStateLen(v)
		}
		z.obj("taskStatusCount", n)
	}
	return z.done()
}

// sizes are the JSON lengths of the job status list's entries and of the
// conditions' values (keys included), accumulated while building them.
type sizes struct{ conditions, entries int }

// statusLen returns len(json.Marshal(s)) without encoding it.
func statusLen(s *Status) int { return statusLenSized(s, nil) }

// statusLenSized is statusLen with the list and condition sizes already
// known (nil: compute them).
func statusLenSized(s *Status, known *sizes) int {
	var z sizer
	{
		var st sizer
		st.str("phase", string(s.State.Phase), true)
		st.str("reason", s.State.Reason, true)
		z.obj("state", st.done())
	}
	z.strs("pendingJobs", s.PendingJobs)
	z.strs("runningJobs", s.RunningJobs)
	z.strs("failedJobs", s.FailedJobs)
	z.strs("completedJobs", s.CompletedJobs)
	z.strs("terminatedJobs", s.TerminatedJobs)
	z.strs("unKnowJobs", s.UnknownJobs)
	z.strs("completingJobs", s.CompletingJobs)
	z.strs("terminatingJobs", s.TerminatingJobs)
	z.strs("abortedJobs", s.AbortedJobs)
	z.strs("orphanJobs", s.OrphanJobs)
	if len(s.JobStatusList) > 0 {
		n := 2 + len(s.JobStatusList) - 1
		if known != nil {
			n += known.entries
		} else {
			for i := range s.JobStatusList {
				n += entryLen(&s.JobStatusList[i])
			}
		}
		z.obj("jobStatusList", n)
	}
	if len(s.Conditions) > 0 {
		n := 2 + len(s.Conditions) - 1
		if known != nil {
			n += known.conditions
		} else {
			for k, c := range s.Conditions {
				n += jsonStrLen(k) + 1 + conditionLen(&c)
			}
		}
		z.obj("conditions", n)
	}
	if len(s.WaitingFlows) > 0 {
		n := 2 + len(s.WaitingFlows) - 1
		for _, w := range s.WaitingFlows {
			var wz sizer
			wz.str("flow", w.Flow, false)
			wz.strs("reasons", w.Reasons)
			n += wz.done()
		}
		z.obj("waitingFlows", n)
	}
	z.str("specHash", s.SpecHash, true)
	if s.SpecChange != nil {
		var sc sizer
		sc.str("old", s.SpecChange.Old, false)
		sc.str("new", s.SpecChange.New, false)
		z.obj("specChange", sc.done())
	}
	return z.done()
}

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

var _ = strconv.Itoa
