package capacity_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/plancore/plancore/capacity"
)

var t0 = time.Date(2026, 1, 7, 12, 0, 0, 0, time.UTC)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// step is one operation on a single node's ledger and the answer it must get.
type step struct {
	at   time.Duration // since t0
	op   string        // reserve, ack, release, hb
	rid  string
	max  int
	run  int // Running for reserve (SeedMax) and hb
	ep   uint64
	seq  uint64
	want string // status name
	load int    // effective load after, checked when >= 0
}

func runSteps(t *testing.T, o capacity.Options, steps []step) {
	t.Helper()
	l, err := capacity.NewNodeLedger(o)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range steps {
		now := t0.Add(s.at)
		var got string
		switch s.op {
		case "reserve":
			var r capacity.ReserveResult
			l, r, err = l.Reserve(now, capacity.Reservation{RID: s.rid, Max: s.max, Running: s.run})
			got = r.Status.String()
			if err == nil && s.load >= 0 && r.Load != s.load {
				t.Errorf("step %d (%s %s): load %d, want %d", i, s.op, s.rid, r.Load, s.load)
			}
		case "ack":
			var a capacity.AckStatus
			l, a, err = l.Ack(now, capacity.Ack{RID: s.rid, Epoch: s.ep, Seq: s.seq})
			got = a.String()
		case "release":
			var ok bool
			l, ok, err = l.Release(now, s.rid)
			got = map[bool]string{true: "released", false: "noop"}[ok]
		case "hb":
			var h capacity.HeartbeatStatus
			l, h, err = l.Heartbeat(now, capacity.Heartbeat{Epoch: s.ep, Seq: s.seq, Running: s.run})
			got = h.String()
		}
		if err != nil {
			t.Fatalf("step %d (%s %s): %v", i, s.op, s.rid, err)
		}
		if got != s.want {
			t.Fatalf("step %d (%s %s at %v): got %s, want %s\nledger: %v", i, s.op, s.rid, s.at, got, s.want, l)
		}
		if s.op != "reserve" && s.load >= 0 {
			if e := l.Effective(now); e != s.load {
				t.Errorf("step %d (%s %s): effective %d, want %d\nledger: %v", i, s.op, s.rid, e, s.load, l)
			}
		}
	}
}

