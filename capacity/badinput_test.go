package capacity_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/plancore/plancore/internal/invalidtest"

	"pgregory.net/rapid"

	"github.com/plancore/plancore"
	"github.com/plancore/plancore/capacity"
)

// TestBadInput feeds the bad input a user would try through the public API.
// Each row either names the sentinel and the exact field paths of the error,
// or (sentinel nil) is legal input that must give a valid answer.
func TestBadInput(t *testing.T) {
	ctx := context.Background()
	store := func() *capacity.MemoryStore { s, _ := newMem(t, capacity.Options{}); return s }
	fresh := t0.Add(-time.Second)
	type row struct {
		name   string
		call   func() error
		kind   error
		fields []string
	}
	rows := []row{
		{"decide: zero now", func() error { _, err := capacity.Decide(capacity.Input{}, capacity.Options{}); return err },
			capacity.ErrInvalidInput, []string{"now"}},
		{"decide: every bad option at once", func() error {
			_, err := capacity.Decide(capacity.Input{Now: t0}, capacity.Options{MaxJobs: -1, TTL: -1, Threshold: math.NaN(), RankBy: "Random", Accounting: "Min", RetryAfter: -1})
			return err
		}, capacity.ErrInvalidOptions, []string{"maxJobs", "ttl", "retryAfter", "threshold", "accounting", "rankBy"}},
		{"decide: MaxInt32+1 jobs option", func() error {
			_, err := capacity.Decide(capacity.Input{Now: t0}, capacity.Options{MaxJobs: math.MaxInt32 + 1})
			return err
		}, capacity.ErrInvalidOptions, []string{"maxJobs"}},
		{"decide: nil nodes is legal (no capacity)", func() error {
			p, err := capacity.Decide(capacity.Input{Now: t0}, capacity.Options{})
			if err == nil && p.Verdict != capacity.NoCapacity {
				return errors.New("want NoCapacity")
			}
			return err
		}, nil, nil},
		{"decide: hostile node counts are exclusions, not errors", func() error {
			p, err := capacity.Decide(capacity.Input{Now: t0, Nodes: []capacity.NodeLoad{
				{ID: "a", Max: 4, Running: math.MaxInt, HeartbeatAt: fresh},
				{ID: "b", Max: 4, Running: 1, Pending: math.MaxInt, HeartbeatAt: fresh},
				{ID: "c", Max: 4, Running: -1, HeartbeatAt: fresh},
				{ID: "", Max: 4, HeartbeatAt: fresh},
				{ID: "e", Max: math.MinInt, HeartbeatAt: fresh},
			}}, capacity.Options{})
			if err == nil && (len(p.Candidates) != 0 || p.Breakdown.InvalidNode != 5) {
				return errors.New("want every node excluded as InvalidNode: " + p.String())
			}
			return err
		}, nil, nil},
		{"reserve: every bad field at once", func() error {
			_, err := store().Reserve(ctx, capacity.Reservation{Max: -1, TTL: -1, Running: -1})
			return err
		}, capacity.ErrInvalidInput, []string{"node", "rid", "max", "ttl", "running"}},
		{"reserve: MaxInt max and running", func() error {
			_, err := store().Reserve(ctx, capacity.Reservation{Node: "n", RID: "r", Max: math.MaxInt, Running: math.MaxInt})
			return err
		}, capacity.ErrInvalidInput, []string{"max", "running"}},
		{"reserve: brace in node", func() error {
			_, err := store().Reserve(ctx, capacity.Reservation{Node: "{n}", RID: "r"})
			return err
		}, capacity.ErrInvalidInput, []string{"node"}},
		{"batch: unknown mode, items named by index", func() error {
			_, err := store().ReserveBatch(ctx, []capacity.Reservation{{Node: "n", RID: "a"}, {Node: "n"}}, "Most")
			return err
		}, capacity.ErrInvalidInput, []string{"mode", "items[1].rid"}},
		{"batch: too many items", func() error {
			_, err := store().ReserveBatch(ctx, slices.Repeat([]capacity.Reservation{{Node: "n", RID: "a"}}, capacity.DefaultMaxBatch+1), capacity.Partial)
			return err
		}, capacity.ErrInvalidInput, []string{"items"}},
		{"heartbeat: Running MaxInt", func() error {
			_, err := store().Heartbeat(ctx, "n", capacity.Heartbeat{Epoch: 1, Seq: 1, Running: math.MaxInt})
			return err
		}, capacity.ErrInvalidInput, []string{"heartbeat.running"}},
		{"heartbeat: negative running and max", func() error {
			_, err := store().Heartbeat(ctx, "n", capacity.Heartbeat{Epoch: 1, Seq: 1, Running: -1, Max: math.MinInt})
			return err
		}, capacity.ErrInvalidInput, []string{"heartbeat.running", "heartbeat.max"}},
		{"ack: empty node and rid", func() error { _, err := store().Ack(ctx, capacity.Ack{}); return err },
			capacity.ErrInvalidInput, []string{"node", "rid"}},
		{"release: empty node and rid", func() error { _, err := store().Release(ctx, "", ""); return err },
			capacity.ErrInvalidInput, []string{"node", "rid"}},
		{"dispatch: nil store", func() error {
			_, err := capacity.Dispatch(ctx, nil, capacity.Plan{}, "r", capacity.DispatchOptions{})
			if !errors.Is(err, capacity.ErrNilStore) {
				return errors.New("want ErrNilStore")
			}
			return err
		}, capacity.ErrInvalidInput, nil},
		{"dispatch: empty rid", func() error {
			_, err := capacity.Dispatch(ctx, store(), capacity.Plan{}, "", capacity.DispatchOptions{})
			return err
		}, capacity.ErrInvalidInput, []string{"rid"}},
		{"dispatch: negative options", func() error {
			_, err := capacity.Dispatch(ctx, store(), capacity.Plan{}, "r", capacity.DispatchOptions{MaxAttempts: -1, TTL: -1, RetryAfter: -1})
			return err
		}, capacity.ErrInvalidOptions, []string{"maxAttempts", "ttl", "retryAfter"}},
		{"memory store: negative shards", func() error {
			_, err := capacity.NewMemoryStore(capacity.MemoryStoreOptions{Shards: -1, Options: capacity.Options{Lifetime: -1}})
			return err
		}, capacity.ErrInvalidOptions, []string{"lifetime", "shards"}},
		{"ledger: zero now and empty rid", func() error {
			_, _, err := capacity.NodeLedger{}.Reserve(time.Time{}, capacity.Reservation{})
			return err
		}, capacity.ErrInvalidInput, []string{"now", "rid"}},
		{"zero memory store", func() error {
			_, err := (&capacity.MemoryStore{}).Reserve(ctx, capacity.Reservation{Node: "n", RID: "r"})
			if !errors.Is(err, capacity.ErrNilStore) {
				return errors.New("want ErrNilStore")
			}
			return err
		}, capacity.ErrInvalidInput, nil},
		{"zero counting store", func() error {
			_, err := capacity.CountingStore{}.Loads(ctx, []string{"n"})
			if !errors.Is(err, capacity.ErrNilStore) {
				return errors.New("want ErrNilStore")
			}
			return err
		}, capacity.ErrInvalidInput, nil},
		{"ledger: MaxInt heartbeat timeout saturates the lifetime", func() error {
			_, err := capacity.NewNodeLedger(capacity.Options{HeartbeatTimeout: math.MaxInt64})
			return err
		}, nil, nil},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			invalidtest.Check(t, r.call(), r.kind, r.fields)
		})
	}
}

