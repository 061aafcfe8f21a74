package redis_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"regexp"
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
	goredis "github.com/redis/go-redis/v9"
)

// The benchmarks' workload: 50 clients, each one call at a time (no
// pipelining), reserving on nodes drawn uniformly from benchNodes, each with
// a fresh heartbeat stating M = benchMax, leases of benchTTL, every rid new.
// The key space is large enough that a node rarely holds more than a few
// live leases (about 1 at 60,000 reservations/s, 4 at 200,000 slots/s), so
// every call takes the accept path, as in a cluster with room; lapsed leases
// are common and are purged by the next call on their node.
const (
	benchNodes   = 50_000
	benchClients = 50
	benchMax     = 16
	benchTTL     = time.Second
)

func benchID(i int) string { return fmt.Sprintf("%012d", i) }

// benchClient is the one go-redis client every side of a comparison uses.
func benchClient(srv *redistest.Server) *goredis.Client {
	return srv.Client(func(o *goredis.Options) { o.PoolSize = benchClients + 10 })
}

// benchStore returns a store on c whose benchNodes nodes have a heartbeat
// that stays fresh for an hour.
func benchStore(b testing.TB, c goredis.Scripter) *redis.CapacityStore {
	s := newStore(b, c, redis.CapacityStoreOptions{Options: capacity.Options{HeartbeatTimeout: time.Hour}})
	ctx := context.Background()
	var next atomic.Int64
	runClients(b, benchNodes, func(*rand.Rand) error {
		_, err := s.Heartbeat(ctx, benchID(int(next.Add(1)-1)), capacity.Heartbeat{Epoch: 1, Seq: 1, Max: benchMax})
		return err
	})
	return s
}

// runClients runs n operations from benchClients goroutines, each one
// request at a time (no pipelining), and returns the elapsed time.
func runClients(tb testing.TB, n int, op func(r *rand.Rand) error) time.Duration {
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for c := range benchClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(c), uint64(time.Now().UnixNano())))
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

// benchRIDs numbers the benchmarks' rids: every reservation is a new job.
var benchRIDs atomic.Uint64

func newRID() string { return "job:" + strconv.FormatUint(benchRIDs.Add(1), 10) }

// refusals counts calls or items of a benchmark that were not granted.
type refusals struct{ n atomic.Int64 }

// reserveOne returns one client's Reserve of a new rid on a random node.
func reserveOne(s *redis.CapacityStore, ref *refusals) func(r *rand.Rand) error {
	ctx := context.Background()
	return func(r *rand.Rand) error {
		res, err := s.Reserve(ctx, capacity.Reservation{Node: benchID(r.IntN(benchNodes)), RID: newRID(), Max: benchMax, TTL: benchTTL})
		if err == nil && !res.Status.Granted() {
			ref.n.Add(1)
		}
		return err
	}
}

// reserveBatch returns one client's Partial batch of size new rids, perNode
// per node on consecutive nodes from a random one.
func reserveBatch(s *redis.CapacityStore, size, perNode int, ref *refusals) func(r *rand.Rand) error {
	ctx := context.Background()
	return func(r *rand.Rand) error {
		items := make([]capacity.Reservation, size)
		first := r.IntN(benchNodes)
		for k := range items {
			items[k] = capacity.Reservation{Node: benchID((first + k/perNode) % benchNodes), RID: newRID(), Max: benchMax, TTL: benchTTL}
		}
		res, err := s.ReserveBatch(ctx, items, capacity.Partial)
		if err == nil {
			ref.n.Add(int64(size - res.Granted()))
		}
		return err
	}
}

// seedReserve returns one client's call of the seed's script on a random
// node's own ZSET, with the seed's arguments: the client's clock, running 0
// (the seed passes the caller's copy of the heartbeat's count) and M.
func seedReserve(c goredis.Scripter, ref *refusals) func(r *rand.Rand) error {
	ctx := context.Background()
	sc := goredis.NewScript(seedReserveLua)
	ttl := benchTTL.Milliseconds()
	return func(r *rand.Rand) error {
		n, err := sc.Run(ctx, c, []string{"{n:" + benchID(r.IntN(benchNodes)) + "}:seed"},
			time.Now().UnixMilli(), ttl, 0, benchMax, newRID()).Int64()
		if err == nil && n != 1 {
			ref.n.Add(1)
		}
		return err
	}
}

// BenchmarkRedisReserve50Clients measures Reserve with 50 concurrent clients
// on the accept path. It reports slots/s, the Redis server's CPU time per
// slot and the time inside scripts per call (see serverCPU).
func BenchmarkRedisReserve50Clients(b *testing.B) {
	srv := redistest.Start(b)
	s := benchStore(b, benchClient(srv))
	var ref refusals
	m := startServerCPU(b, srv)
	b.ReportAllocs()
	b.ResetTimer()
	d := runClients(b, b.N, reserveOne(s, &ref))
	m.report(b, d, b.N)
	b.ReportMetric(float64(ref.n.Load()), "refused")
}

