package lock

import (
	"context"
	"errors"
	"testing"
)

func TestMemoryStoreCompareAndSwap(t *testing.T) {
	ctx := context.Background()
	s := NewMemoryStore()
	obs, err := s.Get(ctx, n1)
	if err != nil || obs.Present || obs.Version != "0" || obs.EpochHigh != 0 {
		t.Fatalf("Get of a fresh key = %+v, %v", obs, err)
	}
	r1 := rec("10:00:00", "default", "p1", "u1", 1)
	if err := s.CompareAndSwap(ctx, n1, Precondition{Version: "0"}, r1); err != nil {
		t.Fatal(err)
	}
	// The same precondition again fails: the key is no longer absent.
	if err := s.CompareAndSwap(ctx, n1, Precondition{Version: "0"}, rec("10:00:00", "default", "p2", "u2", 2)); !errors.Is(err, ErrConflict) {
		t.Fatalf("second acquire: %v, want ErrConflict", err)
	}
	held, _ := s.Get(ctx, n1)
	want := Encode(r1, FormatExtended)
	if !held.Present || held.Raw != want || held.EpochHigh != 1 {
		t.Fatalf("after acquire: %+v", held)
	}
	// A wrong epoch is refused even with the right precondition.
	if err := s.CompareAndSwap(ctx, n1, held.precondition(), rec("10:00:01", "default", "p2", "u2", 5)); !errors.Is(err, ErrConflict) {
		t.Fatalf("epoch skip: %v", err)
	}
	// Release keeps the epoch; the version moves, so "absent at 0" stays stale
	// (no ABA).
	if err := s.CompareAndDelete(ctx, n1, held.precondition()); err != nil {
		t.Fatal(err)
	}
	free, _ := s.Get(ctx, n1)
	if free.Present || free.EpochHigh != 1 || free.Version == "0" || free.Version == held.Version {
		t.Fatalf("after release: %+v", free)
	}
	if err := s.CompareAndSwap(ctx, n1, Precondition{Version: "0"}, rec("10:00:02", "default", "p2", "u2", 2)); !errors.Is(err, ErrConflict) {
		t.Fatalf("acquire on a stale absent version: %v", err)
	}
	if err := s.CompareAndDelete(ctx, n1, held.precondition()); !errors.Is(err, ErrConflict) {
		t.Fatalf("double release: %v", err)
	}
	if err := s.CompareAndSwap(ctx, n1, free.precondition(), rec("10:00:02", "default", "p2", "", 2)); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("record without UID: %v", err)
	}
}

func TestMemoryStoreDeleteNode(t *testing.T) {
	ctx := context.Background()
	s := NewMemoryStore()
	other := NodeKey("n2")
	for _, k := range []Key{n1, other, {Name: CambriconLockName, Node: "n1"}} {
		if err := s.CompareAndSwap(ctx, k, Precondition{Version: "0"}, rec("10:00:00", "default", "p1", "u1", 1)); err != nil {
			t.Fatal(err)
		}
	}
	obs, _ := s.Get(ctx, n1)
	obs2, _ := s.Get(ctx, n1)
	if err := s.CompareAndSwap(ctx, n1, obs.precondition(), rec("10:00:00", "default", "p1", "u1", 2)); err != nil {
		t.Fatal(err)
	}
	wake := s.Changes(n1)
	if s.Len() != 2 {
		t.Fatalf("Len = %d, want 2 nodes", s.Len())
	}
	s.DeleteNode("n1")
	select {
	case <-wake:
	default:
		t.Error("DeleteNode did not wake a waiter")
	}
	if s.Len() != 1 {
		t.Fatalf("Len after DeleteNode = %d, want 1: the node's entries must be freed", s.Len())
	}
	fresh, _ := s.Get(ctx, n1)
	if fresh.Present || fresh.EpochHigh < 2 {
		t.Fatalf("after DeleteNode: %+v: the epoch floor must not drop", fresh)
	}
	// An observation from before the deletion cannot write.
	if err := s.CompareAndSwap(ctx, n1, obs2.precondition(), rec("10:00:00", "default", "p9", "u9", 3)); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale write after DeleteNode: %v", err)
	}
	if err := s.CompareAndSwap(ctx, n1, fresh.precondition(), rec("10:00:00", "default", "p9", "u9", fresh.EpochHigh+1)); err != nil {
		t.Fatal(err)
	}
	if o, _ := s.Get(ctx, other); !o.Present {
		t.Fatal("DeleteNode removed another node's lock")
	}
}

func TestMemoryStoreChangesAndPut(t *testing.T) {
	ctx := context.Background()
	s := NewMemoryStore()
	ch := s.Changes(n1)
	select {
	case <-ch:
		t.Fatal("closed before any write")
	default:
	}
	if err := s.Put(n1, "2026-06-14T10:00:00Z,default,p1,u1,41"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	default:
		t.Fatal("Put did not close the change channel")
	}
	if o, _ := s.Get(ctx, n1); o.EpochHigh != 41 || o.Raw != "2026-06-14T10:00:00Z,default,p1,u1,41" {
		t.Fatalf("after Put: %+v", o)
	}
	if _, err := s.Get(ctx, Key{Name: HAMiLockName}); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("Get without a node: %v", err)
	}
}
