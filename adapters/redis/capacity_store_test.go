package redis_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plancore/plancore/adapters/redis"
	"github.com/plancore/plancore/adapters/redis/internal/redistest"
	"github.com/plancore/plancore/capacity"
	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/fake/sim"
	goredis "github.com/redis/go-redis/v9"
	"pgregory.net/rapid"
)

// redisFactory builds a CapacityStore on a flushed server, in client-clock
// mode so that the simulation's times reach the scripts exactly.
func redisFactory(t testing.TB, c *goredis.Client) sim.StoreFactory {
	return func(clock func() time.Time, o capacity.Options) (capacity.SlotStore, error) {
		ctx := context.Background()
		if err := c.FlushAll(ctx).Err(); err != nil {
			return nil, err
		}
		return redis.NewCapacityStore(ctx, c, redis.CapacityStoreOptions{Options: o, Clock: fake.ClockFunc(clock)})
	}
}

// TestCapacityStoreMatchesLedger runs the shared generator of package fake
// against a real redis-server: every answer of the Lua scripts must equal the
// capacity.NodeLedger reference for the same operations at the same times,
// no interleaving may start more than M jobs on a node (nodes' hard limit
// off), and the drained system must be exact.
func TestCapacityStoreMatchesLedger(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	for _, tc := range []struct {
		name string
		cfg  sim.CapacitySimConfig
	}{
		{"fenced, no hard limit", sim.CapacitySimConfig{}},
		{"fenced, scheduler clocks under skew", sim.CapacitySimConfig{ClientClock: true}},
		{"unfenced, hard limit on", sim.CapacitySimConfig{Options: capacity.Options{Unfenced: true}, HardLimit: true}},
		{"seed compatibility mode (differential only)", sim.CapacitySimConfig{Options: capacity.Options{Accounting: capacity.SeedMax}, HardLimit: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rapid.Check(t, seedProperty(func(rt *rapid.T, seed uint64) {
				ctx := context.Background()
				cs, err := sim.NewCapacitySim(ctx, tc.cfg, redisFactory(t, c))
				if err != nil {
					rt.Fatal(err)
				}
				pick := sim.SeededPicker(seed)
				steps := 5 + pick("steps", 36)
				for range steps {
					if err := cs.Step(ctx, pick); err != nil {
						rt.Fatalf("%v\ntrace:\n%s", err, cs)
					}
				}
				if err := cs.Quiesce(ctx); err != nil {
					rt.Fatalf("%v\ntrace:\n%s", err, cs)
				}
			}))
		})
	}
}

// seedProperty draws one seed per rapid check and derives the run from it;
// seeds that already passed are skipped and not counted (sim.SeedRuns).
func seedProperty(prop func(t *rapid.T, seed uint64)) func(*rapid.T) {
	return sim.SeedRuns(func(t *rapid.T) uint64 { return rapid.Uint64().Draw(t, "seed") }, prop)
}

