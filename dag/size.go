package dag

// The status size is computed by arithmetic, not by encoding the status:
// Plan.StatusBytes is exactly len(json.Marshal(Plan.Status)), computed
// once the status is built. Encoding the status instead takes
// BenchmarkPlan10k from about 22 ms to 78 ms and BenchmarkStatus5k from
// about 4.5 ms to 28 ms; on one status of 5,000 jobs, BenchmarkStatusBytes
// (beside this file) measures 2.0 ms and no allocation against 20 ms and
// 85,000 allocations. TestStatusLenMatchesJSON holds the arithmetic equal
// to encoding/json.

import (
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// jsonByteLen is how many bytes encoding/json writes for each ASCII byte;
// 0 marks the bytes ≥ 0x80 that start a multi-byte sequence. It is a
// read-only table: one load per byte keeps the size of 10,000 entries
// cheap.
var jsonByteLen = func() (t [256]uint8) {
	for c := range utf8.RuneSelf {
		switch {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f':
			t[c] = 2
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			t[c] = 6
		default:
			t[c] = 1
		}
	}
	return t
}()

// jsonStrLen is the length of s as encoding/json writes it, quotes included
// (HTML-safe escaping, invalid UTF-8 replaced by \ufffd).
func jsonStrLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		if w := jsonByteLen[s[i]]; w != 0 {
			n += int(w)
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

// durationLen is len(d.String()) without building the string: the
// digits of each unit, the fraction without trailing zeros, and the unit
// letters ("µs" is three bytes).
func durationLen(d time.Duration) int {
	if d == 0 {
		return 2 // 0s
	}
	n := 0
	u := uint64(d)
	if d < 0 {
		n, u = 1, -u
	}
	switch {
	case u < uint64(time.Microsecond):
		return n + uintLen(u) + 2
	case u < uint64(time.Millisecond):
		return n + fracLen(u, 3) + uintLen(u/1e3) + 3
	case u < uint64(time.Second):
		return n + fracLen(u, 6) + uintLen(u/1e6) + 2
	}
	n += fracLen(u, 9) + 1
	u /= 1e9
	n += uintLen(u % 60)
	if u /= 60; u > 0 {
		n += 1 + uintLen(u%60)
		if u /= 60; u > 0 {
			n += 1 + uintLen(u)
		}
	}
	return n
}

// fracLen is the length of the fraction Duration.String prints for the
// prec lowest decimal digits of v: a dot and the digits up to the last
// non-zero one, or nothing.
func fracLen(v uint64, prec int) int {
	for k := prec; k > 0; k-- {
		if v%10 != 0 {
			return 1 + k
		}
		v /= 10
	}
	return 0
}

func uintLen(v uint64) int {
	n := 1
	for v >= 10 {
		n++
		v /= 10
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

func entryLen(e *JobStatus) int { return entryLenNamed(e, jsonStrLen(e.Name), jsonStrLen(e.Flow), -1) }

// historiesLen is the JSON length of the runningHistories field of an
// entry, with its key and leading comma; 0 when the field is omitted.
func historiesLen(h []RunningHistory) int {
	if len(h) == 0 {
		return 0
	}
	n := len(`,"runningHistories":[]`) + len(h) - 1
	for i := range h {
		n += historyLen(&h[i])
	}
	return n
}

// entryLenNamed is entryLen with the JSON lengths of e.Name and e.Flow
// given, and histLen, the historiesLen of e.RunningHistories, or -1 to
// compute it.
func entryLenNamed(e *JobStatus, nameLen, flowLen, histLen int) int {
	// startTimestamp and endTimestamp are always written, so every other
	// field present adds its key, its value and one comma.
	n := len(`{"startTimestamp":,"endTimestamp":}`) + timeLen(e.StartTimestamp) + timeLen(e.EndTimestamp)
	if e.Name != "" {
		n += len(`,"name":`) + nameLen
	}
	if e.State != "" {
		n += len(`,"state":`) + jsonStrLen(string(e.State))
	}
	if e.RestartCount != 0 {
		n += len(`,"restartCount":`) + intLen(int64(e.RestartCount))
	}
	if histLen < 0 {
		histLen = historiesLen(e.RunningHistories)
	}
	n += histLen
	if e.Flow != "" {
		n += len(`,"flow":`) + flowLen
	}
	if e.Outcome != "" {
		n += len(`,"outcome":`) + jsonStrLen(string(e.Outcome))
	}
	if e.Attempt != 0 {
		n += len(`,"attempt":`) + intLen(int64(e.Attempt))
	}
	if e.NextRetryAt != nil {
		n += len(`,"nextRetryAt":`) + timeLen(*e.NextRetryAt)
	}
	if e.Retrying {
		n += len(`,"retrying":true`)
	}
	if e.Started {
		n += len(`,"started":true`)
	}
	if e.RetiredUID != "" {
		n += len(`,"retiredUID":`) + jsonStrLen(string(e.RetiredUID))
	}
	if e.DroppedHistories != 0 {
		n += len(`,"droppedHistories":`) + intLen(int64(e.DroppedHistories))
	}
	return n
}

// podPhases are the keys a TaskState's Phase map holds in practice
// (Kubernetes pod phases, the most frequent first). Looking them up is
// several times cheaper than iterating a small map, and conditions hold one
// such map per task of every job.
var podPhases = [...]string{"Running", "Succeeded", "Pending", "Failed", "Unknown"}

func taskStateLen(t TaskState) int {
	if len(t.Phase) == 0 {
		return len(`{}`)
	}
	n := len(`{"phase":{}}`) + len(t.Phase) - 1
	seen := 0
	for _, k := range podPhases {
		if v, ok := t.Phase[k]; ok {
			n += len(k) + len(`"":`) + intLen(int64(v))
			if seen++; seen == len(t.Phase) {
				return n // every key was a pod phase
			}
		}
	}
	n = len(`{"phase":{}}`) + len(t.Phase) - 1
	for k, v := range t.Phase {
		n += jsonStrLen(k) + 1 + intLen(int64(v))
	}
	return n
}

func conditionLen(c *Condition) int {
	var d *time.Duration
	if c.RunningDuration != nil {
		d = &c.RunningDuration.Duration
	}
	return conditionLenOf(c.Phase, c.CreateTimestamp, d, c.TaskStatusCount)
}

func conditionLenOf(phase JobPhase, created metav1.Time, running *time.Duration, tasks map[string]TaskState) int {
	var z sizer
	z.str("phase", string(phase), true)
	z.obj("createTime", timeLen(created))
	if running != nil {
		// The string is ASCII but for µ, which JSON leaves unescaped.
		z.obj("runningDuration", 2+durationLen(*running))
	}
	if len(tasks) > 0 {
		n := 2 + len(tasks) - 1
		for k, v := range tasks {
			n += jsonStrLen(k) + 1 + taskStateLen(v)
		}
		z.obj("taskStatusCount", n)
	}
	return z.done()
}

// statusLen returns len(json.Marshal(s)) without encoding it.
func statusLen(s *Status) int {
	var z sizer
	{
		var st sizer
		st.str("phase", string(s.State.Phase), true)
		st.str("reason", s.State.Reason, true)
		z.obj("state", st.done())
	}
	for _, l := range [...]struct {
		key   string
		names []string
	}{{"pendingJobs", s.PendingJobs}, {"runningJobs", s.RunningJobs},
		{"failedJobs", s.FailedJobs}, {"completedJobs", s.CompletedJobs},
		{"terminatedJobs", s.TerminatedJobs}, {"unKnowJobs", s.UnknownJobs},
		{"completingJobs", s.CompletingJobs}, {"terminatingJobs", s.TerminatingJobs},
		{"abortedJobs", s.AbortedJobs}} {
		z.strs(l.key, l.names)
	}
	z.strs("orphanJobs", s.OrphanJobs)
	if len(s.JobStatusList) > 0 {
		n := 2 + len(s.JobStatusList) - 1
		for i := range s.JobStatusList {
			n += entryLen(&s.JobStatusList[i])
		}
		z.obj("jobStatusList", n)
	}
	if len(s.Conditions) > 0 {
		n := 2 + len(s.Conditions) - 1
		for k, c := range s.Conditions {
			n += jsonStrLen(k) + 1 + conditionLen(&c)
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
