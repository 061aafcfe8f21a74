package redis_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plancore/plancore/adapters/redis"
	"github.com/plancore/plancore/adapters/redis/internal/redistest"
	"github.com/plancore/plancore/capacity"
	goredis "github.com/redis/go-redis/v9"
)

// benchNodes is the key space shared with redis-benchmark's -r 1000: ids
// 000000000000 to 000000000999, each with a heartbeat that stays fresh for an
// hour, and M so large that every reserve takes the accept path.
const (
	benchNodes   = 1000
	benchClients = 50
	benchMax     = 1_000_000_000
)

func benchID(i int) string { return fmt.Sprintf("%012d", i) }

func benchStore(b testing.TB) (*redistest.Server, *redis.CapacityStore) {
	srv := redistest.Start(b)
	c := srv.Client(func(o *goredis.Options) { o.PoolSize = benchClients + 10 })
	s := newStore(b, c, redis.CapacityStoreOptions{Options: capacity.Options{HeartbeatTimeout: time.Hour}})
	ctx := context.Background()
	for i := range benchNodes {
		if _, err := s.Heartbeat(ctx, benchID(i), capacity.Heartbeat{Epoch: 1, Seq: 1}); err != nil {
			b.Fatal(err)
		}
	}
	return srv, s
}

// runClients runs n reservations from benchClients goroutines, each one
// request at a time (no pipelining), and returns the elapsed time.
func runClients(tb testing.TB, n int, op func(r *rand.Rand) error) time.Duration {
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for c := range benchClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(c), 7))
			for next.Add(1) <= int64(n) {
				if err := op(r); err != nil {
					tb.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start)
}

func reserveOne(s *redis.CapacityStore) func(r *rand.Rand) error {
	ctx := context.Background()
	return func(r *rand.Rand) error {
		res, err := s.Reserve(ctx, capacity.Reservation{Node: benchID(r.IntN(benchNodes)),
			RID: "job:" + benchID(r.IntN(benchNodes)), Max: benchMax, TTL: 5 * time.Second})
		if err == nil && !res.Status.Granted() {
			err = fmt.Errorf("reserve refused: %v", res)
		}
		return err
	}
}

// BenchmarkRedisReserve50Clients measures Reserve with 50 concurrent clients
// on the accept path; compare with BenchmarkCapacityRedisSideBySide.
// It reports slots/s and the Redis server's CPU time per slot exactly as
// BenchmarkRedisReserveBatch does, so the two compare directly:
// run them in one invocation,
//
//	go test ./redis -run '^$' -bench 'RedisReserve(50Clients|Batch)$' -count=5
func BenchmarkRedisReserve50Clients(b *testing.B) {
	srv, s := benchStore(b)
	m := startServerCPU(b, srv)
	b.ReportAllocs()
	b.ResetTimer()
	d := runClients(b, b.N, reserveOne(s))
	m.report(b, d, b.N)
}

// BenchmarkRedisReserveBatch measures ReserveBatch with the same 50 clients,
// key space, M, TTL and rids as BenchmarkRedisReserve50Clients, in batches of
// 16 items on 16 distinct nodes (the target: at least 3 × the single-Reserve
// rate in slots per second). One op is one batch.
func BenchmarkRedisReserveBatch(b *testing.B) {
	benchBatch(b, 16, 1)
}

// BenchmarkRedisReserveBatchSameNode is BenchmarkRedisReserveBatch with the
// 16 items on 4 nodes, 4 each: the script looks each node's rids up with one
// ZMSCORE and writes its leases with one ZADD.
func BenchmarkRedisReserveBatchSameNode(b *testing.B) {
	benchBatch(b, 16, 4)
}

func benchBatch(b *testing.B, size, perNode int) {
	srv, s := benchStore(b)
	m := startServerCPU(b, srv)
	b.ReportAllocs()
	b.ResetTimer()
	d := runClients(b, b.N, reserveBatch(s, size, perNode))
	m.report(b, d, b.N*size)
}

// reserveBatch returns one client's all-or-nothing batch of size items,
// perNode per node on consecutive nodes, rids drawn as reserveOne draws them.
func reserveBatch(s *redis.CapacityStore, size, perNode int) func(r *rand.Rand) error {
	ctx := context.Background()
	return func(r *rand.Rand) error {
		items := make([]capacity.Reservation, size)
		first := r.IntN(benchNodes)
		for k := range items {
			items[k] = capacity.Reservation{Node: benchID((first + k/perNode) % benchNodes), RID: "job:" + benchID(r.IntN(benchNodes)),
				Max: benchMax, TTL: 5 * time.Second}
		}
		res, err := s.ReserveBatch(ctx, items, capacity.AllOrNothing)
		if err == nil && res.Granted() != size {
			err = fmt.Errorf("batch not fully granted: %+v", res)
		}
		return err
	}
}

// serverCPU reads the Redis main thread's CPU time (INFO cpu), which
// contention from other processes on a shared machine barely disturbs,
// unlike wall-clock rates, and the time spent inside scripts (INFO
// commandstats, reset at the start), so that a report separates the
// scripts' own cost from the server's parsing and network I/O.
type serverCPU struct {
	c     *goredis.Client
	start float64
}

var (
	cpuRe    = regexp.MustCompile(`used_cpu_(?:sys|user)_main_thread:([0-9.]+)`)
	scriptRe = regexp.MustCompile(`cmdstat_eval(?:sha)?:calls=([0-9]+),usec=([0-9]+)`)
)