// TestCapacityStoreLinearizable is the linearizability property on Redis: clients race Reserve,
// Release, Ack and Heartbeat through one go-redis client (a connection each)
// on two nodes; every history must be linearizable against the ledger. The
// store runs on the race's clock (client-clock mode), so each call's store
// time is known. Then racers on one node must get exactly M − running leases.
func TestCapacityStoreLinearizable(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	rapid.Check(t, seedProperty(func(rt *rapid.T, seed uint64) {
		h, err := sim.RunCapacityRace(context.Background(), sim.CapacityRaceConfig{Seed: seed}, redisFactory(t, c))
		if err != nil {
			rt.Fatal(err)
		}
		if err := capacity.CheckLinearizable(h, capacity.Options{}); err != nil {
			rt.Fatal(err)
		}
	}))
	now := time.Date(2026, 1, 7, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct{ max, running int }{{1, 0}, {4, 1}, {8, 8}} {
		s, err := redisFactory(t, c)(func() time.Time { return now }, capacity.Options{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := sim.RaceReserves(context.Background(), s, "n", 24, tc.max, tc.running)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.max-tc.running {
			t.Errorf("M=%d running=%d: 24 racers got %d leases, want %d", tc.max, tc.running, got, tc.max-tc.running)
		}
	}
}

// TestCapacityStoreKnownBad replays, against Redis, the counter-examples rapid
// found for the known-bad accountings: each oversells there too, and is safe
// under the default accounting.
func TestCapacityStoreKnownBad(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	for _, tc := range sim.KnownBadCounterExamples {
		t.Run(tc.Name, func(t *testing.T) {
			ctx := context.Background()
			cs, err := sim.RunDraws(ctx, sim.CapacitySimConfig{Options: tc.Options}, redisFactory(t, c), tc.Draws)
			var over *sim.OversellError
			if !errors.As(err, &over) {
				t.Fatalf("known-bad %v: err = %v, want an oversell\n%s", tc.Options.Accounting, err, cs)
			}
			if cs, err = sim.RunDraws(ctx, sim.CapacitySimConfig{}, redisFactory(t, c), tc.Draws); err != nil {
				t.Fatalf("default accounting: %v\n%s", err, cs)
			}
		})
	}
}

func newStore(t testing.TB, c goredis.Scripter, o redis.CapacityStoreOptions) *redis.CapacityStore {
	t.Helper()
	s, err := redis.NewCapacityStore(context.Background(), c, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCapacityStoreServerTime checks that, without a client clock, the scripts
// take Redis TIME: a lease ends TTL after the server's clock, whatever the
// client's clock says, and the hb key carries the server's receive time.
func TestCapacityStoreServerTime(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	c := srv.Client()
	s := newStore(t, c, redis.CapacityStoreOptions{})
	if _, err := s.Heartbeat(ctx, "n1", capacity.Heartbeat{Epoch: 1, Seq: 1}); err != nil {
		t.Fatal(err)
	}
	before, err := c.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Reserve(ctx, capacity.Reservation{Node: "n1", RID: "a", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	after, _ := c.Time(ctx).Result()
	if r.Status != capacity.ReserveOK || r.Expiry.Before(before.Add(time.Hour).Truncate(time.Millisecond)) || r.Expiry.After(after.Add(time.Hour)) {
		t.Fatalf("lease %v not one hour after server time [%v, %v]", r, before, after)
	}
	if exp, ok := pendingLeases(t, c, "n1")["a"]; !ok || exp != r.Expiry.UnixMilli() {
		t.Fatalf("stored lease %v (%v), want %d", exp, ok, r.Expiry.UnixMilli())
	}
	ttl, _ := c.PTTL(ctx, "{n:n1}").Result()
	if ttl < time.Hour+59*time.Second {
		t.Errorf("the node's key lives %v, want its longest lease plus 60s", ttl)
	}
	loads, err := s.Loads(ctx, []string{"n1", "n2"})
	if err != nil {
		t.Fatal(err)
	}
	if loads[0].Pending != 1 || loads[0].HeartbeatAt.IsZero() || !loads[1].HeartbeatAt.IsZero() {
		t.Fatalf("loads %+v", loads)
	}
}

// TestCapacityStoreFailsClosed stops Redis: every operation must return an
// error wrapping ErrStoreUnavailable, never a lease; after a restart (keys and
// scripts gone) the node is unknown until its next heartbeat, and the scripts
// reload themselves on NOSCRIPT.
func TestCapacityStoreFailsClosed(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	c := srv.Client(func(o *goredis.Options) { o.DialTimeout = 200 * time.Millisecond })
	s := newStore(t, c, redis.CapacityStoreOptions{})
	if _, err := s.Heartbeat(ctx, "n1", capacity.Heartbeat{Epoch: 1, Seq: 1}); err != nil {
		t.Fatal(err)
	}
	reloads := s.ScriptReloads()
	srv.Stop()
	r, err := s.Reserve(ctx, capacity.Reservation{Node: "n1", RID: "a"})
	if !errors.Is(err, capacity.ErrStoreUnavailable) || r.Status.Granted() {
		t.Fatalf("reserve with Redis down: %v, %v", r, err)
	}
	b, err := s.ReserveBatch(ctx, []capacity.Reservation{{Node: "n1", RID: "b"}}, capacity.Partial)
	if !errors.Is(err, capacity.ErrStoreUnavailable) || b.Granted() != 0 {
		t.Fatalf("batch with Redis down: %v, %v", b, err)
	}
	a, err := s.Ack(ctx, capacity.Ack{Node: "n1", RID: "a", Epoch: 1, Seq: 2})
	if !errors.Is(err, capacity.ErrStoreUnavailable) || a.Start() {
		t.Fatalf("ack with Redis down: %v, %v", a, err)
	}
	if _, err := s.Release(ctx, "n1", "a"); !errors.Is(err, capacity.ErrStoreUnavailable) {
		t.Fatalf("release with Redis down: %v", err)
	}
	if _, err := s.Heartbeat(ctx, "n1", capacity.Heartbeat{Epoch: 1, Seq: 2}); !errors.Is(err, capacity.ErrStoreUnavailable) {
		t.Fatalf("heartbeat with Redis down: %v", err)
	}
	if _, err := s.Loads(ctx, []string{"n1"}); !errors.Is(err, capacity.ErrStoreUnavailable) {
		t.Fatalf("loads with Redis down: %v", err)
	}
	srv.Restart()
	r, err = s.Reserve(ctx, capacity.Reservation{Node: "n1", RID: "a"})
	if err != nil || r.Status != capacity.ReserveUnknownNode {
		t.Fatalf("reserve after a restart: %v, %v (want unknown-node: the heartbeat is gone)", r, err)
	}
	if _, err := s.Heartbeat(ctx, "n1", capacity.Heartbeat{Epoch: 1, Seq: 3}); err != nil {
		t.Fatal(err)
	}
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	r, err = s.Reserve(ctx, capacity.Reservation{Node: "n1", RID: "a"})
	if err != nil || r.Status != capacity.ReserveOK {
		t.Fatalf("reserve after SCRIPT FLUSH: %v, %v", r, err)
	}
	// Reserve and Heartbeat after the restart, Reserve after the flush: each
	// found its script gone and sent it again; failed calls are no reloads.
	if got := s.ScriptReloads() - reloads; got != 3 {
		t.Errorf("ScriptReloads rose by %d, want 3", got)
	}
}

func TestCapacityStoreRejectsBadInput(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	s := newStore(t, srv.Client(), redis.CapacityStoreOptions{})
	cases := []struct {
		name string
		err  error
		word string
	}{
		{"empty node", second(s.Reserve(ctx, capacity.Reservation{RID: "a"})), "node id"},
		{"brace in node", second(s.Reserve(ctx, capacity.Reservation{Node: "x}", RID: "a"})), "brace"},
		{"empty rid", second(s.Reserve(ctx, capacity.Reservation{Node: "n"})), "rid"},
		{"max below one", second(s.Reserve(ctx, capacity.Reservation{Node: "n", RID: "a", Max: -2})), "max: Invalid value: -2"},
		{"negative ttl", second(s.Reserve(ctx, capacity.Reservation{Node: "n", RID: "a", TTL: -time.Second})), "ttl: Invalid value: -1s"},
		{"sub-millisecond ttl", second(s.Reserve(ctx, capacity.Reservation{Node: "n", RID: "a", TTL: time.Microsecond})), "ttl: Invalid value: 1µs"},
		{"batch item", second(s.ReserveBatch(ctx, []capacity.Reservation{{Node: "n", RID: ""}}, capacity.AllOrNothing)), "rid"},
		{"ack empty rid", second(s.Ack(ctx, capacity.Ack{Node: "n"})), "rid"},
		{"ack huge seq", second(s.Ack(ctx, capacity.Ack{Node: "n", RID: "a", Seq: 1 << 60})), "Seq"},
		{"release empty node", second(s.Release(ctx, "", "a")), "node id"},
		{"heartbeat negative running", second(s.Heartbeat(ctx, "n", capacity.Heartbeat{Running: -1})), "heartbeat.running: Invalid value: -1"},
		{"heartbeat running MaxInt", second(s.Heartbeat(ctx, "n", capacity.Heartbeat{Running: math.MaxInt})), "heartbeat.running: Invalid value"},
		{"reserve max MaxInt", second(s.Reserve(ctx, capacity.Reservation{Node: "n", RID: "a", Max: math.MaxInt})), "max: Invalid value"},
		{"reserve max above MaxLimit", second(s.Reserve(ctx, capacity.Reservation{Node: "n", RID: "a", Max: capacity.MaxLimit + 1})), "max: Invalid value: 1025"},
		{"batch max above MaxLimit", second(s.ReserveBatch(ctx, []capacity.Reservation{{Node: "n", RID: "a", Max: capacity.MaxLimit + 1}}, capacity.Partial)), "max: Invalid value: 1025"},
		{"heartbeat max above MaxLimit", second(s.Heartbeat(ctx, "n", capacity.Heartbeat{Max: capacity.MaxLimit + 1})), "heartbeat.max: Invalid value: 1025"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !errors.Is(tc.err, capacity.ErrInvalidInput) || !strings.Contains(tc.err.Error(), tc.word) {
				t.Fatalf("err = %v, want ErrInvalidInput naming %q", tc.err, tc.word)
			}
		})
	}
	if _, err := redis.NewCapacityStore(ctx, srv.Client(), redis.CapacityStoreOptions{Prefix: "a{"}); !errors.Is(err, capacity.ErrInvalidOptions) {
		t.Errorf("prefix with a brace: %v", err)
	}
	if _, err := s.Heartbeat(ctx, "n", capacity.Heartbeat{Epoch: 1, Seq: 5}); err != nil {
		t.Fatal(err)
	}
	st, err := s.Heartbeat(ctx, "n", capacity.Heartbeat{Epoch: 1, Seq: 4})
	if !errors.Is(err, capacity.ErrSeqBackwards) || st != capacity.HeartbeatStale || !strings.Contains(err.Error(), "Seq 4") {
		t.Fatalf("backwards seq: %v %v", st, err)
	}
}

// sameReserve compares two answers, their times by instant.
func sameReserve(a, b capacity.ReserveResult) bool {
	return a.Status == b.Status && a.Epoch == b.Epoch && a.Load == b.Load && a.Expiry.Equal(b.Expiry) && a.EarliestExpiry.Equal(b.EarliestExpiry)
}

func second[A any](_ A, err error) error { return err }

// pendingLeases reads node's pending leases (rid → expiry in ms) straight
// from the node's hash: the fields other than the state field ” whose value
// is positive (an acked job's is its seq, negated).
func pendingLeases(t testing.TB, c goredis.Cmdable, node string) map[string]int64 {
	t.Helper()
	all, err := c.HGetAll(context.Background(), "{n:"+node+"}").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for f, v := range all {
		if n, err := strconv.ParseInt(v, 10, 64); f != "" && err == nil && n > 0 {
			out[f] = n
		}
	}
	return out
}

// TestCapacityStoreBatchMatchesMemoryStore sends the same large batches to the
// Redis store and to MemoryStore at the same instant: 49 items on 24 nodes, each
// node twice or more (so the client numbers nodes through its map, past 16,
// and the script takes its ZMSCORE and single-ZADD path), rids repeated
// inside the batch, rids already held or acked, and nodes of M = 1 that
// refuse, in both modes. Every item's answer must be the same.
func TestCapacityStoreBatchMatchesMemoryStore(t *testing.T) {
	srv := redistest.Start(t)
	batchMatchesMemoryStore(t, srv.Client(), false)
}

// TestCapacityStoreClusterOption turns Cluster mode on for a plain client
// (as for a proxy in front of a Cluster): the slot-grouped, pipelined batch
// answers as MemoryStore does. A client that cannot pipeline is refused.
func TestCapacityStoreClusterOption(t *testing.T) {
	srv := redistest.Start(t)
	batchMatchesMemoryStore(t, srv.Client(), true)
	_, err := redis.NewCapacityStore(context.Background(), struct{ goredis.Scripter }{srv.Client()}, redis.CapacityStoreOptions{Cluster: true})
	if !errors.Is(err, capacity.ErrInvalidOptions) || !strings.Contains(err.Error(), "Cluster") {
		t.Fatalf("Cluster with a client that cannot pipeline: %v", err)
	}
}

// batchMatchesMemoryStore is TestCapacityStoreBatchMatchesMemoryStore on the
// server(s) behind c, with the Cluster option as given; it returns the
// nodes the batches used. After the rounds, Loads of every node must match
// too.
func batchMatchesMemoryStore(t *testing.T, c goredis.Scripter, cluster bool) []string {
	ctx := context.Background()
	now := time.Date(2026, 1, 7, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	rs := newStore(t, c, redis.CapacityStoreOptions{Clock: fake.ClockFunc(clock), Cluster: cluster})
	ms, err := capacity.NewMemoryStore(capacity.MemoryStoreOptions{Clock: fake.ClockFunc(clock)})
	if err != nil {
		t.Fatal(err)
	}
	stores := []capacity.SlotStore{rs, ms}
	for _, s := range stores {
		seedBatchNodes(ctx, t, s)
	}
	// Rounds 0-2 send the script its 'full' form (items with their own
	// limits), round 3 its 'same' form (one limit, nodes repeated), round 4
	// its 'each' form (one limit, each item on its own node).
	for round, tc := range []struct {
		form string
		mode capacity.BatchMode
	}{{"full", capacity.AllOrNothing}, {"full", capacity.Partial}, {"full", capacity.Partial}, {"same", capacity.Partial}, {"each", capacity.Partial}} {
		now = now.Add(time.Second)
		items := batchItems(round, tc.form)
		if got := redis.BatchForm(rs, items); got != tc.form {
			t.Fatalf("round %d: the batch went in the %q form, want %q", round, got, tc.form)
		}
		compareBatch(ctx, t, stores, round, items, tc.mode)
	}
	var nodes []string
	for i := range 24 {
		nodes = append(nodes, batchNode(i))
	}
	compareLoads(ctx, t, stores, nodes)
	return nodes
}

func batchNode(i int) string { return fmt.Sprintf("node-%02d", i) }

// seedBatchNodes gives 24 nodes a heartbeat (some stating their M: equal to
// the batch's Max on every fourth node, 2 on the next, so some items are
// refused as a limit mismatch), a held lease on node-01 and an acked job on
// node-02.
func seedBatchNodes(ctx context.Context, t *testing.T, s capacity.SlotStore) {
	for i := range 24 {
		hb := capacity.Heartbeat{Epoch: 1, Seq: 1, Running: i % 3}
		switch i % 4 {
		case 0:
			hb.Max = 1 + i%5
		case 1:
			hb.Max = 2
		}
		if _, err := s.Heartbeat(ctx, batchNode(i), hb); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Reserve(ctx, capacity.Reservation{Node: batchNode(1), RID: "held"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reserve(ctx, capacity.Reservation{Node: batchNode(2), RID: "acked"}); err != nil {
		t.Fatal(err)
	}
	if st, err := s.Ack(ctx, capacity.Ack{Node: batchNode(2), RID: "acked", Epoch: 1, Seq: 2}); err != nil || st != capacity.AckOK {
		t.Fatal(st, err)
	}
}

// batchItems is round's batch in the script's given form. 'full': 48 items
// over the 24 nodes with limits of their own, a rid repeated on another
// node, the held and acked rids, and a rid twice. 'same': those items, all
// with limit 2. 'each': one item of limit 2 on each of the 24 nodes, the
// held and acked rids among them.
func batchItems(round int, form string) []capacity.Reservation {
	var items []capacity.Reservation
	if form == "each" {
		for n := range 24 {
			it := capacity.Reservation{Node: batchNode(n), RID: fmt.Sprintf("r%d-%d", round, n), Max: 2}
			switch n {
			case 1:
				it.RID = "held"
			case 2:
				it.RID = "acked"
			}
			items = append(items, it)
		}
		return items
	}
	for k := range 48 {
		n := (k * 7) % 24
		it := capacity.Reservation{Node: batchNode(n), RID: fmt.Sprintf("r%d-%d", round, k), Max: 1 + n%5}
		if form == "same" {
			it.Max = 2
		}
		switch k % 9 {
		case 3:
			it.RID = fmt.Sprintf("r%d-%d", round, k-1) // the previous item's rid, on another node
		case 5:
			it.Node, it.RID = batchNode(1), "held"
		case 7:
			it.Node, it.RID = batchNode(2), "acked"
		}
		items = append(items, it)
	}
	return append(items, items[0]) // a rid twice on one node
}

// compareBatch runs round's batch on both stores and compares every answer.
func compareBatch(ctx context.Context, t *testing.T, stores []capacity.SlotStore, round int, items []capacity.Reservation, mode capacity.BatchMode) {
	var got [2]capacity.BatchResult
	for i, s := range stores {
		var err error
		if got[i], err = s.ReserveBatch(ctx, items, mode); err != nil {
			t.Fatal(err)
		}
	}
	if got[0].Committed != got[1].Committed || len(got[0].Items) != len(got[1].Items) {
		t.Fatalf("round %d %v: redis %v, memory store %v", round, mode, got[0], got[1])
	}
	granted, mismatched := 0, 0
	for i := range got[0].Items {
		a, b := got[0].Items[i], got[1].Items[i]
		if !sameReserve(a, b) {
			t.Errorf("round %d %v item %d: redis %v, memory store %v", round, mode, i, a, b)
		}
		switch a.Status {
		case capacity.ReserveOK:
			granted++
		case capacity.ReserveLimitMismatch:
			mismatched++
		}
	}
	if mode == capacity.Partial && (granted == 0 || granted == len(got[0].Items)) {
		t.Errorf("round %d: %d of %d granted: the batch should mix grants and refusals", round, granted, len(got[0].Items))
	}
	if mismatched == 0 {
		t.Errorf("round %d: no limit mismatch to compare", round)
	}
}

// compareLoads compares both stores' loads of nodes, M included.
func compareLoads(ctx context.Context, t *testing.T, stores []capacity.SlotStore, nodes []string) {
	var loads [2][]capacity.NodeLoad
	for i, s := range stores {
		var err error
		if loads[i], err = s.Loads(ctx, nodes); err != nil {
			t.Fatal(err)
		}
	}
	pending := 0
	for i := range nodes {
		a, b := loads[0][i], loads[1][i]
		pending += a.Pending
		if a.Pending != b.Pending || a.AckedUncounted != b.AckedUncounted || a.Running != b.Running || a.Max != b.Max ||
			a.Epoch != b.Epoch || a.Seq != b.Seq || !a.HeartbeatAt.Equal(b.HeartbeatAt) {
			t.Errorf("loads of %s: redis %+v, memory store %+v", nodes[i], a, b)
		}
	}
	if pending == 0 {
		t.Error("no pending lease left to compare")
	}
}

// TestCapacityStoreOneLimit: the node's M lives in its heartbeat only, in the
// Lua scripts as in MemoryStore.
func TestCapacityStoreOneLimit(t *testing.T) {
	srv := redistest.Start(t)
	fresh := func(ctx context.Context) (capacity.SlotStore, error) {
		if err := srv.Client().FlushAll(ctx).Err(); err != nil {
			return nil, err
		}
		return newStore(t, srv.Client(), redis.CapacityStoreOptions{Options: capacity.Options{MaxJobs: 3}}), nil
	}
	for _, v := range fake.CheckOneLimit(context.Background(), fresh, "n", 3) {
		t.Error(v)
	}
}

// TestCapacityStoreZeroValue: a CapacityStore not made by NewCapacityStore
// answers every call with an error wrapping capacity.ErrNilStore.
func TestCapacityStoreZeroValue(t *testing.T) {
	ctx := context.Background()
	var s redis.CapacityStore
	errs := []error{
		second(s.Reserve(ctx, capacity.Reservation{Node: "n", RID: "r"})),
		second(s.ReserveBatch(ctx, nil, capacity.Partial)),
		second(s.Ack(ctx, capacity.Ack{Node: "n", RID: "r"})),
		second(s.Release(ctx, "n", "r")),
		second(s.Heartbeat(ctx, "n", capacity.Heartbeat{})),
		second(s.Loads(ctx, []string{"n"})),
		s.LoadScripts(ctx),
	}
	for i, err := range errs {
		if !errors.Is(err, capacity.ErrNilStore) || !errors.Is(err, capacity.ErrInvalidInput) {
			t.Errorf("call %d: err = %v, want ErrNilStore", i, err)
		}
	}
}

// TestCapacityStoreSeedClampsToOne: under capacity.Seed(), a zero or
// negative limit and TTL become 1 job and 1 s, as the seed's wrapper does.
func TestCapacityStoreSeedClampsToOne(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	now := time.Date(2026, 1, 7, 12, 0, 0, 0, time.UTC)
	s := newStore(t, srv.Client(), redis.CapacityStoreOptions{Options: capacity.Seed(), Clock: fake.ClockFunc(func() time.Time { return now })})
	r, err := s.Reserve(ctx, capacity.Reservation{Node: "n", RID: "a", Max: -3, TTL: -time.Second})
	if err != nil || r.Status != capacity.ReserveOK || !r.Expiry.Equal(now.Add(time.Second)) {
		t.Fatalf("first reserve: %v, %v; want ok for 1s", r, err)
	}
	if r, err := s.Reserve(ctx, capacity.Reservation{Node: "n", RID: "b"}); err != nil || r.Status != capacity.ReserveFull {
		t.Fatalf("second reserve: %v, %v; want full (limit 1)", r, err)
	}
}

// TestCapacityStoreStateBoundedByLimit: a node's hash holds its state field
// and at most M live leases after every call, however many reservations
// come and lapse (a call deletes the lapsed leases it reads), and M itself
// is at most capacity.MaxLimit, so a call's cost is bounded: a node cannot
// be filled with 80,000 leases. (Dropping the HDEL of lapsed leases from
// the reserve script makes the first check fail.)
func TestCapacityStoreStateBoundedByLimit(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	c := srv.Client()
	now := time.Date(2026, 1, 7, 12, 0, 0, 0, time.UTC)
	const m = 4
	s := newStore(t, c, redis.CapacityStoreOptions{Options: capacity.Options{MaxJobs: m, HeartbeatTimeout: time.Hour},
		Clock: fake.ClockFunc(func() time.Time { return now })})
	if _, err := s.Heartbeat(ctx, "n", capacity.Heartbeat{Epoch: 1, Seq: 1}); err != nil {
		t.Fatal(err)
	}
	granted := 0
	for round := range 50 {
		for k := range m + 2 {
			r, err := s.Reserve(ctx, capacity.Reservation{Node: "n", RID: fmt.Sprintf("r%d-%d", round, k), TTL: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if r.Status == capacity.ReserveOK {
				granted++
			}
			if n := c.HLen(ctx, "{n:n}").Val(); n > 1+m {
				t.Fatalf("round %d: the node's hash holds %d fields, want at most 1+M = %d", round, n, 1+m)
			}
		}
		now = now.Add(time.Second + time.Millisecond) // every lease lapses
	}
	if granted != 50*m {
		t.Errorf("granted %d leases, want %d", granted, 50*m)
	}

	// A node at the largest M fills up to exactly M leases.
	big := newStore(t, c, redis.CapacityStoreOptions{Options: capacity.Options{MaxJobs: capacity.MaxLimit}})
	if _, err := big.Heartbeat(ctx, "big", capacity.Heartbeat{Epoch: 1, Seq: 1}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for k := range capacity.MaxLimit + 1 {
		r, err := big.Reserve(ctx, capacity.Reservation{Node: "big", RID: "b" + strconv.Itoa(k)})
		if err != nil {
			t.Fatal(err)
		}
		if want := k < capacity.MaxLimit; r.Status.Granted() != want {
			t.Fatalf("reserve %d on a node of M = %d: %v", k, capacity.MaxLimit, r)
		}
	}
	t.Logf("filled a node of M = %d in %v", capacity.MaxLimit, time.Since(start))
	if _, err := big.Reserve(ctx, capacity.Reservation{Node: "big", RID: "x", Max: 80_000}); !errors.Is(err, capacity.ErrInvalidInput) {
		t.Fatalf("a limit of 80,000: %v, want ErrInvalidInput", err)
	}
}

// TestCapacityStoreReadsEarlierState: a node state written by an earlier
// revision of the scripts, which kept the heartbeat's seq as a string, still
// reads: its acked job counts against M, a reserve and a batch answer, and
// the next heartbeat and ACK apply. (Comparing the seq without converting it
// makes every call on such a node a script error.)
func TestCapacityStoreReadsEarlierState(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	c := srv.Client()
	now := time.Date(2026, 1, 7, 12, 0, 0, 0, time.UTC)
	s := newStore(t, c, redis.CapacityStoreOptions{Options: capacity.Options{HeartbeatTimeout: time.Hour},
		Clock: fake.ClockFunc(func() time.Time { return now })})
	ms := now.UnixMilli()
	// Heartbeat epoch 1 seq 5, running 0, M 2, an acked job at seq 6 that
	// the heartbeat has not counted; seq written as the string "5".
	err := c.Eval(ctx, `redis.call('HSET', KEYS[1], '', cmsgpack.pack(ARGV[1] + 3600000, '1', '5', 0, ARGV[1] + 0, 2, ARGV[1] + 3600000, ARGV[1] + 7200000, '- - - 0'), 'old', '-6') return 1`,
		[]string{"{n:old}"}, ms).Err()
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Reserve(ctx, capacity.Reservation{Node: "old", RID: "a"})
	if err != nil || r.Status != capacity.ReserveOK || r.Load != 2 || r.Epoch != 1 {
		t.Fatalf("reserve on an earlier state: %+v, %v; want ok at load 2 (the acked job counts), epoch 1", r, err)
	}
	b, err := s.ReserveBatch(ctx, []capacity.Reservation{{Node: "old", RID: "b"}}, capacity.Partial)
	if err != nil || b.Items[0].Status != capacity.ReserveFull {
		t.Fatalf("batch on an earlier state: %+v, %v; want full", b, err)
	}
	if st, err := s.Ack(ctx, capacity.Ack{Node: "old", RID: "a", Epoch: 1, Seq: 7}); err != nil || st != capacity.AckOK {
		t.Fatalf("ack on an earlier state: %v, %v", st, err)
	}
	if st, err := s.Heartbeat(ctx, "old", capacity.Heartbeat{Epoch: 1, Seq: 8, Running: 2, Max: 2}); err != nil || st != capacity.HeartbeatApplied {
		t.Fatalf("heartbeat on an earlier state: %v, %v", st, err)
	}
}