// BenchmarkRedisReserveBatch measures ReserveBatch with the same 50 clients,
// key space, M, TTL and rids as BenchmarkRedisReserve50Clients, in batches of
// 16 items on 16 distinct nodes. One op is one batch.
func BenchmarkRedisReserveBatch(b *testing.B) {
	benchBatch(b, 16, 1)
}

// BenchmarkRedisReserveBatchSameNode is BenchmarkRedisReserveBatch with the
// 16 items on 4 nodes, 4 each: each node's hash is read and written once.
func BenchmarkRedisReserveBatchSameNode(b *testing.B) {
	benchBatch(b, 16, 4)
}

func benchBatch(b *testing.B, size, perNode int) {
	srv := redistest.Start(b)
	s := benchStore(b, benchClient(srv))
	var ref refusals
	m := startServerCPU(b, srv)
	b.ReportAllocs()
	b.ResetTimer()
	d := runClients(b, b.N, reserveBatch(s, size, perNode, &ref))
	m.report(b, d, b.N*size)
	b.ReportMetric(float64(ref.n.Load()), "refused")
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
	cmdRe    = regexp.MustCompile(`cmdstat_([a-z|]+):calls=([0-9]+),usec=([0-9]+)`)
)

// innerTime returns, per command the scripts ran since the last reset
// (INFO commandstats without EVAL, EVALSHA and the benchmark's own INFO and
// CONFIG), its µs per script call.
func (m *serverCPU) innerTime(b testing.TB, scriptCalls float64) map[string]float64 {
	info, err := m.c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range cmdRe.FindAllStringSubmatch(info, -1) {
		name := f[1]
		if name == "eval" || name == "evalsha" || name == "info" || strings.HasPrefix(name, "config") {
			continue
		}
		u, _ := strconv.ParseFloat(f[3], 64)
		out[strings.ToUpper(name)] = u / scriptCalls
	}
	return out
}

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

// scriptTime returns the calls of EVALSHA and EVAL (after a NOSCRIPT) since
// the last reset and the microseconds spent inside them (INFO commandstats).
func (m *serverCPU) scriptTime(b testing.TB) (calls, usec float64) {
	info, err := m.c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range scriptRe.FindAllStringSubmatch(info, -1) {
		n, _ := strconv.ParseFloat(f[1], 64)
		u, _ := strconv.ParseFloat(f[2], 64)
		calls, usec = calls+n, usec+u
	}
	return calls, usec
}

// report records slots per second, server CPU microseconds per slot and
// microseconds spent inside the script per call.
func (m *serverCPU) report(b *testing.B, d time.Duration, slots int) {
	b.StopTimer()
	cpu := m.read(b) - m.start
	b.ReportMetric(float64(slots)/d.Seconds(), "slots/s")
	b.ReportMetric(cpu*1e6/float64(slots), "server-µs/slot")
	if calls, usec := m.scriptTime(b); calls > 0 {
		b.ReportMetric(usec/calls, "script-µs/call")
	}
}

// phase is one side of BenchmarkCapacityVsSeedScript's comparison.
type phase struct {
	name  string
	size  int // slots per call
	op    func(r *rand.Rand) error
	ref   *refusals
	rate  []float64            // granted slots per second, one per round
	usec  []float64            // µs inside the script per call (INFO commandstats)
	cpu   []float64            // server main-thread CPU µs per slot (INFO cpu)
	inner map[string][]float64 // per command the scripts ran: µs per script call, one per round
	loads []string
}