// extremeInts are the values every count is probed with.
var extremeInts = []int{0, -1, 1, 3, 4, capacity.MaxLimit, capacity.MaxLimit + 1, math.MaxInt32, math.MaxInt32 + 1, math.MaxInt, math.MinInt}

// TestPropertyHostileHeartbeat: whatever Running and Max a heartbeat
// carries, it is either refused with an error naming the field, or every
// later reserve respects the node's limit: no more than max(M − running − 1, 0), one lease being pending,
// of ten reserves are granted. (Removing the range check in
// Heartbeat.Validate and the saturation in the load makes it fail: the
// load wraps and ten of ten are granted.)
func TestPropertyHostileHeartbeat(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		running := rapid.SampledFrom(extremeInts).Draw(t, "running")
		hbMax := rapid.SampledFrom(extremeInts).Draw(t, "max")
		acct := rapid.SampledFrom([]capacity.Accounting{capacity.Sum, capacity.SeedMax}).Draw(t, "accounting")
		s, err := capacity.NewMemoryStore(capacity.MemoryStoreOptions{Options: capacity.Options{Accounting: acct}, Clock: fixedClock(t0)})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		// One lease is pending when the hostile heartbeat arrives: the load
		// is then running + 1, which wraps for running = MaxInt.
		if _, err := s.Heartbeat(ctx, "n", capacity.Heartbeat{Epoch: 1, Seq: 1}); err != nil {
			t.Fatal(err)
		}
		if r, err := s.Reserve(ctx, capacity.Reservation{Node: "n", RID: "pending"}); err != nil || r.Status != capacity.ReserveOK {
			t.Fatalf("first reserve: %v, %v", r, err)
		}
		_, err = s.Heartbeat(ctx, "n", capacity.Heartbeat{Epoch: 1, Seq: 2, Running: running, Max: hbMax})
		if err != nil {
			var inv *plancore.InvalidError
			if !errors.Is(err, capacity.ErrInvalidInput) || !errors.As(err, &inv) ||
				!slices.ContainsFunc(inv.Fields(), func(f string) bool { return f == "heartbeat.running" || f == "heartbeat.max" }) {
				t.Fatalf("heartbeat error %v does not name a heartbeat field", err)
			}
			if running >= 0 && running <= capacity.MaxCount && hbMax >= 0 && hbMax <= capacity.MaxLimit {
				t.Fatalf("a legal heartbeat was refused: %v", err)
			}
			return
		}
		m := hbMax
		if m == 0 {
			m = capacity.DefaultMaxJobs
		}
		free := max(m-running-1, 0)
		if acct == capacity.SeedMax {
			free = m - 1 // the seed reads the caller's running (0 here), not the heartbeat's
		}
		granted := 0
		for i := range 10 {
			r, err := s.Reserve(ctx, capacity.Reservation{Node: "n", RID: string(rune('a' + i))})
			if err != nil {
				t.Fatal(err)
			}
			if r.Status.Granted() {
				granted++
			}
			if r.Load < 0 {
				t.Fatalf("load %d wrapped", r.Load)
			}
		}
		if granted > min(free, 10) {
			t.Fatalf("running=%d max=%d: %d of 10 reserves granted, at most %d free", running, hbMax, granted, free)
		}
	})
}