// TestSeedMaxReproducesTheSeed replays the seed's own behaviour in the
// compatibility mode, including counter-examples A and B, in which
// it admits more jobs than the node has slots.
func TestSeedMaxReproducesTheSeed(t *testing.T) {
	seed := capacity.Options{Accounting: capacity.SeedMax}
	tests := []struct {
		name  string
		steps []step
	}{
		{"the seed's example: running 2, reserved 1 → effective 2", []step{
			{op: "reserve", rid: "a", max: 4, run: 2, want: "ok", load: 2},
			{op: "reserve", rid: "b", max: 4, run: 2, want: "ok", load: 2},
			{op: "reserve", rid: "c", max: 4, run: 2, want: "ok", load: 3},
			{op: "reserve", rid: "d", max: 4, run: 2, want: "ok", load: 4},
			{op: "reserve", rid: "e", max: 4, run: 2, want: "full", load: 4},
		}},
		{"counter-example A: M=5, running 3 admits five (8 on 5 slots)", []step{
			{op: "reserve", rid: "j1", max: 5, run: 3, want: "ok", load: 3},
			{op: "reserve", rid: "j2", max: 5, run: 3, want: "ok", load: 3},
			{op: "reserve", rid: "j3", max: 5, run: 3, want: "ok", load: 3},
			{op: "reserve", rid: "j4", max: 5, run: 3, want: "ok", load: 4},
			{op: "reserve", rid: "j5", max: 5, run: 3, want: "ok", load: 5},
			{op: "reserve", rid: "j6", max: 5, run: 3, want: "full", load: 5},
		}},
		{"counter-example B: release on ACK leaks a slot per ACK", []step{
			{at: ms(100), op: "reserve", rid: "j1", max: 4, run: 3, want: "ok", load: 3},
			{at: ms(200), op: "ack", rid: "j1", want: "ok", load: -1},
			{at: ms(500), op: "reserve", rid: "j2", max: 4, run: 3, want: "ok", load: 3},
			{at: ms(600), op: "ack", rid: "j2", want: "ok", load: -1},
			{at: ms(900), op: "reserve", rid: "j3", max: 4, run: 3, want: "ok", load: 3},
		}},
		{"TTL boundary exclusive: a lease counts at expiry-1ms, not at expiry", []step{
			{op: "reserve", rid: "a", max: 1, want: "ok", load: 1},
			{at: ms(4999), op: "reserve", rid: "b", max: 1, want: "full", load: 1},
			{at: ms(5000), op: "reserve", rid: "b", max: 1, want: "ok", load: 1},
		}},
		{"a duplicate answers duplicate without extending, full or not", []step{
			{op: "reserve", rid: "a", max: 1, want: "ok", load: 1},
			{at: ms(3000), op: "reserve", rid: "a", max: 1, want: "duplicate", load: 1},
			{at: ms(5000), op: "reserve", rid: "b", max: 1, want: "ok", load: 1},
		}},
		{"release is ZREM; twice equals once", []step{
			{op: "reserve", rid: "a", max: 1, want: "ok", load: 1},
			{op: "release", rid: "a", want: "released", load: -1},
			{op: "release", rid: "a", want: "noop", load: -1},
			{op: "reserve", rid: "b", max: 1, want: "ok", load: 1},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { runSteps(t, seed, tc.steps) })
	}
}

// TestSumAccounting covers plancore's default accounting, including the
// counter-examples A to D, which it must refuse.
func TestSumAccounting(t *testing.T) {
	tests := []struct {
		name  string
		opts  capacity.Options
		steps []step
	}{
		{"counter-example A: M=5, running 3 admits two", capacity.Options{}, []step{
			{op: "hb", ep: 1, seq: 10, run: 3, want: "applied", load: 3},
			{op: "reserve", rid: "j1", max: 5, want: "ok", load: 4},
			{op: "reserve", rid: "j2", max: 5, want: "ok", load: 5},
			{op: "reserve", rid: "j3", max: 5, want: "full", load: 5},
		}},
		{"counter-example B: acked jobs count until a heartbeat sees them", capacity.Options{}, []step{
			{op: "hb", ep: 1, seq: 10, run: 3, want: "applied", load: 3},
			{at: ms(100), op: "reserve", rid: "j1", max: 4, want: "ok", load: 4},
			{at: ms(200), op: "ack", rid: "j1", ep: 1, seq: 11, want: "ok", load: 4},
			{at: ms(500), op: "reserve", rid: "j2", max: 4, want: "full", load: 4},
			{at: ms(2000), op: "hb", ep: 1, seq: 12, run: 4, want: "applied", load: 4},
			{at: ms(2100), op: "reserve", rid: "j2", max: 4, want: "full", load: 4},
		}},
		{"counter-example C: a heartbeat sampled before the job does not drop it", capacity.Options{}, []step{
			{op: "hb", ep: 1, seq: 10, run: 3, want: "applied", load: 3},
			{at: ms(100), op: "reserve", rid: "j1", max: 4, want: "ok", load: 4},
			// The node accepted j1 at seq 12, after sampling a heartbeat at seq 11.
			{at: ms(200), op: "ack", rid: "j1", ep: 1, seq: 12, want: "ok", load: 4},
			{at: ms(250), op: "hb", ep: 1, seq: 11, run: 3, want: "applied", load: 4},
			{at: ms(300), op: "reserve", rid: "j2", max: 4, want: "full", load: 4},
			{at: ms(2000), op: "hb", ep: 1, seq: 13, run: 4, want: "applied", load: 4},
		}},
		{"counter-example E: a second acceptance of an acked job does not start it again (fenced)", capacity.Options{}, []step{
			{op: "hb", ep: 1, seq: 1, run: 0, want: "applied", load: 0},
			{op: "reserve", rid: "j8", max: 3, want: "ok", load: 1},
			// The node accepts j8 at seq 4 and acks it: it runs, then finishes.
			{at: ms(100), op: "ack", rid: "j8", ep: 1, seq: 4, want: "ok", load: 1},
			// A retried ACK of the same acceptance may start (or keep) it.
			{at: ms(150), op: "ack", rid: "j8", ep: 1, seq: 4, want: "duplicate", load: 1},
			{at: ms(200), op: "hb", ep: 1, seq: 8, run: 0, want: "applied", load: 0},
			// The same job delivered again and accepted at seq 9: it must not
			// start, since nothing counts it any more.
			{at: ms(300), op: "ack", rid: "j8", ep: 1, seq: 9, want: "expired", load: 0},
		}},
		{"counter-example D: a late ACK after expiry is refused (fenced)", capacity.Options{}, []step{
			{op: "hb", ep: 1, seq: 1, run: 3, want: "applied", load: 3},
			{op: "reserve", rid: "j1", max: 4, want: "ok", load: 4},
			{at: ms(5100), op: "reserve", rid: "j2", max: 4, want: "ok", load: 4},
			{at: ms(5300), op: "ack", rid: "j1", ep: 1, seq: 2, want: "expired", load: 4},
		}},
		{"counter-example D unfenced: the late ACK is counted", capacity.Options{Unfenced: true}, []step{
			{op: "hb", ep: 1, seq: 1, run: 3, want: "applied", load: 3},
			{op: "reserve", rid: "j1", max: 4, want: "ok", load: 4},
			{at: ms(5100), op: "reserve", rid: "j2", max: 4, want: "ok", load: 4},
			{at: ms(5300), op: "ack", rid: "j1", ep: 1, seq: 2, want: "late", load: 5},
		}},
		{"exact at quiescence; tombstones keep ACK retries duplicate for one interval", capacity.Options{}, []step{
			{op: "hb", ep: 1, seq: 1, run: 0, want: "applied", load: 0},
			{op: "reserve", rid: "a", max: 4, want: "ok", load: 1},
			{op: "ack", rid: "a", ep: 1, seq: 2, want: "ok", load: 1},
			{op: "hb", ep: 1, seq: 3, run: 1, want: "applied", load: 1},
			{op: "ack", rid: "a", ep: 1, seq: 2, want: "duplicate", load: 1},
			{op: "reserve", rid: "a", max: 4, want: "duplicate", load: 1},
			{op: "hb", ep: 1, seq: 4, run: 1, want: "applied", load: 1},
			{op: "ack", rid: "a", ep: 1, seq: 2, want: "expired", load: 1},
		}},
		{"heartbeat monotonicity and a new epoch clearing acked", capacity.Options{}, []step{
			{op: "hb", ep: 2, seq: 5, run: 1, want: "applied", load: 1},
			{op: "hb", ep: 2, seq: 5, run: 3, want: "stale", load: 1},
			{op: "hb", ep: 1, seq: 99, run: 3, want: "stale", load: 1},
			{op: "reserve", rid: "a", max: 4, want: "ok", load: 2},
			{op: "ack", rid: "a", ep: 2, seq: 6, want: "ok", load: 2},
			{op: "ack", rid: "b", ep: 1, seq: 6, want: "epoch-mismatch", load: 2},
			{op: "hb", ep: 3, seq: 1, run: 0, want: "applied", load: 0},
		}},
		{"unknown and stale nodes are refused; the timeout is inclusive", capacity.Options{}, []step{
			{op: "reserve", rid: "a", max: 4, want: "unknown-node", load: 0},
			{op: "hb", ep: 1, seq: 1, want: "applied", load: 0},
			{at: 45 * time.Second, op: "reserve", rid: "a", max: 4, want: "ok", load: 1},
			{at: 45*time.Second + ms(1), op: "reserve", rid: "b", max: 4, want: "stale-heartbeat", load: 1},
		}},
		{"TTL boundary exclusive", capacity.Options{}, []step{
			{op: "hb", ep: 1, seq: 1, want: "applied", load: 0},
			{op: "reserve", rid: "a", max: 1, want: "ok", load: 1},
			{at: ms(4999), op: "reserve", rid: "b", max: 1, want: "full", load: 1},
			{at: ms(5000), op: "reserve", rid: "b", max: 1, want: "ok", load: 1},
		}},
		{"release is local and idempotent; acked jobs are not released", capacity.Options{}, []step{
			{op: "hb", ep: 1, seq: 1, want: "applied", load: 0},
			{op: "reserve", rid: "a", max: 4, want: "ok", load: 1},
			{op: "reserve", rid: "b", max: 4, want: "ok", load: 2},
			{op: "ack", rid: "b", ep: 1, seq: 2, want: "ok", load: 2},
			{op: "release", rid: "a", want: "released", load: 1},
			{op: "release", rid: "a", want: "noop", load: 1},
			{op: "release", rid: "b", want: "noop", load: 1},
			{op: "release", rid: "zz", want: "noop", load: 1},
		}},
		{"sum, but release on ACK, leaks the acked slot (known bad)", capacity.Options{Accounting: capacity.SumReleaseOnAck}, []step{
			{op: "hb", ep: 1, seq: 1, run: 3, want: "applied", load: 3},
			{op: "reserve", rid: "j1", max: 4, want: "ok", load: 4},
			{op: "ack", rid: "j1", ep: 1, seq: 2, want: "ok", load: 3},
			{op: "reserve", rid: "j2", max: 4, want: "ok", load: 4},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { runSteps(t, tc.opts, tc.steps) })
	}
}

func TestLedgerRejectsBadInput(t *testing.T) {
	l, err := capacity.NewNodeLedger(capacity.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l, _, err = l.Heartbeat(t0, capacity.Heartbeat{Epoch: 1, Seq: 5})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		err  error
		want error
		word string
	}{
		{"empty rid", second(l.Reserve(t0, capacity.Reservation{})), capacity.ErrInvalidInput, "rid"},
		{"negative max", second(l.Reserve(t0, capacity.Reservation{RID: "a", Max: -1})), capacity.ErrInvalidInput, "max: Invalid value: -1"},
		{"negative ttl", second(l.Reserve(t0, capacity.Reservation{RID: "a", TTL: -time.Second})), capacity.ErrInvalidInput, "ttl: Invalid value: -1s"},
		{"ack empty rid", second(l.Ack(t0, capacity.Ack{})), capacity.ErrInvalidInput, "rid"},
		{"release empty rid", second(l.Release(t0, "")), capacity.ErrInvalidInput, "rid"},
		{"negative running", second(l.Heartbeat(t0, capacity.Heartbeat{Epoch: 1, Seq: 9, Running: -2})), capacity.ErrInvalidInput, "heartbeat.running: Invalid value: -2"},
		{"seq backwards", second(l.Heartbeat(t0, capacity.Heartbeat{Epoch: 1, Seq: 4})), capacity.ErrSeqBackwards, "Seq 4"},
		{"negative ttl option", errOf(capacity.NewNodeLedger(capacity.Options{TTL: -1})), capacity.ErrInvalidOptions, "ttl: Invalid value"},
		{"negative max option", errOf(capacity.NewNodeLedger(capacity.Options{MaxJobs: -3})), capacity.ErrInvalidOptions, "maxJobs: Invalid value: -3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !errors.Is(tc.err, tc.want) {
				t.Fatalf("err = %v, want %v", tc.err, tc.want)
			}
			if !strings.Contains(tc.err.Error(), tc.word) {
				t.Errorf("error %q does not name %q", tc.err, tc.word)
			}
		})
	}
}