// BenchmarkCapacityVsSeedScript puts plancore's Redis store beside the seed
// scheduler's own reservation script (seedReserveLua), on one redis-server,
// through one go-redis client, from 50 goroutines: the seed's script,
// CapacityStore.Reserve and CapacityStore.ReserveBatch of 16 items on 16
// distinct nodes, one after the other in each round, over the same key
// space, M, TTL and fresh rids, all on the accept path. For each it reports
// granted slots per second, the µs spent inside the script per call (INFO
// commandstats, reset before each side) and the server's CPU µs per slot,
// and the ratios the targets are about: Reserve against the seed (target at
// least 1.0 in slots/s, at most 1.0 in script µs per call) and the batch
// against the seed (target at least 3 in slots/s). The load average at the
// start of each side is printed, since other processes share the machine.
// One run is one round; run three, alternating:
//
//	go test -run '^$' -bench CapacityVsSeedScript -count 3
//
// Each side makes CAPACITY_SEED_BENCH_N slots (default 150,000);
// CAPACITY_SEED_BENCH_STATS=1 prints each side's INFO commandstats (the
// commands its scripts ran, and their cost).
func BenchmarkCapacityVsSeedScript(b *testing.B) {
	n := 150_000
	if v, err := strconv.Atoi(os.Getenv("CAPACITY_SEED_BENCH_N")); err == nil && v > 0 {
		n = v
	}
	srv := redistest.Start(b)
	c := benchClient(srv)
	s := benchStore(b, c)
	phases := []*phase{
		{name: "seed script", size: 1, ref: &refusals{}},
		{name: "Reserve", size: 1, ref: &refusals{}},
		{name: "ReserveBatch(16)", size: 16, ref: &refusals{}},
	}
	phases[0].op = seedReserve(c, phases[0].ref)
	phases[1].op = reserveOne(s, phases[1].ref)
	phases[2].op = reserveBatch(s, 16, 1, phases[2].ref)
	b.ResetTimer()
	for range b.N {
		for _, p := range phases {
			p.run(b, srv, n)
		}
	}
	b.StopTimer()
	med := func(x []float64) float64 { y := slices.Clone(x); slices.Sort(y); return y[len(y)/2] }
	seed, one, batch := phases[0], phases[1], phases[2]
	for _, p := range phases {
		fmt.Printf("%-17s %8.0f slots/s  %6.2f script-µs/call  %6.2f server-µs/slot  refused %d  load %s\n",
			p.name, med(p.rate), med(p.usec), med(p.cpu), p.ref.n.Load(), strings.Join(p.loads, ", "))
		// Where a script call's time goes: each command it runs (median µs
		// per script call; a command run by some calls only counts its
		// share), and the rest: the Lua code, the cost of each redis.call
		// and of EVALSHA itself (arguments, reply).
		var parts []string
		inside := 0.0
		for _, cmd := range slices.Sorted(maps.Keys(p.inner)) {
			v := med(p.inner[cmd])
			inside += v
			parts = append(parts, fmt.Sprintf("%s %.2f", cmd, v))
		}
		fmt.Printf("  inside a call (µs): %s; commands %.2f, the rest %.2f\n", strings.Join(parts, ", "), inside, med(p.usec)-inside)
		key := strings.NewReplacer(" ", "-", "(", "", ")", "").Replace(p.name)
		b.ReportMetric(med(p.rate), key+"-slots/s")
		b.ReportMetric(med(p.usec), key+"-µs/call")
	}
	fmt.Printf("Reserve/seed: %.2f× slots/s (target ≥ 1), %.2f× script µs per call (target ≤ 1), %.2f× server CPU per slot; ReserveBatch(16)/seed: %.2f× slots/s (target ≥ 3), %.2f× server CPU per slot\n",
		med(one.rate)/med(seed.rate), med(one.usec)/med(seed.usec), med(one.cpu)/med(seed.cpu), med(batch.rate)/med(seed.rate), med(batch.cpu)/med(seed.cpu))
	b.ReportMetric(med(one.rate)/med(seed.rate), "reserve/seed")
	b.ReportMetric(med(batch.rate)/med(seed.rate), "batch/seed")
	for _, p := range phases {
		// A refused call would take the cheaper refusal path: the
		// comparison holds only on the accept path.
		if r := p.ref.n.Load(); r*1000 > int64(n*b.N) {
			b.Errorf("%s: %d of %d slots refused: the comparison is off the accept path", p.name, r, n*b.N)
		}
	}
}

// run makes n slots on side p and records its figures.
func (p *phase) run(b *testing.B, srv *redistest.Server, n int) {
	load, _ := os.ReadFile("/proc/loadavg")
	p.loads = append(p.loads, strings.Join(strings.Fields(string(load))[:1], ""))
	m := startServerCPU(b, srv)
	before := p.ref.n.Load()
	calls := n / p.size
	d := runClients(b, calls, p.op)
	cpu := m.read(b) - m.start
	granted := calls*p.size - int(p.ref.n.Load()-before)
	p.rate = append(p.rate, float64(granted)/d.Seconds())
	p.cpu = append(p.cpu, cpu*1e6/float64(calls*p.size))
	if c, u := m.scriptTime(b); c > 0 {
		p.usec = append(p.usec, u/c)
		if p.inner == nil {
			p.inner = map[string][]float64{}
		}
		for cmd, us := range m.innerTime(b, c) {
			p.inner[cmd] = append(p.inner[cmd], us)
		}
	}
	if os.Getenv("CAPACITY_SEED_BENCH_STATS") != "" {
		info, _ := m.c.Info(context.Background(), "commandstats").Result()
		fmt.Println(p.name, info)
	}
}
