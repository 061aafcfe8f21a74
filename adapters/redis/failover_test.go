package redis_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/plancore/plancore/adapters/redis"
	"github.com/plancore/plancore/adapters/redis/internal/redistest"
	"github.com/plancore/plancore/capacity"
	"github.com/plancore/plancore/lock"
)

// The failover test's workload: foNodes nodes of foMax slots each, foLockKeys
// lock keys, leases and locks long enough to outlive the test.
const (
	foNodes     = 40
	foMax       = 4
	foLockKeys  = 256
	foReservers = 4
	foLockers   = 3
)

// TestFailover runs Jepsen's Redis experiment in miniature: a primary and a
// replica on loopback, concurrent reservers (capacity store) and lockers
// (lock store) on the primary, the primary killed (by its pid) mid-load, the
// replica promoted (REPLICAOF NO ONE) and every client repointed to it; the
// load goes on there, then every node is filled and every lock key tried
// once more. It counts what the old primary acknowledged and the promoted
// replica does not have (lost grants), nodes granted more than M slots in
// all (oversold), locks acknowledged to two holders at once (double
// holders) and fencing epochs acknowledged twice for one lock (reissued).
//
// To make the loss certain rather than lucky, the replica's link to the
// primary runs through a proxy in the test, which for the last moments
// before the kill drops what the primary sends (the replica stays
// connected, so ROLE still lists it): a network that delays replication.
// With the defaults every count is 0: the stores' WAIT cannot be satisfied
// during the hold, so they answer with errors, not grants. With
// AcceptLossOnFailover the grants of the hold are acknowledged and lost,
// and every count is above 0: the test can fail. Sending no WAIT by
// default (the stores' old behaviour) fails the defaults case.
func TestFailover(t *testing.T) {
	for _, tc := range []struct {
		name       string
		acceptLoss bool
	}{{"defaults", false}, {"acceptLossOnFailover", true}} {
		t.Run(tc.name, func(t *testing.T) {
			r := startFailoverRig(t, tc.acceptLoss)
			c := r.run()
			t.Logf("%s: %+v", tc.name, c)
			if !tc.acceptLoss {
				if c.Lost != 0 || c.Oversold != 0 || c.DoubleHolders != 0 || c.ReissuedEpochs != 0 {
					t.Errorf("the defaults lost acknowledged grants in a failover: %+v", c)
				}
				if c.HoldGrants != 0 || c.FailedCalls == 0 {
					t.Errorf("%d grants acknowledged and %d calls failed while the replica received nothing", c.HoldGrants, c.FailedCalls)
				}
				return
			}
			if c.Lost == 0 || c.Oversold == 0 || c.DoubleHolders == 0 || c.ReissuedEpochs == 0 {
				t.Errorf("accepting loss on failover lost nothing, so this test cannot tell: %+v", c)
			}
		})
	}
}

// failoverCounts are what TestFailover counts; Grants and LockGrants are all
// acknowledged grants, HoldGrants those acknowledged while replication was
// held.
type failoverCounts struct {
	Grants, PreKillGrants, LockGrants, HoldGrants, FailedCalls int
	Lost, Oversold, DoubleHolders, ReissuedEpochs              int
}

// capGrant is an acknowledged reservation.
type capGrant struct {
	node, rid string
	preKill   bool
}

// lockGrant is an acknowledged lock: held from at until released (zero while
// the holder has not been told its release succeeded).
type lockGrant struct {
	key          int
	epoch        uint64
	at, released time.Time
}

type failoverRig struct {
	t          *testing.T
	acceptLoss bool

	primary, replica *failoverProc
	link             *replLink
	addr             atomic.Value // the address clients dial: the current primary
	caps             *redis.CapacityStore
	locks            *redis.LockStore
	locker           *lock.Locker

	phase     atomic.Int32     // 0 before the hold, 1 during, 2 after the kill
	nextPhase [2]chan struct{} // closed as phase 0 and 1 end
	failed    atomic.Int64
	answered  atomic.Int64 // calls answered (granted or refused) after the kill
	seq       atomic.Int64
	mu        sync.Mutex
	grants    []capGrant
	held      []lockGrant
	hold      int       // grants acknowledged during the hold
	perPhase  [3][2]int // grants acknowledged in each phase: reservations, locks
}

