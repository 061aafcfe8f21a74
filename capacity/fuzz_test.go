package capacity_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/plancore/plancore/capacity"
	"github.com/plancore/plancore/fake"
)

// FuzzLedgerOps decodes bytes into operations on one node and runs them on a
// NodeLedger and on a MemoryStore at the same times: no input may panic, and the
// two must answer alike (bad input included).
func FuzzLedgerOps(f *testing.F) {
	f.Add([]byte{3, 1, 1, 0, 0, 2, 0, 1, 1, 1, 2, 4, 2})
	f.Add([]byte{0, 0, 0, 3, 9, 9, 1, 5, 0, 2, 250, 250, 4, 4, 4})
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		now := t0
		o := capacity.Options{Unfenced: len(data)%2 == 1}
		l, err := capacity.NewNodeLedger(o)
		if err != nil {
			t.Fatal(err)
		}
		s, err := capacity.NewMemoryStore(capacity.MemoryStoreOptions{Options: o, Clock: fake.ClockFunc(func() time.Time { return now })})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+3 <= len(data); i += 3 {
			op, a, b := data[i]%5, data[i+1], data[i+2]
			rid := fmt.Sprintf("r%d", a%6)
			if a%7 == 6 {
				rid = ""
			}
			var got, want string
			switch op {
			case 0:
				r := capacity.Reservation{Node: "n", RID: rid, Max: int(int8(b)) % 5, TTL: time.Duration(int8(a)) * 100 * time.Millisecond}
				var lr capacity.ReserveResult
				var lerr error
				l, lr, lerr = l.Reserve(now, r)
				sr, serr := s.Reserve(ctx, r)
				got, want = fmt.Sprint(sr, serr), fmt.Sprint(lr, lerr)
			case 1:
				ack := capacity.Ack{Node: "n", RID: rid, Epoch: uint64(b % 3), Seq: uint64(b)}
				var la capacity.AckStatus
				var lerr error
				l, la, lerr = l.Ack(now, ack)
				sa, serr := s.Ack(ctx, ack)
				got, want = fmt.Sprint(sa, serr), fmt.Sprint(la, lerr)
			case 2:
				var lok bool
				var lerr error
				l, lok, lerr = l.Release(now, rid)
				sok, serr := s.Release(ctx, "n", rid)
				got, want = fmt.Sprint(sok, serr), fmt.Sprint(lok, lerr)
			case 3:
				h := capacity.Heartbeat{Epoch: uint64(a % 3), Seq: uint64(b), Running: int(int8(a)) % 6}
				var lh capacity.HeartbeatStatus
				var lerr error
				l, lh, lerr = l.Heartbeat(now, h)
				sh, serr := s.Heartbeat(ctx, "n", h)
				// The store names the node in its messages; compare outcomes.
				got, want = fmt.Sprint(sh, serr != nil), fmt.Sprint(lh, lerr != nil)
			case 4:
				now = now.Add(time.Duration(b) * 50 * time.Millisecond)
			}
			if got != want {
				t.Fatalf("op %d (%d %d %d): store %s, ledger %s", i/3, op, a, b, got, want)
			}
		}
	})
}
