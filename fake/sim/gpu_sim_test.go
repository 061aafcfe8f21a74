package sim_test

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/fake/sim"
	"github.com/plancore/plancore/gpu"
)

var tGPU = time.Date(2026, 6, 14, 10, 0, 0, 0, time.UTC)

// burstTarget is the burst's bound: 1.2 × 40 × 22 ms, within 20% of serving
// the 40 pods one after another for the device plugin's 22 ms hold.
const burstTarget = 1056 * time.Millisecond

func TestBurst40MeetsTarget(t *testing.T) {
	for _, queue := range []bool{false, true} {
		t.Run(fmt.Sprintf("queue=%v", queue), func(t *testing.T) {
			w := fake.NewWorld(1, tGPU)
			rep, err := sim.RunBurst(w, sim.BurstConfig{Queue: queue})
			if err != nil {
				t.Fatal(err)
			}
			checkBurst(t, rep, 40)
			if rep.Completion > burstTarget {
				t.Fatalf("40 pods took %v of simulated time, target ≤ %v", rep.Completion, burstTarget)
			}
			// Every hand-over is immediate: the serialized minimum exactly.
			if rep.Completion != 40*22*time.Millisecond {
				t.Errorf("completion %v, want the serialized 880ms with a latency-free store", rep.Completion)
			}
		})
	}
}

// TestBurst40WithStoreLatency adds 1 ms to every lock store call: the
// adds store latency to the serialized minimum, and the burst stays in target.
func TestBurst40WithStoreLatency(t *testing.T) {
	for _, queue := range []bool{false, true} {
		t.Run(fmt.Sprintf("queue=%v", queue), func(t *testing.T) {
			w := fake.NewWorld(2, tGPU)
			for _, k := range []string{fake.LockGet, fake.LockCAS, fake.LockCAD} {
				w.Faults.SetLatency(k, time.Millisecond)
			}
			rep, err := sim.RunBurst(w, sim.BurstConfig{Queue: queue})
			if err != nil {
				t.Fatal(err)
			}
			checkBurst(t, rep, 40)
			// Each pod needs at least a read and a CAS to lock and a read and a
			// delete to release: 4 ms of store time on top of its 22 ms.
			if floor := 40 * (22 + 4) * time.Millisecond; rep.Completion < floor {
				t.Fatalf("completion %v is below the serialized floor %v: latency was not charged", rep.Completion, floor)
			}
			t.Logf("completion with 1 ms store calls: %v (queue=%v, %d actions)", rep.Completion, queue, rep.Actions)
		})
	}
}

// TestBurstHAMiCompatModes shows the anchor's defects on the same burst:
// without retries for lone pods (RetryPodGroupOnly) 39 of 40 fail into the
// scheduler's backoff (#1655); polling at HAMi's fixed 100 ms instead of
// waking on release misses the target several times over (#2589).
func TestBurstHAMiCompatModes(t *testing.T) {
	w := fake.NewWorld(3, tGPU)
	rep, err := sim.RunBurst(w, sim.BurstConfig{Options: gpu.Options{RetryPodGroupOnly: true}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failed() != 39 || rep.DeadlineFailures != 39 {
		t.Fatalf("RetryPodGroupOnly: %d failed (%d on contention), want 39", rep.Failed(), rep.DeadlineFailures)
	}
	if len(rep.Violations) > 0 {
		t.Fatalf("violations: %v", rep.Violations)
	}

	w = fake.NewWorld(3, tGPU)
	rep, err = sim.RunBurst(w, sim.BurstConfig{Options: gpu.Options{FixedInterval: 100 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	checkBurst(t, rep, 40)
	if rep.Completion < 3*burstTarget {
		t.Fatalf("polling finished in %v; expected it to miss the %v target by far", rep.Completion, burstTarget)
	}
	t.Logf("fixed 100 ms polling: %v", rep.Completion)
}

func checkBurst(t *testing.T, rep sim.BurstReport, n int) {
	t.Helper()
	if len(rep.Violations) > 0 {
		t.Fatalf("violations: %v", rep.Violations)
	}
	if rep.Failed() != 0 || rep.DeadlineFailures != 0 {
		t.Fatalf("%d Binds failed (%d on the deadline)", rep.Failed(), rep.DeadlineFailures)
	}
	if len(rep.BindOrder) != n {
		t.Fatalf("%d pods bound, want %d", len(rep.BindOrder), n)
	}
	for _, p := range rep.Pods {
		if p.Released == 0 || p.Released < p.Bound {
			t.Fatalf("%s bound at %v, released at %v", p.Pod, p.Bound, p.Released)
		}
		if p.Outcome.Attempts < 1 {
			t.Fatalf("%s: %d attempts", p.Pod, p.Outcome.Attempts)
		}
	}
}

// TestPropBurstSafety runs small random bursts, with store latency and
// sometimes the per-node queue: mutual exclusion holds throughout, every Bind
// finishes, none hits the deadline, and completion stays within 1.2× the
// serialized minimum plus the store time each hand-over needs.
func TestPropBurstSafety(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, 4).Draw(t, "pods")
		hold := time.Duration(rapid.IntRange(1, 40).Draw(t, "hold-ms")) * time.Millisecond
		lat := time.Duration(rapid.IntRange(0, 1000).Draw(t, "latency-us")) * time.Microsecond
		w := fake.NewWorld(rapid.Uint64().Draw(t, "seed"), tGPU)
		for _, k := range []string{fake.LockGet, fake.LockCAS, fake.LockCAD} {
			w.Faults.SetLatency(k, lat)
		}
		rep, err := sim.RunBurst(w, sim.BurstConfig{Pods: n, Hold: hold, Queue: rapid.Bool().Draw(t, "queue"), Seed: rapid.Uint64().Draw(t, "jitter")})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Violations) > 0 || rep.Failed() > 0 {
			t.Fatalf("violations %v, %d failed", rep.Violations, rep.Failed())
		}
		// Per pod: the hold, plus at most two reads and writes to lock, two
		// to release, and the reads of a refused attempt, each lat long.
		bound := time.Duration(n) * (hold + 8*lat)
		if rep.Completion > bound+bound/5 {
			t.Fatalf("%d pods holding %v with %v store calls took %v, over 1.2 × %v", n, hold, lat, rep.Completion, bound)
		}
	})
}
