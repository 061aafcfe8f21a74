package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/plancore/plancore/capacity"
)

// CapacityRaceConfig configures RunCapacityRace.
type CapacityRaceConfig struct {
	// Nodes, Max and Clients default to 2, 3 and 4. Each node gets at most
	// 10 operations, its first heartbeat included, so that
	// capacity.CheckLinearizable stays quick.
	Nodes, Max, Clients int
	// Options must be the options the store under test was built with.
	Options capacity.Options
	// Seed determines the operations; the interleaving is the machine's.
	Seed uint64
	// Start is the store time of the first phase (default 2026-01-07 12:00 UTC).
	Start time.Time
}

// capacityRaceOpsPerNode bounds a node's operations in one history.
const capacityRaceOpsPerNode = 10

// RunCapacityRace records a concurrent history for the linearizability property. It builds the
// store on a clock it controls, gives every node a first heartbeat, then runs
// two phases in which Clients goroutines, released together, call Reserve,
// Release, Ack and Heartbeat on the store at once: rids come from a small
// pool per node (so calls collide: duplicates, releases and ACKs of leases
// another client holds), ACKs and heartbeats carry assorted epochs and seqs.
// The store clock is frozen within a phase and moves between them by 0, TTL −
// 1 ms or TTL, so leases lapse between phases but never under a running
// call, and every call knows its store time. Each call is stamped on one
// atomic counter when invoked and when it returns.
//
// The history it returns goes to capacity.CheckLinearizable. An error is a
// store error other than a heartbeat's ErrSeqBackwards: these runs expect none.
func RunCapacityRace(ctx context.Context, cfg CapacityRaceConfig, newStore StoreFactory) ([]capacity.HistoryOp, error) {
	if cfg.Nodes == 0 {
		cfg.Nodes = 2
	}
	if cfg.Max == 0 {
		cfg.Max = 3
	}
	if cfg.Clients == 0 {
		cfg.Clients = 4
	}
	if cfg.Start.IsZero() {
		cfg.Start = time.Date(2026, 1, 7, 12, 0, 0, 0, time.UTC)
	}
	if cfg.Options.Lifetime == 0 {
		cfg.Options.Lifetime = 24 * time.Hour
	}
	var now atomic.Pointer[time.Time]
	now.Store(&cfg.Start)
	store, err := newStore(func() time.Time { return *now.Load() }, cfg.Options)
	if err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
	rec := &raceRecorder{}
	ids := make([]string, cfg.Nodes)
	budget := make([]int, cfg.Nodes)
	for i := range ids {
		ids[i] = fmt.Sprintf("node-%d", i)
		budget[i] = capacityRaceOpsPerNode - 1
		hb := capacity.Heartbeat{Epoch: 1, Seq: 1, Running: r.IntN(cfg.Max)}
		if err := rec.do(ctx, store, 0, ids[i], cfg.Start, raceCall{kind: capacity.OpHeartbeat, hb: hb}); err != nil {
			return rec.ops, err
		}
	}
	ttl := cfg.Options.WithDefaults().TTL
	phaseNow := cfg.Start
	for phase := range 2 {
		if phase > 0 {
			phaseNow = phaseNow.Add([]time.Duration{0, ttl - time.Millisecond, ttl}[r.IntN(3)])
			now.Store(&phaseNow)
		}
		// Plan every client's calls of this phase from the seed.
		plans := make([][]raceCall, cfg.Clients)
		for c := range plans {
			for range 1 + r.IntN(3) {
				n := r.IntN(cfg.Nodes)
				if budget[n] == 0 {
					continue
				}
				budget[n]--
				plans[c] = append(plans[c], planRaceCall(r, ids[n], cfg.Max))
			}
		}
		start := make(chan struct{})
		errs := make(chan error, cfg.Clients)
		var wg sync.WaitGroup
		for c, plan := range plans {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for _, call := range plan {
					if err := rec.do(ctx, store, c+1, call.node, phaseNow, call); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		close(start)
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			return rec.history(), err
		}
	}
	return rec.history(), nil
}

type raceCall struct {
	kind  capacity.HistoryOpKind
	node  string
	max   int
	rid   string
	epoch uint64
	seq   uint64
	hb    capacity.Heartbeat
}

// planRaceCall draws one call on node: mostly reserves, from a pool of four
// rids, then releases, ACKs (epoch 2 is a mismatch until a heartbeat of
// epoch 2 lands) and heartbeats.
func planRaceCall(r *rand.Rand, node string, maxJobs int) raceCall {
	c := raceCall{node: node, max: maxJobs, rid: string(rune('a' + r.IntN(4))), epoch: 1, seq: uint64(2 + r.IntN(8))}
	if r.IntN(8) == 0 {
		c.epoch = 2
	}
	switch k := r.IntN(10); {
	case k < 5:
		c.kind = capacity.OpReserve
	case k < 7:
		c.kind = capacity.OpRelease
	case k < 9:
		c.kind = capacity.OpAck
	default:
		c.kind = capacity.OpHeartbeat
		c.hb = capacity.Heartbeat{Epoch: c.epoch, Seq: c.seq, Running: r.IntN(maxJobs + 1)}
	}
	return c
}

type raceRecorder struct {
	clock atomic.Int64
	mu    sync.Mutex
	ops   []capacity.HistoryOp
}

func (rec *raceRecorder) history() []capacity.HistoryOp {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.ops
}

// do runs call on store as client, stamping it on the shared counter.
func (rec *raceRecorder) do(ctx context.Context, store capacity.SlotStore, client int, node string, now time.Time, call raceCall) error {
	op := capacity.HistoryOp{Client: client, Kind: call.kind, Node: node, Now: now}
	var err error
	op.Call = rec.clock.Add(1)
	switch call.kind {
	case capacity.OpReserve:
		op.Reservation = capacity.Reservation{Node: node, RID: call.rid, Max: call.max}
		op.Reserved, err = store.Reserve(ctx, op.Reservation)
	case capacity.OpRelease:
		op.RID = call.rid
		op.Released, err = store.Release(ctx, node, call.rid)
	case capacity.OpAck:
		op.Ack = capacity.Ack{Node: node, RID: call.rid, Epoch: call.epoch, Seq: call.seq}
		op.Acked, err = store.Ack(ctx, op.Ack)
	case capacity.OpHeartbeat:
		op.Heartbeat = call.hb
		op.HeartbeatStatus, err = store.Heartbeat(ctx, node, call.hb)
		if errors.Is(err, capacity.ErrSeqBackwards) {
			op.SeqBackwards, err = true, nil
		}
	}
	op.Return = rec.clock.Add(1)
	if err != nil {
		return fmt.Errorf("client %d %v on %s: %w", client, call.kind, node, err)
	}
	rec.mu.Lock()
	rec.ops = append(rec.ops, op)
	rec.mu.Unlock()
	return nil
}

// RaceReserves is the second half of the linearizability property: n goroutines, released
// together, each reserve a fresh rid on one node whose heartbeat says running
// jobs of M; at most M − running may get a lease, and (since every racer asks
// for a new rid and there are enough of them) exactly that many do. It
// returns the number of grants, or an error if a call failed.
func RaceReserves(ctx context.Context, store capacity.SlotStore, node string, n, maxJobs, running int) (int, error) {
	if _, err := store.Heartbeat(ctx, node, capacity.Heartbeat{Epoch: 1, Seq: 1, Running: running}); err != nil {
		return 0, err
	}
	var granted atomic.Int64
	start := make(chan struct{})
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res, err := store.Reserve(ctx, capacity.Reservation{Node: node, RID: fmt.Sprintf("racer-%d", i), Max: maxJobs})
			if err != nil {
				errs <- err
				return
			}
			if res.Status == capacity.ReserveOK {
				granted.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	return int(granted.Load()), <-errs
}
