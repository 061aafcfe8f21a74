// Package capacitytest provides rapid generators of valid inputs and options
// for package capacity, for property tests of schedulers built on it, in the
// way net/http/httptest serves tests of net/http code. plancore's own
// properties draw from them and check each plan with capacity.CheckPlan.
package capacitytest

import (
	"math"
	"time"

	"pgregory.net/rapid"

	"github.com/plancore/plancore/capacity"
)

// Now is the Now of every generated input; heartbeats are at most 90 s older.
var Now = time.Date(2026, 1, 7, 12, 0, 0, 0, time.UTC)

// Usage draws a usage percentage: mostly 0 to 100, sometimes exactly 90 (the
// default threshold), NaN or negative (unknown, which Decide fails closed on).
func Usage() *rapid.Generator[float64] {
	return rapid.Custom(func(t *rapid.T) float64 {
		switch rapid.IntRange(0, 9).Draw(t, "kind") {
		case 0:
			return math.NaN()
		case 1:
			return -1
		case 2:
			return 90
		default:
			return float64(rapid.IntRange(0, 100).Draw(t, "percent"))
		}
	})
}

// Nodes draws 0 to 12 node loads: ids from a small set (so some repeat), an
// empty id and one with a brace, limits from -1 (invalid) to 6 (0 means the
// default), counts, missing or stale heartbeats and usages.
func Nodes() *rapid.Generator[[]capacity.NodeLoad] {
	return rapid.Custom(func(t *rapid.T) []capacity.NodeLoad {
		out := make([]capacity.NodeLoad, rapid.IntRange(0, 12).Draw(t, "nodes"))
		for i := range out {
			id := rapid.SampledFrom([]string{"a", "b", "c", "d", "e", "f", "g", "h", "", "x{y"}).Draw(t, "id")
			hb := time.Time{}
			if rapid.Bool().Draw(t, "has heartbeat") {
				hb = Now.Add(-time.Duration(rapid.IntRange(0, 90).Draw(t, "age s")) * time.Second)
			}
			out[i] = capacity.NodeLoad{
				ID: id, Max: rapid.IntRange(-1, 6).Draw(t, "max"),
				Running: rapid.IntRange(0, 6).Draw(t, "running"), Pending: rapid.IntRange(0, 4).Draw(t, "pending"),
				AckedUncounted: rapid.IntRange(0, 3).Draw(t, "acked"), HeartbeatAt: hb,
				Usage: capacity.Usage{CPU: Usage().Draw(t, "cpu"), Memory: Usage().Draw(t, "mem"), GPU: Usage().Draw(t, "gpu"), HasGPU: rapid.Bool().Draw(t, "gpu?")},
			}
		}
		return out
	})
}

// Input draws an input of Nodes at Now, with or without a spread key.
func Input() *rapid.Generator[capacity.Input] {
	return rapid.Custom(func(t *rapid.T) capacity.Input {
		return capacity.Input{Nodes: Nodes().Draw(t, "nodes"), Now: Now,
			SpreadKey: rapid.SampledFrom([]string{"", "job-1", "job-2"}).Draw(t, "spread")}
	})
}

// Options draws either accounting (Sum, the seed's SeedMax) and either
// ranking, the other options at their defaults.
func Options() *rapid.Generator[capacity.Options] {
	return rapid.Custom(func(t *rapid.T) capacity.Options {
		return capacity.Options{
			Accounting: rapid.SampledFrom([]capacity.Accounting{capacity.Sum, capacity.SeedMax}).Draw(t, "accounting"),
			RankBy:     rapid.SampledFrom([]capacity.RankBy{capacity.RankUtilisation, capacity.RankJobs}).Draw(t, "rank"),
		}
	})
}
