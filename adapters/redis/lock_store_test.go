package redis_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"pgregory.net/rapid"

	"github.com/plancore/plancore/adapters/redis"
	"github.com/plancore/plancore/adapters/redis/internal/redistest"
	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/fake/sim"
	"github.com/plancore/plancore/lock"
)

func newLockStore(t testing.TB, client goredis.UniversalClient, prefix string) *redis.LockStore {
	t.Helper()
	s, err := redis.NewLockStore(client, redis.LockStoreOptions{KeyPrefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestLockStoreConformance(t *testing.T) {
	srv := redistest.Start(t)
	n := 0
	fresh := func() lock.Store { // each clause on its own keys: an empty store
		n++
		return newLockStore(t, srv.Client(), fmt.Sprintf("conf%d:", n))
	}
	for _, v := range fake.CheckLockStore(context.Background(), fresh) {
		t.Error(v)
	}
}

func TestLockStoreLayout(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	c := srv.Client()
	s := newLockStore(t, c, "")
	key := lock.NodeKey("gpu-1")
	if got := s.Key(key); got != "plancore:lock:{18:hami.io/mutex.lock:gpu-1}" {
		t.Fatalf("Key = %q", got)
	}
	rec := lock.Record{Time: time.Date(2026, 6, 14, 10, 0, 0, 0, time.UTC), Namespace: "default", Name: "p1", UID: "u1", Epoch: 1}
	if err := s.CompareAndSwap(ctx, key, lock.Precondition{}, rec); err != nil {
		t.Fatal(err)
	}
	if v := c.Get(ctx, s.Key(key)).Val(); v != "2026-06-14T10:00:00Z,default,p1,u1,1" {
		t.Errorf("value = %q, want the extended record", v)
	}
	if ttl := c.PTTL(ctx, s.Key(key)).Val(); ttl != -1 {
		t.Errorf("PTTL = %v: no server-side expiry by default", ttl)
	}
	obs, _ := s.Get(ctx, key)
	if err := s.CompareAndDelete(ctx, key, lock.Precondition{Present: true, Raw: obs.Raw, Version: obs.Version}); err != nil {
		t.Fatal(err)
	}
	if v := c.Get(ctx, s.Key(key)+":epoch").Val(); v != "1" {
		t.Errorf("epoch key = %q after release, want it kept at 1", v)
	}
	// Lua numbers are doubles; epochs near 2^64 must still compare exactly.
	c.Set(ctx, s.Key(key)+":epoch", "18446744073709551614", 0)
	big := rec
	big.Epoch = 18446744073709551615
	if err := s.CompareAndSwap(ctx, key, lock.Precondition{}, big); err != nil {
		t.Fatalf("epoch 2^64-1: %v", err)
	}
	if o, _ := s.Get(ctx, key); o.EpochHigh != 18446744073709551615 {
		t.Errorf("EpochHigh = %d", o.EpochHigh)
	}
	noUID := rec
	noUID.UID = ""
	if err := s.CompareAndSwap(ctx, lock.NodeKey("gpu-2"), lock.Precondition{}, noUID); !errors.Is(err, lock.ErrInvalidInput) {
		t.Errorf("record without UID: %v", err)
	}
	if _, err := s.Get(ctx, lock.Key{Name: lock.HAMiLockName}); !errors.Is(err, lock.ErrInvalidInput) {
		t.Errorf("empty node: %v", err)
	}
}

func TestLockStoreServerTTL(t *testing.T) {
	if _, err := redis.NewLockStore(nil, redis.LockStoreOptions{ServerTTL: 10 * time.Minute}); err == nil || !strings.Contains(err.Error(), "below 15m0s") {
		t.Errorf("ServerTTL under the allocating ceiling: %v", err)
	}
	if _, err := redis.NewLockStore(nil, redis.LockStoreOptions{ServerTTL: time.Hour, Lock: lock.Options{AllocatingCeiling: lock.AllocatingCeilingNever}}); err == nil {
		t.Error("ServerTTL with a ceiling of never was accepted")
	}
	if _, err := redis.NewLockStore(nil, redis.LockStoreOptions{Lock: lock.Options{TTL: -1}}); !errors.Is(err, lock.ErrInvalidOptions) {
		t.Errorf("bad lock options: %v", err)
	}
	ctx := context.Background()
	srv := redistest.Start(t)
	s, err := redis.NewLockStore(srv.Client(), redis.LockStoreOptions{ServerTTL: 20 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	key := lock.NodeKey("n1")
	rec := lock.Record{Time: time.Date(2026, 6, 14, 10, 0, 0, 0, time.UTC), Namespace: "default", Name: "p1", UID: "u1", Epoch: 1}
	if err := s.CompareAndSwap(ctx, key, lock.Precondition{}, rec); err != nil {
		t.Fatal(err)
	}
	if ttl := srv.Client().PTTL(ctx, s.Key(key)).Val(); ttl <= 19*time.Minute || ttl > 20*time.Minute {
		t.Errorf("PTTL = %v, want the 20m backstop", ttl)
	}
	if ttl := srv.Client().PTTL(ctx, s.Key(key)+":epoch").Val(); ttl != -1 {
		t.Errorf("epoch PTTL = %v: the high-water mark must not expire", ttl)
	}
}

func TestLockStoreLockerAndRestart(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	s := newLockStore(t, srv.Client(), "")
	clk := fake.NewClock(time.Date(2026, 6, 14, 10, 0, 0, 0, time.UTC))
	alive := func(context.Context, lock.Key, lock.Record) lock.Holder { return lock.Holder{State: lock.HolderExists} }
	l := &lock.Locker{Store: s, Clock: clk, Holder: alive}
	a := lock.Requester{Namespace: "default", Name: "a", UID: "ua"}
	b := lock.Requester{Namespace: "default", Name: "b", UID: "ub"}
	key := lock.NodeKey("n1")
	if g, err := l.Acquire(ctx, key, a); err != nil || g.Record().Epoch != 1 {
		t.Fatalf("acquire = %v, %v", g.Plan, err)
	}
	if _, err := l.Acquire(ctx, key, b); !errors.Is(err, lock.ErrContention) {
		t.Fatalf("contention: %v", err)
	}
	clk.Advance(lock.DefaultTTL + time.Second)
	if g, err := l.Acquire(ctx, key, b); err != nil || g.Plan.Kind != lock.StealExpired || g.Record().Epoch != 2 {
		t.Fatalf("steal = %v, %v", g.Plan, err)
	}
	if d, err := l.Release(ctx, key, a); err != nil || d.Kind != lock.NoOp {
		t.Fatalf("release by the old holder = %v, %v: must keep b's lock", d, err)
	}
	// After a restart the scripts are reloaded (NOSCRIPT) and the store works.
	srv.Restart()
	if g, err := l.Acquire(ctx, key, a); err != nil || g.Plan.Kind != lock.Acquire {
		t.Fatalf("acquire after a restart = %v, %v", g.Plan, err)
	}
}

// TestLockStoreWakesWaiters checks that a release published by the script
// wakes a waiter blocked in Locker.Acquire long before its backoff would.
func TestLockStoreWakesWaiters(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	s := newLockStore(t, srv.Client(), "")
	alive := func(context.Context, lock.Key, lock.Record) lock.Holder { return lock.Holder{State: lock.HolderExists} }
	a := lock.Requester{Namespace: "default", Name: "a", UID: "ua"}
	b := lock.Requester{Namespace: "default", Name: "b", UID: "ub"}
	key := lock.NodeKey("n1")
	holder := &lock.Locker{Store: s, Holder: alive}
	if _, err := holder.Acquire(ctx, key, a); err != nil {
		t.Fatal(err)
	}
	// The waiter's clock never moves, so only the release can wake it.
	clk := fake.NewClock(time.Now())
	waiter := &lock.Locker{Store: s, Holder: alive, Clock: clk, Backoff: lock.Backoff{Wait: time.Minute, Initial: time.Minute, Max: time.Minute}}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second) // a failure bound, not a timing assumption
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := waiter.Acquire(wctx, key, b)
		done <- err
	}()
	for clk.Waiters() == 0 {
		time.Sleep(time.Millisecond) // wait until the waiter is parked on its backoff timer
	}
	if _, err := holder.Release(ctx, key, a); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("waiter: %v", err)
	}
}

var racePrefix atomic.Int64

// TestLockStoreRaceProperty runs the mutual-exclusion and epoch property of
// package lock against the real Redis store: every check gets fresh keys.
func TestLockStoreRaceProperty(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client()
	rapid.Check(t, func(rt *rapid.T) {
		s := newLockStore(t, client, fmt.Sprintf("race%d:", racePrefix.Add(1)))
		race := sim.LockRace{
			Store: s,
			Options: lock.Options{
				TTL:         time.Minute,
				ExpiryClock: rapid.SampledFrom([]lock.ExpiryClock{lock.WriterClock, lock.ObservationClock}).Draw(rt, "clock"),
			},
			Processes: rapid.IntRange(3, 5).Draw(rt, "processes"),
			Nodes:     rapid.IntRange(1, 2).Draw(rt, "nodes"),
			Steps:     100,
			Faults:    rapid.Bool().Draw(rt, "faults"),
		}
		// Seeded schedules explore interleavings far better than rapid's
		// small-number-biased draws (see package lock's race test).
		seed := rapid.Uint64().Draw(rt, "seed")
		if _, err := race.Run(sim.RandChooser{R: rand.New(rand.NewPCG(seed, 99))}); err != nil {
			rt.Fatal(err)
		}
	})
}

// Two different locks never share a Redis key, whatever their names hold
// (colons, braces, digits, the ":epoch" suffix). Fails if Key drops the
// length prefix: {Name: "a:b", Node: "c"} and {Name: "a", Node: "b:c"} then
// collide.
func TestLockStoreKeysNeverCollide(t *testing.T) {
	c := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true}) // never dialled
	defer c.Close()
	s := newLockStore(t, c, "")
	if s.Key(lock.Key{Name: "a:b", Node: "c"}) == s.Key(lock.Key{Name: "a", Node: "b:c"}) {
		t.Fatal(`lock "a:b" on node "c" and lock "a" on node "b:c" share a key`)
	}
	// Pairs that differ only in where the name ends and the node begins (the
	// ambiguity a plain "name:node" has), and unrelated pairs.
	segment := rapid.StringOfN(rapid.SampledFrom([]rune("ab{}1:")), 0, 4, -1)
	rapid.Check(t, func(rt *rapid.T) {
		segs := rapid.SliceOfN(segment, 2, 5).Draw(rt, "segments")
		i := rapid.IntRange(1, len(segs)-1).Draw(rt, "split1")
		j := rapid.IntRange(1, len(segs)-1).Draw(rt, "split2")
		split := func(at int) lock.Key {
			return lock.Key{Name: strings.Join(segs[:at], ":"), Node: strings.Join(segs[at:], ":")}
		}
		k1, k2 := split(i), split(j)
		if rapid.Bool().Draw(rt, "unrelated") {
			k2 = lock.Key{Name: segment.Draw(rt, "name2") + ":epoch", Node: segment.Draw(rt, "node2")}
		}
		if k1 == k2 {
			return
		}
		redisKeys1 := []string{s.Key(k1), s.Key(k1) + ":epoch"}
		for _, rk := range []string{s.Key(k2), s.Key(k2) + ":epoch"} {
			if slices.Contains(redisKeys1, rk) {
				rt.Fatalf("%v and %v share the Redis key %q", k1, k2, rk)
			}
		}
	})
}
