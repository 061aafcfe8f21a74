package redis_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plancore/plancore/adapters/redis"
	"github.com/plancore/plancore/adapters/redis/internal/redistest"
	"github.com/plancore/plancore/capacity"
	"github.com/plancore/plancore/fake"
	goredis "github.com/redis/go-redis/v9"
)

// testCluster is a real Redis Cluster of three primaries (no replicas) on
// loopback, persistence off, owned by one test. Shard i serves the slots
// [i·16384/3, (i+1)·16384/3).
type testCluster struct {
	t     testing.TB
	ports []int
	procs []*clusterProc
	logs  []string // each shard's log file, printed when the test fails
}

type clusterProc struct {
	cmd  *exec.Cmd
	done chan struct{}
	log  string // the server's log file
}

const clusterShards = 3

// startCluster launches the shards, assigns each its slot range with CLUSTER
// ADDSLOTSRANGE, joins them with CLUSTER MEET and waits until every shard
// reports cluster_state:ok with all three nodes known.
func startCluster(t testing.TB) *testCluster {
	t.Helper()
	bin, err := redistest.BinaryPath()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tc := &testCluster{t: t}
	t.Cleanup(tc.stopAll)
	for i := range clusterShards {
		var err error
		for attempt := range 5 {
			port := clusterPort(t)
			if err = tc.launch(bin, dir, port); err == nil {
				break
			}
			if attempt == 4 {
				t.Fatalf("shard %d: %v", i, err)
			}
		}
	}
	ctx := context.Background()
	clients := make([]*goredis.Client, clusterShards)
	for i, p := range tc.ports {
		clients[i] = goredis.NewClient(&goredis.Options{Addr: clusterAddr(p), MaxRetries: -1})
		defer clients[i].Close()
		lo, hi := i*16384/clusterShards, (i+1)*16384/clusterShards-1
		if err := clients[i].Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			t.Fatalf("shard %d: CLUSTER ADDSLOTSRANGE %d %d: %v", i, lo, hi, err)
		}
	}
	for _, p := range tc.ports[1:] {
		if err := clients[0].ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(p)).Err(); err != nil {
			t.Fatalf("CLUSTER MEET %d: %v", p, err)
		}
	}
	tc.waitOK(t)
	t.Cleanup(func() {
		if t.Failed() {
			for i, p := range tc.logs {
				t.Logf("shard %d log: %s", i, redistest.LogTail(p, 20))
			}
		}
	})
	return tc
}

// waitOK waits until every live shard reports cluster_state:ok with every
// shard known and every slot served, and fails the test after 30 s.
func (tc *testCluster) waitOK(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; i < len(tc.ports); {
		if tc.procs[i] == nil {
			i++
			continue
		}
		c := goredis.NewClient(&goredis.Options{Addr: clusterAddr(tc.ports[i]), MaxRetries: -1})
		info, err := c.ClusterInfo(ctx).Result()
		_ = c.Close()
		if err == nil && strings.Contains(info, "cluster_state:ok") &&
			strings.Contains(info, fmt.Sprintf("cluster_known_nodes:%d", clusterShards)) &&
			strings.Contains(info, "cluster_slots_ok:16384") {
			i++
			continue
		}
		if time.Now().After(deadline) {
			t.Fatalf("shard %d never reached cluster_state:ok: %v\n%s\nlog: %s", i, err, info, redistest.LogTail(tc.logs[i], 20))
		}
		time.Sleep(20 * time.Millisecond) // waiting for gossip between real processes
	}
}

// clusterPort finds a free port whose cluster bus port (+10000) is free too.
func clusterPort(t testing.TB) int {
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if p+10000 > 65535 {
			continue
		}
		if bus, err := net.Listen("tcp", clusterAddr(p+10000)); err == nil {
			_ = bus.Close()
			return p
		}
	}
}