// foQuota bounds the grants of the phases before the kill, so that neither
// the nodes nor the lock keys are full before the failover however fast or
// slow the machine.
const foQuota = 40

// paced blocks a worker of kind (0 reservations, 1 locks) while the current
// phase has used its quota of that kind, and reports false when the load
// stops.
func (r *failoverRig) paced(kind int, stop <-chan struct{}) bool {
	p := r.phase.Load()
	r.mu.Lock()
	full := p < 2 && r.perPhase[p][kind] >= foQuota
	r.mu.Unlock()
	if !full {
		return true
	}
	select {
	case <-stop:
		return false
	case <-r.nextPhase[p]:
		return true
	}
}

// advance ends the current phase.
func (r *failoverRig) advance() {
	p := r.phase.Load()
	r.phase.Store(p + 1)
	close(r.nextPhase[p])
}

// failoverProc is a redis-server the test started, stopped by its pid.
type failoverProc struct {
	*clusterProc
	addr string
}

func startProc(t *testing.T, extra ...string) *failoverProc {
	t.Helper()
	bin, err := redistest.BinaryPath()
	if err != nil {
		t.Fatal(err)
	}
	port := clusterPort(t)
	p, err := launchRedis(bin, t.TempDir(), port, extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.kill)
	return &failoverProc{p, clusterAddr(port)}
}

func startFailoverRig(t *testing.T, acceptLoss bool) *failoverRig {
	ctx := context.Background()
	r := &failoverRig{t: t, acceptLoss: acceptLoss, nextPhase: [2]chan struct{}{make(chan struct{}), make(chan struct{})}}
	// Redis 7 delays a diskless initial sync by 5 s for more replicas to join.
	r.primary = startProc(t, "--repl-diskless-sync-delay", "0")
	r.link = startReplLink(t, r.primary.addr)
	host, port, _ := net.SplitHostPort(r.link.addr())
	r.replica = startProc(t, "--replicaof", host, port)
	waitLinked(t, r.replica.addr)
	r.addr.Store(r.primary.addr)

	c := goredis.NewClient(&goredis.Options{Addr: "current-primary", MaxRetries: -1, ContextTimeoutEnabled: true,
		PoolSize: 16, DialTimeout: 200 * time.Millisecond,
		Dialer: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, r.addr.Load().(string))
		}})
	t.Cleanup(func() { _ = c.Close() })
	var err error
	r.caps, err = redis.NewCapacityStore(ctx, c, redis.CapacityStoreOptions{
		Options:              capacity.Options{TTL: time.Minute, HeartbeatTimeout: time.Minute},
		WaitTimeout:          200 * time.Millisecond,
		AcceptLossOnFailover: acceptLoss,
	})
	if err != nil {
		t.Fatal(err)
	}
	r.locks, err = redis.NewLockStore(c, redis.LockStoreOptions{WaitTimeout: 200 * time.Millisecond, AcceptLossOnFailover: acceptLoss})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.locks.Close() })
	r.locker = &lock.Locker{Store: r.locks, Backoff: lock.Backoff{Initial: 5 * time.Millisecond, Max: 20 * time.Millisecond, WriteAttempts: 2}}
	for i := range foNodes {
		if _, err := r.caps.Heartbeat(ctx, foNode(i), capacity.Heartbeat{Epoch: 1, Seq: 1, Max: foMax}); err != nil {
			t.Fatal(err)
		}
	}
	// Heartbeats do not wait for replicas: make sure the replica has them
	// (a write and WAIT on one connection cover every earlier write).
	p := c.Pipeline()
	p.Set(ctx, "failover:sync", "1", 0)
	w := p.Do(ctx, "WAIT", 1, 5000)
	if _, err := p.Exec(ctx); err != nil || w.Val() != int64(1) {
		t.Fatalf("replica never caught up with the heartbeats: %v %v", w.Val(), err)
	}
	return r
}