func startServerCPU(b testing.TB, srv *redistest.Server) *serverCPU {
	m := &serverCPU{c: srv.Client()}
	if err := m.c.ConfigResetStat(context.Background()).Err(); err != nil {
		b.Fatal(err)
	}
	m.start = m.read(b)
	return m
}

func (m *serverCPU) read(b testing.TB) float64 {
	info, err := m.c.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	sum := 0.0
	for _, f := range cpuRe.FindAllStringSubmatch(info, -1) {
		v, _ := strconv.ParseFloat(f[1], 64)
		sum += v
	}
	return sum
}

// report records slots per second, server CPU microseconds per slot and
// microseconds spent inside the script per call (EVALSHA, plus EVAL after a
// NOSCRIPT).
func (m *serverCPU) report(b *testing.B, d time.Duration, slots int) {
	b.StopTimer()
	cpu := m.read(b) - m.start
	b.ReportMetric(float64(slots)/d.Seconds(), "slots/s")
	b.ReportMetric(cpu*1e6/float64(slots), "server-µs/slot")
	info, err := m.c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var calls, usec float64
	for _, f := range scriptRe.FindAllStringSubmatch(info, -1) {
		n, _ := strconv.ParseFloat(f[1], 64)
		u, _ := strconv.ParseFloat(f[2], 64)
		calls, usec = calls+n, usec+u
	}
	if calls > 0 {
		b.ReportMetric(usec/calls, "script-µs/call")
	}
}

// BenchmarkCapacityRedisSideBySide is the single-Reserve latency helper, a measurement
// rather than a test: on one server, with the same script (by SHA), argument
// shapes and key space, it alternates redis-benchmark -c 50 -n N EVALSHA and the
// Go store's Reserve from 50 goroutines, three times each, and prints both
// medians and their ratio (target: ours ≥ 0.7×). It also prints the batch rate
// in slots per second (target: ≥ 3× single). One run is the whole comparison,
// so run it with -benchtime=1x:
//
//	go test ./redis -run '^$' -bench CapacityRedisSideBySide -benchtime=1x
//
// N defaults to 200,000 (CAPACITY_REDIS_BENCH_N overrides it).
func BenchmarkCapacityRedisSideBySide(t *testing.B) {
	bench, err := exec.LookPath("redis-benchmark")
	if err != nil {
		t.Fatal("redis-benchmark not found (Debian package redis-tools)")
	}
	n := 200_000
	if v, err := strconv.Atoi(os.Getenv("CAPACITY_REDIS_BENCH_N")); err == nil && v > 0 {
		n = v
	}
	srv, s := benchStore(t)
	host, port, _ := splitHostPort(srv.Addr())
	sha := redis.CapacityReserveSHA()
	rps := regexp.MustCompile(`([0-9.]+) requests per second`)
	var theirs, ours, batch []float64
	for range 3 {
		out, err := exec.Command(bench, "-h", host, "-p", port, "-c", strconv.Itoa(benchClients), "-n", strconv.Itoa(n),
			"-r", strconv.Itoa(benchNodes), "-q",
			"EVALSHA", sha, "3", "{n:__rand_int__}:hb", "{n:__rand_int__}:pend", "{n:__rand_int__}:acked",
			"job:__rand_int__", strconv.Itoa(benchMax), "5000", "3600000", "sum", "0", "").CombinedOutput()
		m := rps.FindSubmatch(out)
		if err != nil || m == nil {
			t.Fatalf("redis-benchmark: %v\n%s", err, out)
		}
		f, _ := strconv.ParseFloat(string(m[1]), 64)
		theirs = append(theirs, f)
		d := runClients(t, n, reserveOne(s))
		ours = append(ours, float64(n)/d.Seconds())
	}
	for range 3 {
		const size = 16
		calls := n / size
		d := runClients(t, calls, reserveBatch(s, size, 1))
		batch = append(batch, float64(calls*size)/d.Seconds())
	}
	med := func(x []float64) float64 { y := slices.Clone(x); slices.Sort(y); return y[len(y)/2] }
	fmt.Printf("redis-benchmark EVALSHA reserve, 50 clients: %v → median %.0f req/s\n", round(theirs), med(theirs))
	fmt.Printf("Go CapacityStore.Reserve, 50 clients:        %v → median %.0f req/s\n", round(ours), med(ours))
	fmt.Printf("ratio ours/redis-benchmark: %.2f (target ≥ 0.70)\n", med(ours)/med(theirs))
	fmt.Printf("Go CapacityStore.ReserveBatch(16), 50 clients: %v → median %.0f slots/s, %.2f× single (target ≥ 3)\n",
		round(batch), med(batch), med(batch)/med(ours))
	t.ReportMetric(med(theirs), "redis-benchmark-req/s")
	t.ReportMetric(med(ours), "store-req/s")
	t.ReportMetric(med(ours)/med(theirs), "ratio")
	t.ReportMetric(med(batch)/med(ours), "batch-vs-single")
}

func round(x []float64) []int {
	out := make([]int, len(x))
	for i, v := range x {
		out[i] = int(v)
	}
	return out
}

func splitHostPort(addr string) (string, string, error) {
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == ':' {
			return addr[:i], addr[i+1:], nil
		}
	}
	return addr, "", fmt.Errorf("no port in %q", addr)
}
