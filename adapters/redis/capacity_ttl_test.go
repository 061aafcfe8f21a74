package redis_test

import (
	"context"
	"testing"

	"github.com/plancore/plancore/adapters/redis"
	"github.com/plancore/plancore/adapters/redis/internal/redistest"
	"github.com/plancore/plancore/capacity"
	goredis "github.com/redis/go-redis/v9"
)

// TestCapacityKeysAlwaysExpire runs every capacity script on nodes Redis has
// never seen (a first heartbeat, a first reserve, a first batch, then ack,
// release, more heartbeats and reserves) and, after each call, reads the
// PTTL of every key the server holds (SCAN): each must be positive, so a
// node that heartbeats once and leaves does not stay in Redis forever.
// Setting a new key's expiry before the write that creates it (a PEXPIRE on
// a missing key does nothing) makes it fail with a PTTL of -1.
func TestCapacityKeysAlwaysExpire(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		opts    redis.CapacityStoreOptions
		cluster bool
	}{
		{name: "sum", opts: redis.CapacityStoreOptions{}},
		// The seed's accounting reserves on a node without a heartbeat: a
		// reserve and a batch are then the calls that create its key.
		{name: "seedmax", opts: redis.CapacityStoreOptions{Options: capacity.Options{Accounting: capacity.SeedMax}}},
		{name: "seedmax-cluster", opts: redis.CapacityStoreOptions{Options: capacity.Options{Accounting: capacity.SeedMax}, Cluster: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := c.FlushAll(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			s := newStore(t, c, tc.opts)
			step := func(what string, err error) {
				t.Helper()
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				allKeysExpire(t, c, what)
			}
			step("first heartbeat of a", second(s.Heartbeat(ctx, "a", capacity.Heartbeat{Epoch: 1, Seq: 1, Max: 4})))
			step("first reserve on b", second(s.Reserve(ctx, capacity.Reservation{Node: "b", RID: "r1", Max: 4, Running: 0})))
			step("first batch on c, d", second(s.ReserveBatch(ctx, []capacity.Reservation{
				{Node: "c", RID: "r2", Max: 4}, {Node: "d", RID: "r3", Max: 4}, {Node: "d", RID: "r4", Max: 4}}, capacity.Partial)))
			step("reserve on a", second(s.Reserve(ctx, capacity.Reservation{Node: "a", RID: "r5", Max: 4})))
			res, err := s.Reserve(ctx, capacity.Reservation{Node: "a", RID: "r6", Max: 4})
			step("second reserve on a", err)
			step("ack on a", second(s.Ack(ctx, capacity.Ack{Node: "a", RID: "r6", Epoch: res.Epoch, Seq: 2})))
			step("release on a", second(s.Release(ctx, "a", "r5")))
			step("release on a fresh node e", second(s.Release(ctx, "e", "r7")))
			step("ack on a fresh node f", second(s.Ack(ctx, capacity.Ack{Node: "f", RID: "r8", Epoch: 1, Seq: 1})))
			step("heartbeat of b", second(s.Heartbeat(ctx, "b", capacity.Heartbeat{Epoch: 1, Seq: 1, Max: 4})))
			step("next heartbeat of a", second(s.Heartbeat(ctx, "a", capacity.Heartbeat{Epoch: 1, Seq: 3, Running: 1, Max: 4})))
			step("new epoch of a", second(s.Heartbeat(ctx, "a", capacity.Heartbeat{Epoch: 2, Seq: 1, Max: 4})))
			step("batch on a, g", second(s.ReserveBatch(ctx, []capacity.Reservation{
				{Node: "a", RID: "r9", Max: 4}, {Node: "g", RID: "r10", Max: 4}}, capacity.AllOrNothing)))
			if n, err := c.DBSize(ctx).Result(); err != nil || n == 0 {
				t.Fatalf("the scripts wrote no key (%d, %v): nothing was checked", n, err)
			}
		})
	}
}

// allKeysExpire fails t unless every key on c has a positive PTTL.
func allKeysExpire(t *testing.T, c *goredis.Client, after string) {
	t.Helper()
	ctx := context.Background()
	iter := c.Scan(ctx, 0, "*", 100).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		ttl, err := c.PTTL(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ttl <= 0 {
			t.Errorf("after %s: key %q has PTTL %v, want a positive expiry", after, k, ttl)
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
}