func clusterAddr(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

func (tc *testCluster) launch(bin, dir string, port int) error {
	p, err := launchRedis(bin, dir, port, "--cluster-enabled", "yes",
		"--cluster-config-file", filepath.Join(dir, "nodes-"+strconv.Itoa(port)+".conf"), "--cluster-node-timeout", "15000",
		"--cluster-require-full-coverage", "no", "--loglevel", "notice")
	if err != nil {
		return err
	}
	tc.ports = append(tc.ports, port)
	tc.procs = append(tc.procs, p)
	tc.logs = append(tc.logs, p.log)
	return nil
}

// launchRedis starts a redis-server on port with persistence off and extra
// arguments, and waits until it answers PING.
func launchRedis(bin, dir string, port int, extra ...string) (*clusterProc, error) {
	ps := strconv.Itoa(port)
	log := filepath.Join(dir, "redis-"+ps+".log")
	args := append([]string{"--port", ps, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir,
		"--daemonize", "no", "--loglevel", "warning", "--logfile", log}, extra...)
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &clusterProc{cmd: cmd, done: make(chan struct{}), log: log}
	go func() { _ = cmd.Wait(); close(p.done) }()
	if err := redistest.WaitReady(clusterAddr(port), cmd.Process.Pid, p.done, 10*time.Second); err != nil {
		p.kill()
		return nil, fmt.Errorf("redis-server on port %d: %w (log: %s)", port, err, redistest.LogTail(log, 5))
	}
	return p, nil
}

// kill stops the process and waits for it to exit.
func (p *clusterProc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// stop kills shard i and waits for it to exit.
func (tc *testCluster) stop(i int) {
	if p := tc.procs[i]; p != nil {
		p.kill()
		tc.procs[i] = nil
	}
}

func (tc *testCluster) stopAll() {
	for i := range tc.procs {
		tc.stop(i)
	}
}

// client returns a Cluster client, closed when the test ends.
func (tc *testCluster) client(opts ...func(*goredis.ClusterOptions)) *goredis.ClusterClient {
	o := &goredis.ClusterOptions{DialTimeout: 200 * time.Millisecond, ContextTimeoutEnabled: true}
	for _, p := range tc.ports {
		o.Addrs = append(o.Addrs, clusterAddr(p))
	}
	for _, f := range opts {
		f(o)
	}
	c := goredis.NewClusterClient(o)
	tc.t.Cleanup(func() { _ = c.Close() })
	return c
}

// shardOf is the shard that serves a node's keys.
func shardOf(node string) int { return redis.NodeSlot(node) * clusterShards / 16384 }

// fresh waits until the cluster is whole and empties every shard, so each
// subtest starts from an empty, healthy cluster.
func (tc *testCluster) fresh(t testing.TB, c *goredis.ClusterClient) {
	t.Helper()
	tc.waitOK(t)
	err := c.ForEachMaster(context.Background(), func(ctx context.Context, m *goredis.Client) error {
		return m.FlushAll(ctx).Err()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCapacityCluster runs the Cluster store's tests on one real cluster of
// three shards.
func TestCapacityCluster(t *testing.T) {
	tc := startCluster(t)
	c := tc.client()

	// The client-side slot of a node's keys is the server's.
	t.Run("slot", func(t *testing.T) {
		for _, n := range []string{"a", "node-07", "gpu-host-42.example", "ü", strings.Repeat("x", 300)} {
			for _, key := range []string{"{n:" + n + "}", "pre:{n:" + n + "}"} {
				got, err := c.ClusterKeySlot(context.Background(), key).Result()
				if err != nil {
					t.Fatal(err)
				}
				if int(got) != redis.NodeSlot(n) {
					t.Errorf("slot of %q: server %d, client %d", key, got, redis.NodeSlot(n))
				}
			}
		}
	})

	// The differential test of the standalone store, on the cluster: the
	// same batches and Loads answer as MemoryStore, item by item.
	t.Run("batch matches MemoryStore", func(t *testing.T) {
		tc.fresh(t, c)
		shards := map[int]bool{}
		for _, n := range batchMatchesMemoryStore(t, c, false) {
			shards[shardOf(n)] = true
		}
		if len(shards) != clusterShards {
			t.Errorf("the batches' nodes live on %d shards, want all %d", len(shards), clusterShards)
		}
	})

	t.Run("all or nothing compensates", func(t *testing.T) {
		tc.fresh(t, c)
		clusterCompensation(t, c)
	})

	t.Run("never oversells", func(t *testing.T) {
		tc.fresh(t, c)
		clusterNeverOversells(t, c)
	})

	// Every shard loses its script cache: each slot group's call is answered
	// NOSCRIPT and sent again with EVAL, once; nothing runs twice.
	t.Run("script cache loss", func(t *testing.T) {
		tc.fresh(t, c)
		ctx := context.Background()
		s := newStore(t, c, redis.CapacityStoreOptions{})
		var items []capacity.Reservation
		var nodes []string
		slots := map[int]bool{}
		for i := range 12 {
			n := "s" + strconv.Itoa(i)
			nodes = append(nodes, n)
			slots[redis.NodeSlot(n)] = true
			if _, err := s.Heartbeat(ctx, n, capacity.Heartbeat{Epoch: 1, Seq: 1}); err != nil {
				t.Fatal(err)
			}
			items = append(items, capacity.Reservation{Node: n, RID: "a", Max: 1})
		}
		err := c.ForEachMaster(ctx, func(ctx context.Context, m *goredis.Client) error { return m.ScriptFlush(ctx).Err() })
		if err != nil {
			t.Fatal(err)
		}
		before := s.ScriptReloads()
		res, err := s.ReserveBatch(ctx, items, capacity.AllOrNothing)
		if err != nil || !res.Committed || res.Granted() != len(items) {
			t.Fatalf("batch after SCRIPT FLUSH: %+v, %v", res, err)
		}
		if got := s.ScriptReloads() - before; got != uint64(len(slots)) {
			t.Errorf("ScriptReloads rose by %d, want one per slot group (%d)", got, len(slots))
		}
		// M = 1: had any call run twice, its node would answer duplicate.
		loads, err := s.Loads(ctx, nodes)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range loads {
			if l.Pending != 1 {
				t.Errorf("node %s: %d pending, want 1", l.ID, l.Pending)
			}
		}
	})

	// WAIT runs per shard; these shards have no replica, so a waiting batch
	// fails closed on every shard, and a waiting Reserve too.
	t.Run("wait without replicas", func(t *testing.T) {
		tc.fresh(t, c)
		ctx := context.Background()
		s := newStore(t, c, redis.CapacityStoreOptions{WaitReplicas: 1, WaitTimeout: 5 * time.Millisecond})
		var items []capacity.Reservation
		for i := range 6 {
			n := "w" + strconv.Itoa(i)
			if _, err := s.Heartbeat(ctx, n, capacity.Heartbeat{Epoch: 1, Seq: 1}); err != nil {
				t.Fatal(err)
			}
			items = append(items, capacity.Reservation{Node: n, RID: "a"})
		}
		res, err := s.ReserveBatch(ctx, items, capacity.Partial)
		if !errors.Is(err, capacity.ErrStoreUnavailable) || res.Granted() != 0 || strings.Count(err.Error(), "0 of 1 replicas") != len(items) {
			t.Fatalf("waiting batch without replicas: %+v, %v", res, err)
		}
		if r, err := s.Reserve(ctx, capacity.Reservation{Node: "w0", RID: "b"}); !errors.Is(err, capacity.ErrStoreUnavailable) || r.Status.Granted() {
			t.Fatalf("waiting reserve without replicas: %v, %v", r, err)
		}
	})

	// Last: it stops a shard. (A Redis Cluster primary reports
	// cluster_state:ok only 2 s after it starts, so the subtests share one
	// cluster.)
	t.Run("shard down", func(t *testing.T) {
		tc.fresh(t, c)
		clusterShardDown(t, tc)
	})
}

// slotTwin returns a node id other than node whose keys share node's slot.
func slotTwin(node string) string {
	for i := 0; ; i++ {
		id := "twin-" + strconv.Itoa(i)
		if redis.NodeSlot(id) == redis.NodeSlot(node) {
			return id
		}
	}
}

// pendOf returns the rids pending on node, sorted, read from the cluster
// directly.
func pendOf(t testing.TB, c *goredis.ClusterClient, node string) []string {
	t.Helper()
	return slices.Sorted(maps.Keys(pendingLeases(t, c, node)))
}

// clusterCompensation refuses one item of an all-or-nothing batch whose
// items span every shard and, on the refused item's shard, a second node in
// the same slot: the grants of the other slots are released again, the
// refused slot writes nothing, every answer still equals MemoryStore's, and
// nothing of the batch stays behind. Partial mode keeps the grants.
func clusterCompensation(t *testing.T, c *goredis.ClusterClient) {
	ctx := context.Background()
	now := time.Date(2026, 1, 7, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	rs := newStore(t, c, redis.CapacityStoreOptions{Clock: fake.ClockFunc(clock)})
	ms, err := capacity.NewMemoryStore(capacity.MemoryStoreOptions{Clock: fake.ClockFunc(clock)})
	if err != nil {
		t.Fatal(err)
	}
	// One node per shard, then the full node and its slot twin.
	var nodes []string
	for i := 0; len(nodes) < clusterShards; i++ {
		n := "n" + strconv.Itoa(i)
		if shardOf(n) == len(nodes) {
			nodes = append(nodes, n)
		}
	}
	full := nodes[0]
	twin := slotTwin(full)
	for _, s := range []capacity.SlotStore{rs, ms} {
		for _, n := range append([]string{twin}, nodes...) {
			if _, err := s.Heartbeat(ctx, n, capacity.Heartbeat{Epoch: 1, Seq: 1}); err != nil {
				t.Fatal(err)
			}
		}
		if r, err := s.Reserve(ctx, capacity.Reservation{Node: full, RID: "old", Max: 1}); err != nil || r.Status != capacity.ReserveOK {
			t.Fatal(r, err)
		}
	}
	items := []capacity.Reservation{
		{Node: nodes[1], RID: "a"}, {Node: twin, RID: "b"}, {Node: nodes[2], RID: "c"},
		{Node: nodes[1], RID: "d"}, {Node: full, RID: "e", Max: 1}, {Node: nodes[2], RID: "f"},
	}
	for _, mode := range []capacity.BatchMode{capacity.AllOrNothing, capacity.Partial} {
		var got [2]capacity.BatchResult
		for i, s := range []capacity.SlotStore{rs, ms} {
			if got[i], err = s.ReserveBatch(ctx, items, mode); err != nil {
				t.Fatal(err)
			}
		}
		if got[0].Committed != got[1].Committed || got[0].Committed != (mode == capacity.Partial) {
			t.Fatalf("%v: committed redis %v, memory store %v", mode, got[0].Committed, got[1].Committed)
		}
		for i := range items {
			if a, b := got[0].Items[i], got[1].Items[i]; !sameReserve(a, b) {
				t.Errorf("%v item %d: redis %v, memory store %v", mode, i, a, b)
			}
		}
		if s := got[0].Items[4].Status; s != capacity.ReserveFull {
			t.Fatalf("%v: the full node answered %v", mode, s)
		}
		want := map[string]string{nodes[1]: "", twin: "", nodes[2]: "", full: "old"}
		if mode == capacity.Partial {
			want = map[string]string{nodes[1]: "a d", twin: "b", nodes[2]: "c f", full: "old"}
		}
		for n, w := range want {
			if got := strings.Join(pendOf(t, c, n), " "); got != w {
				t.Errorf("%v: node %s (shard %d) holds [%s], want [%s]", mode, n, shardOf(n), got, w)
			}
		}
	}
}

// clusterNeverOversells races goroutines sending batches in both modes, on
// Redis TIME, over nodes of every shard with small M: the leases callers
// hold on a node never exceed M − running, although compensation briefly
// leaves refused batches' grants in place; once every caller has released
// its leases, no lease remains.
func clusterNeverOversells(t *testing.T, c *goredis.ClusterClient) {
	const (
		workers = 8
		rounds  = 60
		nNodes  = 9
		maxJobs = 3
	)
	ctx := context.Background()
	s := newStore(t, c, redis.CapacityStoreOptions{Options: capacity.Options{TTL: time.Minute}})
	nodes := make([]string, nNodes)
	var held [nNodes]atomic.Int32
	for i := range nodes {
		nodes[i] = "race-" + strconv.Itoa(i)
		if _, err := s.Heartbeat(ctx, nodes[i], capacity.Heartbeat{Epoch: 1, Seq: 1, Running: i % 2}); err != nil {
			t.Fatal(err)
		}
	}
	var grants, refusedBatches atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 11))
			for round := range rounds {
				items := make([]capacity.Reservation, 2+r.IntN(5))
				idx := make([]int, len(items))
				for k := range items {
					idx[k] = r.IntN(nNodes)
					items[k] = capacity.Reservation{Node: nodes[idx[k]], RID: fmt.Sprintf("w%d-%d-%d", w, round, k), Max: maxJobs}
				}
				mode := []capacity.BatchMode{capacity.AllOrNothing, capacity.Partial}[r.IntN(2)]
				res, err := s.ReserveBatch(ctx, items, mode)
				if err != nil {
					t.Error(err)
					return
				}
				if !res.Committed {
					refusedBatches.Add(1)
				}
				var mine []int
				for k, it := range res.Items {
					if !res.Committed || it.Status != capacity.ReserveOK {
						continue
					}
					mine = append(mine, k)
					grants.Add(1)
					if h := held[idx[k]].Add(1); int(h) > maxJobs-idx[k]%2 {
						t.Errorf("node %s: %d leases held, M − running = %d", nodes[idx[k]], h, maxJobs-idx[k]%2)
					}
				}
				for _, k := range mine {
					held[idx[k]].Add(-1)
					if _, err := s.Release(ctx, items[k].Node, items[k].RID); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	loads, err := s.Loads(ctx, nodes)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range loads {
		if l.Pending != 0 {
			t.Errorf("node %s keeps %d leases after every caller released", l.ID, l.Pending)
		}
	}
	if grants.Load() == 0 || refusedBatches.Load() == 0 {
		t.Errorf("%d grants, %d refused batches: the race should have both", grants.Load(), refusedBatches.Load())
	}
	t.Logf("%d batches, %d grants, %d uncommitted", workers*rounds, grants.Load(), refusedBatches.Load())
}

// clusterShardDown stops one shard of three: a batch over nodes of every
// shard, in either mode, is an error wrapping ErrStoreUnavailable with no
// lease, and the leases the live shards granted are released again.
func clusterShardDown(t *testing.T, tc *testCluster) {
	ctx := context.Background()
	// Fail fast: no redirect retries, one dial attempt.
	c := tc.client(func(o *goredis.ClusterOptions) { o.MaxRedirects, o.DialerRetries = -1, 1 })
	s := newStore(t, c, redis.CapacityStoreOptions{})
	var nodes []string
	for i := 0; len(nodes) < 2*clusterShards; i++ {
		n := "d" + strconv.Itoa(i)
		if shardOf(n) == len(nodes)%clusterShards {
			nodes = append(nodes, n)
		}
	}
	for _, n := range nodes {
		if _, err := s.Heartbeat(ctx, n, capacity.Heartbeat{Epoch: 1, Seq: 1}); err != nil {
			t.Fatal(err)
		}
	}
	tc.stop(2)
	for _, mode := range []capacity.BatchMode{capacity.AllOrNothing, capacity.Partial} {
		var items []capacity.Reservation
		for i, n := range nodes {
			items = append(items, capacity.Reservation{Node: n, RID: fmt.Sprintf("%v-%d", mode, i)})
		}
		start := time.Now()
		res, err := s.ReserveBatch(ctx, items, mode)
		if !errors.Is(err, capacity.ErrStoreUnavailable) || res.Granted() != 0 || res.Items != nil {
			t.Fatalf("%v batch with a shard down: %+v, %v", mode, res, err)
		}
		t.Logf("%v: error after %v: %v", mode, time.Since(start), err)
		for _, n := range nodes {
			if shardOf(n) != 2 {
				if p := pendOf(t, c, n); len(p) != 0 {
					t.Errorf("%v: live node %s keeps %v", mode, n, p)
				}
			}
		}
	}
	if _, err := s.Loads(ctx, nodes); !errors.Is(err, capacity.ErrStoreUnavailable) {
		t.Fatalf("loads with a shard down: %v", err)
	}
	// The live shards still serve their own nodes.
	r, err := s.Reserve(ctx, capacity.Reservation{Node: nodes[0], RID: "x"})
	if err != nil || r.Status != capacity.ReserveOK {
		t.Fatalf("reserve on a live shard: %v, %v", r, err)
	}
}

// BenchmarkRedisReserveBatchCluster is BenchmarkRedisReserveBatch (50
// clients, batches of 16 items on 16 distinct nodes, partial, accept
// path) on a three-shard Cluster: each batch is about 16 slot groups,
// pipelined to the three shards concurrently. Compare its slots/s with
// BenchmarkRedisReserveBatch's in one invocation:
//
//	go test ./redis -run '^$' -bench 'RedisReserveBatch(Cluster)?$'
func BenchmarkRedisReserveBatchCluster(b *testing.B) {
	tc := startCluster(b)
	c := tc.client(func(o *goredis.ClusterOptions) { o.PoolSize = benchClients + 10 })
	s := benchStore(b, c)
	var ref refusals
	b.ReportAllocs()
	b.ResetTimer()
	d := runClients(b, b.N, reserveBatch(s, 16, 1, &ref))
	b.StopTimer()
	b.ReportMetric(float64(b.N*16-int(ref.n.Load()))/d.Seconds(), "slots/s")
}

// TestCapacityStoreWaitReplicas runs a standalone primary with one replica
// (a second redis-server started with --replicaof): with WaitReplicas 1,
// every lease Reserve and ReserveBatch return is already on the replica.
// With the replica stopped, the same calls fail closed: an error wrapping
// ErrStoreUnavailable after WaitTimeout, never a lease, also on retry.
func TestCapacityStoreWaitReplicas(t *testing.T) {
	ctx := context.Background()
	primary := redistest.Start(t)
	bin, err := redistest.BinaryPath()
	if err != nil {
		t.Fatal(err)
	}
	// Redis 7 delays a diskless initial sync by 5 s for more replicas to join.
	if err := primary.Client().ConfigSet(ctx, "repl-diskless-sync-delay", "0").Err(); err != nil {
		t.Fatal(err)
	}
	port := clusterPort(t)
	host, pport, _ := net.SplitHostPort(primary.Addr())
	rp, err := launchRedis(bin, t.TempDir(), port, "--replicaof", host, pport)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rp.kill)
	replica := goredis.NewClient(&goredis.Options{Addr: clusterAddr(port), MaxRetries: -1})
	defer replica.Close()
	for deadline := time.Now().Add(10 * time.Second); ; {
		info, _ := replica.Info(ctx, "replication").Result()
		if strings.Contains(info, "master_link_status:up") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica never linked: %s", info)
		}
		time.Sleep(20 * time.Millisecond) // waiting for the initial sync of a real replica
	}
	if _, err := redis.NewCapacityStore(ctx, primary.Client(), redis.CapacityStoreOptions{WaitReplicas: 1, WaitTimeout: time.Microsecond}); !errors.Is(err, capacity.ErrInvalidOptions) {
		t.Fatalf("WaitTimeout 1µs: %v", err)
	}
	s := newStore(t, primary.Client(), redis.CapacityStoreOptions{WaitReplicas: 1, WaitTimeout: 2 * time.Second})
	onReplica := func(node, rid string) bool {
		_, ok := pendingLeases(t, replica, node)[rid]
		return ok
	}
	for _, n := range []string{"n1", "n2", "n3"} {
		if _, err := s.Heartbeat(ctx, n, capacity.Heartbeat{Epoch: 1, Seq: 1}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 {
		rid := "r" + strconv.Itoa(i)
		r, err := s.Reserve(ctx, capacity.Reservation{Node: "n1", RID: rid, Max: 100})
		if err != nil || r.Status != capacity.ReserveOK {
			t.Fatalf("reserve with a replica: %v, %v", r, err)
		}
		if !onReplica("n1", rid) {
			t.Fatalf("lease %s granted before the replica had it", rid)
		}
		items := []capacity.Reservation{{Node: "n2", RID: rid, Max: 100}, {Node: "n3", RID: rid, Max: 100}}
		b, err := s.ReserveBatch(ctx, items, capacity.Partial)
		if err != nil || b.Granted() != 2 {
			t.Fatalf("batch with a replica: %+v, %v", b, err)
		}
		if !onReplica("n2", rid) || !onReplica("n3", rid) {
			t.Fatalf("batch %s granted before the replica had it", rid)
		}
	}

	rp.kill()
	short := newStore(t, primary.Client(), redis.CapacityStoreOptions{WaitReplicas: 1, WaitTimeout: 30 * time.Millisecond})
	for range 2 { // the retry of the same rid fails too
		start := time.Now()
		r, err := short.Reserve(ctx, capacity.Reservation{Node: "n1", RID: "lost", Max: 100})
		if !errors.Is(err, capacity.ErrStoreUnavailable) || r.Status.Granted() || !strings.Contains(err.Error(), "0 of 1 replicas") {
			t.Fatalf("reserve without the replica: %v, %v", r, err)
		}
		if d := time.Since(start); d < 30*time.Millisecond {
			t.Errorf("reserve failed after %v, before WaitTimeout", d)
		}
		b, err := short.ReserveBatch(ctx, []capacity.Reservation{{Node: "n2", RID: "lost"}}, capacity.AllOrNothing)
		if !errors.Is(err, capacity.ErrStoreUnavailable) || b.Granted() != 0 {
			t.Fatalf("batch without the replica: %+v, %v", b, err)
		}
	}
	// With the default (every replica ROLE lists) and the replica gone, a
	// store answers at once.
	if r, err := newStore(t, primary.Client(), redis.CapacityStoreOptions{}).Reserve(ctx, capacity.Reservation{Node: "n1", RID: "x", Max: 100}); err != nil || r.Status != capacity.ReserveOK {
		t.Fatalf("reserve without WAIT: %v, %v", r, err)
	}
}
