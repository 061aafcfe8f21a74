package lock_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/lock"
)

var update = flag.Bool("update", false, "rewrite the golden transcripts in testdata/")

// goldenScenarios are narrated runs of typical lock scenarios and of the
// defects plancore fixes, rendered through the decisions' String methods.
var goldenScenarios = []struct {
	name string
	run  func(w io.Writer) error
}{
	{"acquire", func(w io.Writer) error {
		obs := lock.Observation{Key: lock.NodeKey("n1"), Version: "100", EpochHigh: 6}
		d, err := decide(obs, lock.Requester{Namespace: "default", Name: "p1", UID: "u1"}, t0, lock.Options{}, lock.Holder{})
		if err != nil {
			return err
		}
		main, side := lock.EncodeNode(d.Record)
		fmt.Fprintf(w, "observe: absent at version 100, epoch high-water 6\ndecide:  %v\n", d)
		fmt.Fprintf(w, "node store writes %s=%s\n                  %s=%s\n", lock.HAMiLockName, main, lock.SidecarAnnotation(lock.HAMiLockName), side)
		return nil
	}},
	{"expiry-boundary", func(w io.Writer) error {
		obs := lock.Observation{Key: lock.NodeKey("n1"), Present: true, Raw: "2026-06-14T09:55:00Z,default,p0", Version: "200"}
		fmt.Fprintf(w, "observe: %q at version 200, holder default/p0 exists\n", obs.Raw)
		for _, now := range []time.Time{t0.Add(-time.Second), t0, t0.Add(1), t0.Add(time.Second)} {
			d, err := decide(obs, podA, now, lock.Options{}, lock.Holder{State: lock.HolderExists})
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "at %s: %v\n", now.Format(time.RFC3339Nano), d)
			if err := d.Err(); err != nil {
				fmt.Fprintf(w, "    error: %v\n", err)
			}
		}
		return nil
	}},
	{"malformed", func(w io.Writer) error {
		ctx := context.Background()
		world := fake.NewWorld(1, t0)
		store := lock.NewMemoryStore()
		if err := store.Put(node1, "lock"); err != nil {
			return err
		}
		fmt.Fprintln(w, `a human wrote "lock" into the annotation; HAMi refuses it forever`)
		l := &lock.Locker{Store: store, Clock: world.Clock}
		for _, step := range []time.Duration{0, 4 * time.Minute, time.Minute, time.Second} {
			world.Clock.Advance(step)
			g, err := l.Acquire(ctx, node1, podA)
			fmt.Fprintf(w, "at %s: ", world.Clock.Now().Format(time.RFC3339))
			if err != nil {
				fmt.Fprintf(w, "%v (ErrInvalid: %v)\n", err, errors.Is(err, lock.ErrInvalid))
				continue
			}
			fmt.Fprintf(w, "%v\n", g.Plan)
		}
		return nil
	}},
	{"steal-race", func(w io.Writer) error {
		ctx := context.Background()
		store := lock.NewMemoryStore()
		old := lock.Record{Time: t0.Add(-10 * time.Minute), Namespace: "default", Name: "p0", UID: "u0", Epoch: 1}
		if err := store.CompareAndSwap(ctx, node1, lock.Precondition{Version: "0"}, old); err != nil {
			return err
		}
		exists := lock.Holder{State: lock.HolderExists}
		obsA, _ := store.Get(ctx, node1)
		obsB, _ := store.Get(ctx, node1)
		fmt.Fprintf(w, "A and B both observe %q at version %s\n", obsA.Raw, obsA.Version)
		dA, _ := decide(obsA, podA, t0, lock.Options{}, exists)
		dB, _ := decide(obsB, podB, t0, lock.Options{}, exists)
		fmt.Fprintf(w, "A: %v\nB: %v\n", dA, dB)
		_, errA := lock.Apply(ctx, dA, store)
		fmt.Fprintf(w, "A applies: %v\n", errA)
		_, errB := lock.Apply(ctx, dB, store)
		fmt.Fprintf(w, "B applies: %v\n", errB)
		again, _ := store.Get(ctx, node1)
		dB2, _ := decide(again, podB, t0, lock.Options{}, exists)
		fmt.Fprintf(w, "B re-reads %q and re-decides: %v\n", again.Raw, dB2)
		fmt.Fprintln(w, "(HAMi's release-then-set would have let B delete A's fresh lock and bind too)")
		return nil
	}},
	{"allocating-holder", func(w io.Writer) error {
		obs := lock.Observation{Key: lock.NodeKey("n1"), Present: true, Raw: "2026-06-14T09:50:00Z,default,p0", Version: "300"}
		allocating := lock.Holder{State: lock.HolderExists, Allocating: true}
		fmt.Fprintf(w, "observe: %q, holder Pending with bind-phase=allocating\n", obs.Raw)
		for _, now := range []time.Time{t0, t0.Add(5 * time.Minute), t0.Add(5*time.Minute + time.Second)} {
			d, _ := decide(obs, podA, now, lock.Options{}, allocating)
			fmt.Fprintf(w, "at %s: %v\n", now.Format(time.RFC3339), d)
		}
		d, _ := decide(obs, podA, t0, lock.Options{StealFromAllocatingHolder: true}, allocating)
		fmt.Fprintf(w, "HAMi (StealFromAllocatingHolder) at %s: %v\n", t0.Format(time.RFC3339), d)
		return nil
	}},
	{"lost-responses", func(w io.Writer) error {
		ctx := context.Background()
		world := fake.NewWorld(1, t0)
		store := fake.NewLockStore(world)
		l := &lock.Locker{Store: store, Clock: stepClock{Clock: world.Clock}}
		world.Faults.LoseResponseNext(fake.LockCAS, 1, errors.New("i/o timeout"))
		world.Faults.FailNext(fake.LockCAS, 1, lock.ErrConflict)
		g, err := l.Acquire(ctx, node1, podA)
		fmt.Fprintf(w, "acquire: %v (err %v)\n", g.Plan, err)
		world.Faults.LoseResponseNext(fake.LockCAD, 1, errors.New("i/o timeout"))
		d, err := l.Release(ctx, node1, podA)
		fmt.Fprintf(w, "release: %v (err %v)\n", d, err)
		g, err = l.Acquire(ctx, node1, podB)
		fmt.Fprintf(w, "acquire: %v (err %v)\n", g.Plan, err)
		fmt.Fprintln(w, "calls:")
		for _, c := range world.Calls.Calls() {
			fmt.Fprintf(w, "  %v\n", c)
		}
		return nil
	}},
	{"owner-suffix", func(w io.Writer) error {
		for _, raw := range []string{"2026-06-14T10:00:00Z,team-a,abc-123", "2026-06-14T10:00:00Z,team-a,abc", "2026-06-14T10:00:00Z"} {
			obs := lock.Observation{Key: node1, Present: true, Raw: raw, Version: "1"}
			for _, opts := range []lock.Options{{}, {LegacyReleasableByAnyone: true}} {
				d, _ := planRelease(obs, lock.Requester{Namespace: "team-a", Name: "abc"}, opts)
				fmt.Fprintf(w, "%-36q legacy-anyone=%-5v team-a/abc: %v\n", raw, opts.LegacyReleasableByAnyone, d)
			}
		}
		return nil
	}},
}

func TestGoldenScenarios(t *testing.T) {
	for _, sc := range goldenScenarios {
		t.Run(sc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := sc.run(&buf); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", sc.name+".txt")
			if *update {
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(want, buf.Bytes()) {
				t.Errorf("%s differs from the transcript (run with -update after checking):\n--- want\n%s\n--- got\n%s", path, want, buf.Bytes())
			}
		})
	}
}
