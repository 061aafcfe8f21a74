package lock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/lock"
)

// PlanAcquire at HAMi's expiry boundary: a lock exactly TTL old is
// still held; one second later it is stolen by one compare-and-swap of the
// observed value.
func ExamplePlanAcquire() {
	obs := lock.Observation{
		Key:     lock.NodeKey("n1"),
		Present: true,
		Raw:     "2026-06-14T09:55:00Z,default,p0",
		Version: "200",
	}
	req := lock.Requester{Namespace: "default", Name: "p1", UID: "u1"}
	holder := lock.Holder{State: lock.HolderExists}
	for _, now := range []string{"10:00:00", "10:00:01"} {
		t, _ := time.Parse(time.RFC3339, "2026-06-14T"+now+"Z")
		d, _ := decide(obs, req, t, lock.Options{}, holder)
		fmt.Println(d)
		if err := d.Err(); err != nil {
			fmt.Println(err, errors.Is(err, lock.ErrContention))
		}
	}
	// Output:
	// Refuse(HeldByOther) n1/hami.io/mutex.lock: requeue after 1ns
	// node n1 has been locked within 5m0s: node lock contention true
	// StealExpired(Expired) n1/hami.io/mutex.lock: write 2026-06-14T10:00:01Z,default,p1,u1,1 if holds "2026-06-14T09:55:00Z,default,p0" at "200"
}

// Decode reads every format HAMi ever wrote, and plancore's extended one.
func ExampleDecode() {
	for _, raw := range []string{
		"2026-06-14T15:05:03+08:00,default,gang-pod-1",
		"2026-06-14T07:05:03Z",
		"2026-06-14T07:05:03Z,default,p1,u1,7",
		"2026-06-14T07:05:03Z,default",
	} {
		r, f, err := lock.Decode(raw)
		fmt.Printf("%-8s %s %s/%s uid=%q epoch=%d err=%v\n", f, r.Time.Format(time.RFC3339), r.Namespace, r.Name, r.UID, r.Epoch, err)
	}
	// Output:
	// HAMi     2026-06-14T07:05:03Z default/gang-pod-1 uid="" epoch=0 err=<nil>
	// Legacy   2026-06-14T07:05:03Z / uid="" epoch=0 err=<nil>
	// Extended 2026-06-14T07:05:03Z default/p1 uid="u1" epoch=7 err=<nil>
	// Malformed 0001-01-01T00:00:00Z / uid="" epoch=0 err=lock: malformed lock annotation: expected 3 parts, got 2 from 2026-06-14T07:05:03Z,default
}

// PlanRelease applies HAMi's owner-suffix rule with its leading comma
// (#1433): team-a/abc does not own team-a/abc-123's lock.
func ExamplePlanRelease() {
	obs := lock.Observation{Key: lock.NodeKey("n1"), Present: true, Raw: "2026-06-14T10:00:00Z,team-a,abc-123", Version: "7"}
	for _, name := range []string{"abc", "abc-123"} {
		d, _ := planRelease(obs, lock.Requester{Namespace: "team-a", Name: name}, lock.Options{})
		fmt.Println(name, d)
	}
	// Output:
	// abc NoOp(NotOwner) n1/hami.io/mutex.lock
	// abc-123 Release(Owner) n1/hami.io/mutex.lock: delete if holds "2026-06-14T10:00:00Z,team-a,abc-123" at "7"
}

// Locker runs the read-decide-CAS loop against a store; the epoch of each
// grant is a fencing token that keeps rising across releases.
func ExampleLocker() {
	ctx := context.Background()
	now := time.Date(2026, 6, 14, 10, 0, 0, 0, time.UTC)
	l := &lock.Locker{
		Store: lock.NewMemoryStore(),
		Clock: fake.NewClock(now),
		Holder: func(context.Context, lock.Key, lock.Record) lock.Holder {
			return lock.Holder{State: lock.HolderExists}
		},
	}
	key := lock.NodeKey("gpu-node-1")
	a := lock.Requester{Namespace: "default", Name: "a", UID: "ua"}
	b := lock.Requester{Namespace: "default", Name: "b", UID: "ub"}

	g, _ := l.Acquire(ctx, key, a)
	fmt.Println("a:", g.Plan.Kind, "epoch", g.Record().Epoch)
	_, err := l.Acquire(ctx, key, b)
	fmt.Println("b:", err)
	d, _ := l.Release(ctx, key, a)
	fmt.Println("a:", d.Kind)
	g, _ = l.Acquire(ctx, key, b)
	fmt.Println("b:", g.Plan.Kind, "epoch", g.Record().Epoch)
	// Output:
	// a: Acquire epoch 1
	// b: node gpu-node-1 has been locked within 5m0s: node lock contention
	// a: Release
	// b: Acquire epoch 2
}