func foNode(i int) string { return "node-" + strconv.Itoa(i) }

func foLockKey(i int) lock.Key { return lock.Key{Name: "failover", Node: "gpu-" + strconv.Itoa(i)} }

// waitLinked polls the replica at addr until its link to the primary is up.
func waitLinked(t *testing.T, addr string) {
	t.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); ; {
		info, _ := c.Info(context.Background(), "replication").Result()
		if strings.Contains(info, "master_link_status:up") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica never linked: %s", info)
		}
		time.Sleep(10 * time.Millisecond) // waiting for a real replica's initial sync
	}
}

// run drives the experiment and counts.
func (r *failoverRig) run() failoverCounts {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range foReservers {
		wg.Add(1)
		go func() { defer wg.Done(); r.reserver(uint64(g), stop) }()
	}
	for g := range foLockers {
		wg.Add(1)
		go func() { defer wg.Done(); r.lockerLoop(uint64(g), stop) }()
	}
	r.waitFor("load before the hold", func(caps, locks, _, _ int) bool { return caps >= 10 && locks >= 10 })
	// Hold replication: what the primary sends the replica from now on is lost.
	r.link.hold.Store(true)
	r.advance()
	if r.acceptLoss {
		r.waitFor("grants during the hold", func(_, _, hold, _ int) bool { return hold >= 15 })
	} else {
		time.Sleep(600 * time.Millisecond) // the real servers' WAIT timeouts run out meanwhile
	}
	r.primary.kill()
	r.advance()
	r.promote()
	r.waitFor("load after the failover", func(int, int, int, int) bool { return r.answered.Load() >= 5 })
	close(stop)
	wg.Wait()
	r.sweep()
	return r.count()
}

// promote makes the replica a primary and points every client at it.
func (r *failoverRig) promote() {
	c := goredis.NewClient(&goredis.Options{Addr: r.replica.addr, MaxRetries: -1})
	defer c.Close()
	if err := c.Do(context.Background(), "REPLICAOF", "NO", "ONE").Err(); err != nil {
		r.t.Fatal(err)
	}
	r.addr.Store(r.replica.addr)
}

// waitFor polls the acknowledged grants (reservations, locks, both during
// the hold, reservations after the kill) until cond holds, for at most 10 s.
func (r *failoverRig) waitFor(what string, cond func(caps, locks, hold, after int) bool) {
	for deadline := time.Now().Add(10 * time.Second); ; {
		r.mu.Lock()
		caps, locks, hold, after := len(r.grants), len(r.held), r.hold, 0
		for _, g := range r.grants {
			if !g.preKill {
				after++
			}
		}
		r.mu.Unlock()
		if cond(caps, locks, hold, after) {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%s: only %d grants, %d locks, %d during the hold and %d after the kill (%d failed calls)",
				what, caps, locks, hold, after, r.failed.Load())
		}
		time.Sleep(5 * time.Millisecond) // the load runs against real servers
	}
}

func (r *failoverRig) reserver(g uint64, stop <-chan struct{}) {
	rnd := rand.New(rand.NewPCG(g, 1))
	for r.paced(0, stop) {
		select {
		case <-stop:
			return
		default:
		}
		node := foNode(rnd.IntN(foNodes))
		r.reserve(node, fmt.Sprintf("r%d-%d", g, r.seq.Add(1)))
	}
}

