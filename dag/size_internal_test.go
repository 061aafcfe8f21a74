package dag

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"
)

// TestStatusLenMatchesJSON checks the accumulated size against
// encoding/json on random statuses, odd strings and times included.
func TestStatusLenMatchesJSON(t *testing.T) {
	str := rapid.OneOf(rapid.StringMatching(`[a-z0-9.-]{0,12}`), rapid.String(), rapid.SampledFrom([]string{"", "<&>", "\u2028", "\xff", "a\"b\\c\n\t\x01"}))
	tm := rapid.Custom(func(t *rapid.T) metav1.Time {
		switch rapid.IntRange(0, 3).Draw(t, "tk") {
		case 0:
			return metav1.Time{}
		case 1:
			return metav1.NewTime(time.Date(rapid.IntRange(10000, 12000).Draw(t, "y"), 1, 1, 0, 0, 0, 0, time.UTC))
		}
		return metav1.NewTime(time.Unix(rapid.Int64Range(-1e10, 1e11).Draw(t, "s"), rapid.Int64Range(0, 1e9-1).Draw(t, "ns")).In(time.FixedZone("x", 3600)))
	})
	strs := rapid.SliceOfN(str, 0, 3)
	rapid.Check(t, func(t *rapid.T) {
		var s Status
		s.State = State{Phase: Phase(str.Draw(t, "phase")), Reason: str.Draw(t, "reason")}
		s.PendingJobs, s.RunningJobs, s.FailedJobs = strs.Draw(t, "l1"), strs.Draw(t, "l2"), strs.Draw(t, "l3")
		s.CompletedJobs, s.TerminatedJobs, s.UnknownJobs = strs.Draw(t, "l4"), strs.Draw(t, "l5"), strs.Draw(t, "l6")
		s.CompletingJobs, s.TerminatingJobs, s.AbortedJobs, s.OrphanJobs = strs.Draw(t, "l7"), strs.Draw(t, "l8"), strs.Draw(t, "l9"), strs.Draw(t, "l10")
		for range rapid.IntRange(0, 3).Draw(t, "entries") {
			e := JobStatus{Name: str.Draw(t, "name"), State: JobPhase(str.Draw(t, "state")), StartTimestamp: tm.Draw(t, "st"),
				EndTimestamp: tm.Draw(t, "et"), RestartCount: rapid.Int32().Draw(t, "rc"), Flow: str.Draw(t, "flow"),
				Outcome: Outcome(str.Draw(t, "oc")), Attempt: rapid.IntRange(-3, 1000).Draw(t, "att"), Retrying: rapid.Bool().Draw(t, "r"),
				Started: rapid.Bool().Draw(t, "s"), DroppedHistories: rapid.IntRange(0, 100).Draw(t, "d")}
			if rapid.Bool().Draw(t, "nra") {
				x := tm.Draw(t, "nr")
				e.NextRetryAt = &x
			}
			for range rapid.IntRange(0, 3).Draw(t, "h") {
				e.RunningHistories = append(e.RunningHistories, RunningHistory{StartTimestamp: tm.Draw(t, "hs"), EndTimestamp: tm.Draw(t, "he"), State: JobPhase(str.Draw(t, "hst"))})
			}
			s.JobStatusList = append(s.JobStatusList, e)
		}
		if rapid.Bool().Draw(t, "conds") {
			s.Conditions = map[string]Condition{}
			for range rapid.IntRange(0, 3).Draw(t, "nc") {
				c := Condition{Phase: JobPhase(str.Draw(t, "cp")), CreateTimestamp: tm.Draw(t, "ct")}
				if rapid.Bool().Draw(t, "rd") {
					c.RunningDuration = &metav1.Duration{Duration: time.Duration(rapid.Int64().Draw(t, "dur"))}
				}
				if rapid.Bool().Draw(t, "tsc") {
					// Pod phases take taskStateLen's fast path; any other
					// key its fallback.
					phase := rapid.OneOf(rapid.SampledFrom([]string{"Running", "Succeeded", "Pending", "Failed", "Unknown"}), str)
					c.TaskStatusCount = map[string]TaskState{}
					for range rapid.IntRange(0, 2).Draw(t, "tasks") {
						ts := TaskState{}
						if n := rapid.IntRange(-1, 3).Draw(t, "np"); n >= 0 {
							ts.Phase = map[string]int32{}
							for range n {
								ts.Phase[phase.Draw(t, "pp")] = rapid.Int32().Draw(t, "pc")
							}
						}
						c.TaskStatusCount[str.Draw(t, "task")] = ts
					}
				}
				s.Conditions[str.Draw(t, "ck")] = c
			}
		}
		for range rapid.IntRange(0, 2).Draw(t, "wf") {
			s.WaitingFlows = append(s.WaitingFlows, WaitingFlow{Flow: str.Draw(t, "wfl"), Reasons: strs.Draw(t, "wr")})
		}
		s.SpecHash = str.Draw(t, "hash")
		if rapid.Bool().Draw(t, "sc") {
			s.SpecChange = &SpecChange{Old: str.Draw(t, "o"), New: str.Draw(t, "n")}
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := statusLen(&s); got != len(b) {
			t.Fatalf("statusLen = %d, json is %d bytes: %s", got, len(b), b)
		}
	})
}

// TestDurationLen checks durationLen against Duration.String on every unit
// boundary, the extremes and random durations of every magnitude.
func TestDurationLen(t *testing.T) {
	for _, d := range []time.Duration{0, 1, -1, 999, 1000, 1001, 999999, 1e6, 1e6 + 1, 1e9 - 1, 1e9, 1e9 + 1, 59 * time.Second,
		time.Minute, time.Hour - 1, time.Hour, 100*time.Hour + 1, 1<<63 - 1, -1 << 63, 1500 * time.Microsecond, 1200 * time.Nanosecond} {
		if got, want := durationLen(d), len(d.String()); got != want {
			t.Errorf("durationLen(%d) = %d, want %d (%s)", int64(d), got, want, d)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		exp := rapid.IntRange(0, 18).Draw(t, "exp")
		lim := int64(1)
		for range exp {
			lim *= 10
		}
		d := time.Duration(rapid.Int64Range(-lim, lim).Draw(t, "d"))
		if got, want := durationLen(d), len(d.String()); got != want {
			t.Fatalf("durationLen(%d) = %d, want %d (%s)", int64(d), got, want, d)
		}
	})
}

// statusOf5k is a status of 5,000 jobs, each with a condition, an entry
// and two running histories.
func statusOf5k() *Status {
	t0 := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	d := metav1.Duration{Duration: 42 * time.Second}
	s := &Status{State: State{Phase: PhaseRunning}, Conditions: map[string]Condition{}}
	for i := range 5000 {
		name := fmt.Sprintf("jf-flow-%04d", i)
		s.RunningJobs = append(s.RunningJobs, name)
		s.Conditions[name] = Condition{Phase: JobPhaseRunning, CreateTimestamp: t0, RunningDuration: &d,
			TaskStatusCount: map[string]TaskState{"worker": {Phase: map[string]int32{"Running": 2}}}}
		s.JobStatusList = append(s.JobStatusList, JobStatus{Name: name, State: JobPhaseRunning, StartTimestamp: t0, Flow: name[3:], Attempt: 1,
			RunningHistories: []RunningHistory{{StartTimestamp: t0, EndTimestamp: t0, State: JobPhasePending}, {StartTimestamp: t0, State: JobPhaseRunning}}})
	}
	return s
}

// BenchmarkStatusBytes compares the arithmetic size with encoding the
// status, the reason size.go exists.
func BenchmarkStatusBytes(b *testing.B) {
	s := statusOf5k()
	if want, _ := json.Marshal(s); statusLen(s) != len(want) {
		b.Fatalf("statusLen %d, json %d", statusLen(s), len(want))
	}
	b.Run("arithmetic", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = statusLen(s)
		}
	})
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			raw, _ := json.Marshal(s)
			_ = len(raw)
		}
	})
}