// TestLedgerNeverMutatesItsReceiver keeps an old ledger and checks that every
// later operation left it as it was.
func TestLedgerNeverMutatesItsReceiver(t *testing.T) {
	l, _ := capacity.NewNodeLedger(capacity.Options{})
	l, _, _ = l.Heartbeat(t0, capacity.Heartbeat{Epoch: 1, Seq: 1, Running: 1})
	l, _, _ = l.Reserve(t0, capacity.Reservation{RID: "a"})
	l, _, _ = l.Reserve(t0, capacity.Reservation{RID: "c"})
	before := l.String()
	l2, _, _ := l.Reserve(t0, capacity.Reservation{RID: "b"})
	l2, _, _ = l2.Ack(t0, capacity.Ack{RID: "a", Epoch: 1, Seq: 2})
	_, _, _ = l2.Release(t0, "c")
	_, _, _ = l.Heartbeat(t0.Add(time.Second), capacity.Heartbeat{Epoch: 2, Seq: 1})
	_, _, _ = l.Release(t0.Add(time.Minute), "a")
	if diff := cmp.Diff(before, l.String()); diff != "" {
		t.Fatalf("ledger changed (-before +after):\n%s", diff)
	}
}

func second[A, B any](_ A, _ B, err error) error { return err }
func errOf[A any](_ A, err error) error          { return err }