// TestPropertyHostileNodeLoad: Decide never panics, never offers a node
// whose effective load is at or above its M, and never reports a negative
// (wrapped) load, whatever counts the node loads carry. (Making
// NodeLoad.Effective add without saturating makes it fail.)
func TestPropertyHostileNodeLoad(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 4).Draw(t, "nodes")
		var nodes []capacity.NodeLoad
		for i := range n {
			nodes = append(nodes, capacity.NodeLoad{ID: string(rune('a' + i)),
				Max:            rapid.SampledFrom(extremeInts).Draw(t, "max"),
				Running:        rapid.SampledFrom(extremeInts).Draw(t, "running"),
				Pending:        rapid.SampledFrom(extremeInts).Draw(t, "pending"),
				AckedUncounted: rapid.SampledFrom(extremeInts).Draw(t, "acked"),
				HeartbeatAt:    t0})
		}
		acct := rapid.SampledFrom([]capacity.Accounting{capacity.Sum, capacity.SeedMax}).Draw(t, "accounting")
		for _, l := range nodes {
			if e := l.Effective(acct); e < 0 {
				t.Fatalf("%+v: effective load %d wrapped", l, e)
			}
		}
		p, err := capacity.Decide(capacity.Input{Now: t0, Nodes: nodes}, capacity.Options{Accounting: acct})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range p.Candidates {
			if c.Effective < 0 || c.Effective >= c.Max || c.Max > capacity.MaxCount {
				t.Fatalf("candidate %+v offered", c)
			}
		}
	})
}

// TestSeedClampsToOne: the Seed preset turns a zero or negative limit and
// TTL into 1 (one job, one second), as the seed's Redis wrapper does.
func TestSeedClampsToOne(t *testing.T) {
	for _, v := range []struct {
		max int
		ttl time.Duration
	}{{0, 0}, {-5, -time.Second}, {math.MinInt, math.MinInt64}} {
		s, clk := newMem(t, capacity.Seed())
		ctx := context.Background()
		r1, err := s.Reserve(ctx, capacity.Reservation{Node: "n", RID: "a", Max: v.max, TTL: v.ttl})
		if err != nil || r1.Status != capacity.ReserveOK || !r1.Expiry.Equal(clk.Now().Add(time.Second)) {
			t.Fatalf("max=%d ttl=%v: first reserve %v, %v; want ok for 1s", v.max, v.ttl, r1, err)
		}
		r2, err := s.Reserve(ctx, capacity.Reservation{Node: "n", RID: "b", Max: v.max, TTL: v.ttl})
		if err != nil || r2.Status != capacity.ReserveFull {
			t.Fatalf("max=%d: second reserve %v, %v; want full (limit 1)", v.max, r2, err)
		}
	}
}

// TestPropertyDecideRefusesWhatValidateRefuses: Decide fails exactly when
// Validate does, with the same error, on inputs and options with random
// defects. (Making Decide skip a check Validate runs makes it fail.)
func TestPropertyDecideRefusesWhatValidateRefuses(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := capacity.Input{Now: t0, Nodes: []capacity.NodeLoad{{ID: "a", Max: rapid.SampledFrom(extremeInts).Draw(t, "max"), HeartbeatAt: t0}}}
		if rapid.Bool().Draw(t, "zero now") {
			in.Now = time.Time{}
		}
		o := rapid.SampledFrom([]capacity.Options{{}, capacity.Seed(), {MaxJobs: -1}, {Threshold: math.NaN()}, {RankBy: "x"}}).Draw(t, "options")
		_, derr := capacity.Decide(in, o)
		verr := capacity.Validate(in, o)
		if (derr == nil) != (verr == nil) || derr != nil && derr.Error() != verr.Error() {
			t.Fatalf("Decide: %v\nValidate: %v", derr, verr)
		}
	})
}