// reserve asks once and records an acknowledged grant; it reports whether
// the node answered at all with a refusal (FULL).
func (r *failoverRig) reserve(node, rid string) (full bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	phase := r.phase.Load()
	res, err := r.caps.Reserve(ctx, capacity.Reservation{Node: node, RID: rid, Max: foMax})
	if err != nil {
		r.failed.Add(1)
		return false
	}
	if phase == 2 {
		r.answered.Add(1)
	}
	if res.Status != capacity.ReserveOK {
		return res.Status == capacity.ReserveFull
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// A grant counts as before the kill if its call started before it.
	r.grants = append(r.grants, capGrant{node: node, rid: rid, preKill: phase < 2})
	r.granted(phase, 0)
	return false
}

func (r *failoverRig) lockerLoop(g uint64, stop <-chan struct{}) {
	rnd := rand.New(rand.NewPCG(g, 2))
	for r.paced(1, stop) {
		select {
		case <-stop:
			return
		default:
		}
		r.acquire(rnd.IntN(foLockKeys), rnd.IntN(3) == 0)
	}
}

// acquire tries key once with a new requester and records an acknowledged
// grant; before the hold, with release set, it releases it again.
func (r *failoverRig) acquire(key int, release bool) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	phase := r.phase.Load()
	req := lock.Requester{Namespace: "failover", Name: "p" + strconv.FormatInt(r.seq.Add(1), 10)}
	req.UID = req.Name
	gr, err := r.locker.Acquire(ctx, foLockKey(key), req)
	refused := errors.Is(err, lock.ErrContention) || errors.Is(err, lock.ErrHolderUnknown)
	if phase == 2 && (err == nil || refused) {
		r.answered.Add(1)
	}
	if err != nil {
		if !refused {
			r.failed.Add(1)
		}
		return false
	}
	r.mu.Lock()
	i := len(r.held)
	r.held = append(r.held, lockGrant{key: key, epoch: gr.Record().Epoch, at: time.Now()})
	r.granted(phase, 1)
	r.mu.Unlock()
	if !release || phase != 0 {
		return true
	}
	at := time.Now()
	if _, err := r.locker.Release(ctx, foLockKey(key), req); err == nil {
		r.mu.Lock()
		r.held[i].released = at
		r.mu.Unlock()
	}
	return true
}

// granted counts a grant of kind whose call started in phase; r.mu is held.
func (r *failoverRig) granted(phase int32, kind int) {
	r.perPhase[phase][kind]++
	if phase == 1 && r.phase.Load() == 1 {
		r.hold++
	}
}

// sweep fills every node on the promoted replica and tries every lock key
// once more, so that whatever the failover lost is granted again.
func (r *failoverRig) sweep() {
	for i := range foNodes {
		for k := 0; k < 20 && !r.reserve(foNode(i), "sweep-"+strconv.Itoa(i)+"-"+strconv.Itoa(k)); k++ {
		}
	}
	for k := range foLockKeys {
		r.acquire(k, false)
	}
}

// count compares what was acknowledged with what the promoted replica holds.
func (r *failoverRig) count() failoverCounts {
	ctx := context.Background()
	c := goredis.NewClient(&goredis.Options{Addr: r.replica.addr, MaxRetries: -1})
	defer c.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := failoverCounts{Grants: len(r.grants), LockGrants: len(r.held), HoldGrants: r.hold, FailedCalls: int(r.failed.Load())}
	perNode := map[string]int{}
	for _, g := range r.grants {
		perNode[g.node]++
		if !g.preKill {
			continue
		}
		out.PreKillGrants++
		if ok, err := c.HExists(ctx, "{n:"+g.node+"}", g.rid).Result(); err != nil {
			r.t.Fatal(err)
		} else if !ok {
			out.Lost++
		}
	}
	for _, n := range perNode {
		out.Oversold += max(0, n-foMax)
	}
	byKey := map[int][]lockGrant{}
	for _, g := range r.held {
		byKey[g.key] = append(byKey[g.key], g)
	}
	for _, gs := range byKey {
		out.DoubleHolders += overlapping(gs)
		epochs := map[uint64]int{}
		for _, g := range gs {
			if epochs[g.epoch]++; epochs[g.epoch] == 2 {
				out.ReissuedEpochs++
			}
		}
	}
	return out
}

// overlapping counts the pairs of grants of one key whose holding overlaps:
// a holder holds from its grant until it was told its release succeeded.
func overlapping(gs []lockGrant) int {
	n := 0
	for i, a := range gs {
		for _, b := range gs[i+1:] {
			aEnds := !a.released.IsZero() && !a.released.After(b.at)
			bEnds := !b.released.IsZero() && !b.released.After(a.at)
			if !aEnds && !bEnds {
				n++
			}
		}
	}
	return n
}

