package dag

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"pgregory.net/rapid"
)

// TestPropHistoryEntriesIsWhatHistoriesTakes: the count observeFlows
// reserves for a job's history is exactly what histories takes from the
// arena, for every kind of previous history, phase, attempt and limit, so
// one block serves a plan and none is left over. Breaking it: count the
// shared history of an unchanged phase, or forget the limit's copy.
func TestPropHistoryEntriesIsWhatHistoriesTakes(t *testing.T) {
	phases := rapid.SampledFrom([]JobPhase{JobPhaseNone, JobPhasePending, JobPhaseRunning, JobPhaseCompleted, JobPhaseFailed})
	rapid.Check(t, func(t *rapid.T) {
		var prev *JobStatus
		if rapid.Bool().Draw(t, "hasPrev") {
			prev = &JobStatus{RetiredUID: rapid.SampledFrom([]types.UID{"", "u1", "u2"}).Draw(t, "retired")}
			switch n := rapid.IntRange(-1, 5).Draw(t, "histories"); n {
			case -1: // nil
			default:
				prev.RunningHistories = make([]RunningHistory, n)
				for i := range prev.RunningHistories {
					prev.RunningHistories[i].State = phases.Draw(t, "state")
				}
			}
		}
		j := &Job{UID: "u1", Phase: phases.Draw(t, "phase")}
		quirk := rapid.Bool().Draw(t, "quirk")
		limit := rapid.IntRange(0, 4).Draw(t, "limit")

		want := historyEntries(prev, j.Phase, quirk, isNewAttempt(j, prev), limit)
		var a arena
		a.reserve(arenaNeed{hist: want})
		histories(&a, prev, j.Phase, metav1.NewTime(time.Unix(1, 0)), quirk, isNewAttempt(j, prev), limit)
		if len(a.hist) != 0 || a.histNext != 0 {
			t.Fatalf("reserved %d entries; %d left over, next block %d", want, len(a.hist), a.histNext)
		}
	})
}
