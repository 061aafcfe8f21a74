package redis_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/plancore/plancore/adapters/redis"
	"github.com/plancore/plancore/adapters/redis/internal/redistest"
	"github.com/plancore/plancore/capacity"
	"github.com/plancore/plancore/lock"
	"github.com/plancore/plancore/vcluster"
	goredis "github.com/redis/go-redis/v9"
)

// Deadlines of the stall test: each call gets stallDeadline, the server
// stalls for much longer, and a call may return at most stallMargin late
// (go-redis with ContextTimeoutEnabled overran by about 3 ms; the margin
// covers a loaded test machine).
const (
	stallDeadline = 300 * time.Millisecond
	stallMargin   = 150 * time.Millisecond
	stallFor      = "2" // seconds of DEBUG SLEEP
)

// TestCapacityStoreDeadlinesHoldDuringStall stalls a real redis-server
// (DEBUG SLEEP on another connection) and calls every store operation
// with a short deadline: each must return within its deadline plus a small
// margin, with an error wrapping capacity.ErrStoreUnavailable and no lease.
// (Building the client without ContextTimeoutEnabled, and the store without
// CheckDeadlines, makes it fail: the calls wait out the stall.)
func TestCapacityStoreDeadlinesHoldDuringStall(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t, "--enable-debug-command", "yes")
	s := newStore(t, srv.Client(), redis.CapacityStoreOptions{})
	if _, err := s.Heartbeat(ctx, "n1", capacity.Heartbeat{Epoch: 1, Seq: 1}); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Reserve(ctx, capacity.Reservation{Node: "n1", RID: "before"}); err != nil || r.Status != capacity.ReserveOK {
		t.Fatalf("reserve before the stall: %v, %v", r, err)
	}
	stalled := stall(t, srv)

	ops := map[string]func(ctx context.Context) (granted bool, err error){
		"reserve": func(ctx context.Context) (bool, error) {
			r, err := s.Reserve(ctx, capacity.Reservation{Node: "n1", RID: "a"})
			return r.Status.Granted(), err
		},
		"reserve batch": func(ctx context.Context) (bool, error) {
			r, err := s.ReserveBatch(ctx, []capacity.Reservation{{Node: "n1", RID: "b"}, {Node: "n2", RID: "b"}}, capacity.Partial)
			return r.Granted() > 0, err
		},
		"ack": func(ctx context.Context) (bool, error) {
			st, err := s.Ack(ctx, capacity.Ack{Node: "n1", RID: "before", Epoch: 1, Seq: 2})
			return st.Start(), err
		},
		"release": func(ctx context.Context) (bool, error) {
			_, err := s.Release(ctx, "n1", "before")
			return false, err
		},
		"heartbeat": func(ctx context.Context) (bool, error) {
			_, err := s.Heartbeat(ctx, "n1", capacity.Heartbeat{Epoch: 1, Seq: 3})
			return false, err
		},
		"loads": func(ctx context.Context) (bool, error) {
			_, err := s.Loads(ctx, []string{"n1"})
			return false, err
		},
	}
	var wg sync.WaitGroup
	for name, op := range ops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, stallDeadline)
			defer cancel()
			start := time.Now()
			granted, err := op(cctx)
			took := time.Since(start)
			if !errors.Is(err, capacity.ErrStoreUnavailable) || granted {
				t.Errorf("%s during a stall: granted %v, err %v; want an error wrapping ErrStoreUnavailable", name, granted, err)
			}
			if took > stallDeadline+stallMargin {
				t.Errorf("%s returned after %v, past its %v deadline by more than %v", name, took, stallDeadline, stallMargin)
			}
			t.Logf("%s: returned after %v: %v", name, took, err)
		}()
	}
	wg.Wait()
	select {
	case <-stalled:
		t.Fatal("the stall ended before the calls returned: the test proves nothing")
	default:
	}
	<-stalled
	// After the stall the store works again: the failed calls changed
	// nothing they were not allowed to (the lease "before" may or may not
	// have been released or acked, but nothing was granted).
	if r, err := s.Reserve(ctx, capacity.Reservation{Node: "n1", RID: "after"}); err != nil || !r.Status.Granted() {
		t.Fatalf("reserve after the stall: %v, %v", r, err)
	}
}

// stall blocks srv's main thread with DEBUG SLEEP on a connection of its
// own and returns once the server has stopped answering; the channel closes
// when the stall is over.
func stall(t *testing.T, srv *redistest.Server) <-chan struct{} {
	t.Helper()
	ctx := context.Background()
	done := make(chan struct{})
	staller := srv.Client(func(o *goredis.Options) { o.ReadTimeout = -1 })
	go func() {
		defer close(done)
		if err := staller.Do(ctx, "DEBUG", "SLEEP", stallFor).Err(); err != nil {
			t.Errorf("DEBUG SLEEP: %v", err)
		}
	}()
	probe := srv.Client()
	for {
		pctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		err := probe.Ping(pctx).Err()
		cancel()
		if err != nil {
			return done // PING cannot answer: the server is stalled
		}
		select {
		case <-done:
			t.Fatal("DEBUG SLEEP returned before the server was seen stalled")
		default:
		}
	}
}

// TestStoresRefuseClientsIgnoringDeadlines: a go-redis client without
// ContextTimeoutEnabled would wait out a stall whatever the caller's
// deadline, so the constructors refuse it, naming the option.
func TestStoresRefuseClientsIgnoringDeadlines(t *testing.T) {
	srv := redistest.Start(t)
	plain := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
	defer plain.Close()
	cluster := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: []string{srv.Addr()}})
	defer cluster.Close()
	_, err := redis.NewCapacityStore(context.Background(), plain, redis.CapacityStoreOptions{})
	if !errors.Is(err, redis.ErrIgnoresDeadlines) || !errors.Is(err, capacity.ErrInvalidOptions) {
		t.Errorf("capacity store on a client ignoring deadlines: %v", err)
	}
	_, err = redis.NewCapacityStore(context.Background(), cluster, redis.CapacityStoreOptions{})
	if !errors.Is(err, redis.ErrIgnoresDeadlines) {
		t.Errorf("capacity store on a cluster client ignoring deadlines: %v", err)
	}
	_, err = redis.NewLockStore(plain, redis.LockStoreOptions{})
	if !errors.Is(err, redis.ErrIgnoresDeadlines) || !errors.Is(err, lock.ErrInvalidOptions) {
		t.Errorf("lock store on a client ignoring deadlines: %v", err)
	}
	_, err = redis.NewVClusterStore(plain, redis.VClusterOptions{})
	if !errors.Is(err, redis.ErrIgnoresDeadlines) || !errors.Is(err, vcluster.ErrInvalidOptions) {
		t.Errorf("vcluster store on a client ignoring deadlines: %v", err)
	}
	if _, err = redis.NewVClusterStore(nil, redis.VClusterOptions{}); !errors.Is(err, vcluster.ErrInvalidOptions) {
		t.Errorf("vcluster store on a nil client: %v", err)
	}
	if err := redis.CheckDeadlines(srv.Client()); err != nil {
		t.Errorf("a client with ContextTimeoutEnabled: %v", err)
	}
}