// replLink is a TCP proxy for a replica's link to its primary. With hold set,
// it drops what the primary sends, while the connection stays up: the
// primary still lists the replica, which receives nothing.
type replLink struct {
	ln     net.Listener
	target string
	hold   atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
}

func startReplLink(t *testing.T, target string) *replLink {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &replLink{ln: ln, target: target}
	go l.accept()
	t.Cleanup(l.close)
	return l
}

func (l *replLink) addr() string { return l.ln.Addr().String() }

func (l *replLink) accept() {
	for {
		down, err := l.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", l.target)
		if err != nil {
			_ = down.Close()
			continue
		}
		l.mu.Lock()
		l.conns = append(l.conns, down, up)
		l.mu.Unlock()
		go func() { _, _ = io.Copy(up, down); _ = up.Close(); _ = down.Close() }()
		go l.forward(up, down)
	}
}

// forward copies from the primary to the replica, dropping everything while
// hold is set.
func (l *replLink) forward(up, down net.Conn) {
	defer up.Close()
	defer down.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := up.Read(buf)
		if n > 0 && !l.hold.Load() {
			if _, werr := down.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (l *replLink) close() {
	_ = l.ln.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		_ = c.Close()
	}
}

// TestStoresWaitForReplicaAttachedLater starts the stores on a primary
// without replicas, then attaches one (through a replLink) and holds its
// link: the lock store, which asks ROLE on every call, fails its next call
// (an error, not a grant), and the capacity store stops granting within its
// recheck interval (one second) plus a margin. Never looking at the replicas
// again after the start makes the capacity store grant until the deadline.
func TestStoresWaitForReplicaAttachedLater(t *testing.T) {
	ctx := context.Background()
	primary := startProc(t, "--repl-diskless-sync-delay", "0")
	c := goredis.NewClient(&goredis.Options{Addr: primary.addr, MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	caps, err := redis.NewCapacityStore(ctx, c, redis.CapacityStoreOptions{WaitTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	locks, err := redis.NewLockStore(c, redis.LockStoreOptions{WaitTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = locks.Close() })
	if _, err := caps.Heartbeat(ctx, "n", capacity.Heartbeat{Epoch: 1, Seq: 1, Max: 1000}); err != nil {
		t.Fatal(err)
	}
	rec := func(epoch uint64) lock.Record {
		return lock.Record{Time: time.Now().UTC().Truncate(time.Second), Namespace: "ns", Name: "p", UID: "u", Epoch: epoch}
	}
	if err := locks.CompareAndSwap(ctx, foLockKey(1), lock.Precondition{}, rec(1)); err != nil {
		t.Fatalf("lock without replicas: %v", err)
	}
	if r, err := caps.Reserve(ctx, capacity.Reservation{Node: "n", RID: "before"}); err != nil || r.Status != capacity.ReserveOK {
		t.Fatalf("reserve without replicas: %v %v", r, err)
	}

	link := startReplLink(t, primary.addr)
	host, port, _ := net.SplitHostPort(link.addr())
	replica := startProc(t, "--replicaof", host, port)
	waitLinked(t, replica.addr)
	link.hold.Store(true)

	if err := locks.CompareAndSwap(ctx, foLockKey(2), lock.Precondition{}, rec(1)); err == nil || errors.Is(err, lock.ErrConflict) {
		t.Errorf("lock store: a lock granted while its new replica received nothing: %v", err)
	}
	start := time.Now()
	for i := 0; ; i++ {
		r, err := caps.Reserve(ctx, capacity.Reservation{Node: "n", RID: "r" + strconv.Itoa(i)})
		if err != nil {
			if !errors.Is(err, capacity.ErrStoreUnavailable) || r.Status.Granted() {
				t.Fatalf("capacity store: %v, %v", r, err)
			}
			t.Logf("the capacity store waited for the new replica after %v (%d grants before)", time.Since(start), i)
			return
		}
		if time.Since(start) > 2500*time.Millisecond {
			t.Fatalf("capacity store: still granting %v after a replica attached", time.Since(start))
		}
		time.Sleep(10 * time.Millisecond) // the store's recheck runs on the real clock
	}
}
