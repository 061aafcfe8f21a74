package expectations

import (
	"fmt"
	"testing"
	"time"
)

// invariants checks the State's internal bookkeeping: counts add up, every
// live item is in its group's order exactly once and keyed by its own key, no
// group or owner is empty, and a clean group's order is sorted.
func (s *State) invariants() error {
	total := 0
	for k, rec := range s.owners {
		if len(rec.groups) == 0 {
			return fmt.Errorf("owner %s has no groups", k)
		}
		n := 0
		for gname, g := range rec.groups {
			if len(g.byKey) == 0 {
				return fmt.Errorf("owner %s group %q is empty", k, gname)
			}
			live := 0
			var prev *item
			for _, it := range g.order {
				if it.dead {
					continue
				}
				live++
				if g.byKey[it.key()] != it {
					return fmt.Errorf("owner %s group %q: item %v is not under its key", k, gname, it.key())
				}
				if !g.dirty && prev != nil && prev.key().compare(it.key()) >= 0 {
					return fmt.Errorf("owner %s group %q: order not sorted at %v", k, gname, it.key())
				}
				prev = it
			}
			if live != len(g.byKey) {
				return fmt.Errorf("owner %s group %q: %d live items in order, %d keys", k, gname, live, len(g.byKey))
			}
			n += live
		}
		if n != rec.len {
			return fmt.Errorf("owner %s: len %d, groups hold %d", k, rec.len, n)
		}
		total += n
	}
	if total != s.len {
		return fmt.Errorf("len %d, owners hold %d", s.len, total)
	}
	if s.opts.OwnerIdentity == ByUID {
		for k, rec := range s.owners {
			if rec.owner.Name == "" {
				continue
			}
			if got, ok := s.names[podKey{rec.owner.Namespace, rec.owner.Name}]; !ok || got != k {
				return fmt.Errorf("owner %s (%s/%s) is not in the name index (index has %q)", k, rec.owner.Namespace, rec.owner.Name, got)
			}
		}
	}
	for nk, k := range s.names {
		if rec, ok := s.owners[k]; !ok || rec.owner.Namespace != nk.namespace || rec.owner.Name != nk.name {
			return fmt.Errorf("name index %v points at %q, which is not that owner", nk, k)
		}
	}
	return nil
}

// TestTenThousandSettleToNothing is the memory test: 10,000 items recorded
// and all settled leave no item, no group map and no owner behind.
func TestTenThousandSettleToNothing(t *testing.T) {
	s := &State{}
	o := Owner{Namespace: "ns", Name: "rc", UID: "u"}
	v := &View{}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 10000 {
		name := fmt.Sprintf("p-%05d", i)
		if _, err := s.Record(t0, Record{Owner: o, Group: fmt.Sprint("g", i%3), Action: Create, Token: "t" + name}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Resolve(t0, Ref{Owner: o, Group: fmt.Sprint("g", i%3), Token: "t" + name}, name, ""); err != nil {
			t.Fatal(err)
		}
		v.Add("ns", ViewPod{Name: name})
	}
	if err := s.invariants(); err != nil {
		t.Fatal(err)
	}
	for g := range 3 {
		r, err := s.Satisfied(t0, o, fmt.Sprint("g", g), v)
		if err != nil || !r.Satisfied {
			t.Fatalf("group %d: %v\n%s", g, err, r)
		}
	}
	if s.Len() != 0 || len(s.owners) != 0 || len(s.names) != 0 {
		t.Fatalf("Len %d, %d owners, %d names left", s.Len(), len(s.owners), len(s.names))
	}
}

// FuzzState drives a State with operations decoded from bytes and checks its
// bookkeeping after each one; it must never panic.
func FuzzState(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{0, 0, 0, 16, 32, 3, 3, 3, 7, 200, 3})
	f.Add([]byte{1, 17, 33, 49, 2, 3, 4, 5, 0x80, 0x81, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		opts := Options{}
		if len(data) > 0 {
			b := data[0]
			opts.OwnerIdentity = Identity(b & 1)
			opts.OnExpiry = ExpiryRule(b >> 1 & 1)
			opts.CountsTerminating = b>>2&1 == 1
			if !opts.CountsTerminating {
				opts.DeleteSatisfiedBy = DeleteRule(b >> 3 & 1)
			}
			opts.AbsentWithoutSeen = b>>4&1 == 1
			opts.CreateTimeout = []time.Duration{0, time.Second, Never, -5}[b>>5&3]
			data = data[1:]
		}
		s, err := New(opts)
		if err != nil {
			return // a negative timeout: rejected, as it must be
		}
		owners := []Owner{{Namespace: "n", Name: "a", UID: "1"}, {Namespace: "n", Name: "a", UID: "2"}, {Namespace: "n", Name: "b", UID: "1"}, {Name: "", UID: ""}}
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for i := 0; i+1 < len(data); i += 2 {
			b, c := data[i], data[i+1]
			o := owners[c&3]
			group := []string{"", "g"}[c>>2&1]
			pod := fmt.Sprint("p", c>>3&3)
			token := ""
			if c>>5&1 == 1 {
				token, pod = "t"+pod, ""
			}
			ref := Ref{Owner: o, Group: group, Pod: pod, Token: token}
			v := &View{}
			for j := range 4 {
				if b>>j&1 == 1 {
					v.Add(o.Namespace, ViewPod{Name: fmt.Sprint("p", j), Terminating: b>>(j+4)&1 == 1, Token: fmt.Sprint("tp", j)})
				}
			}
			switch b % 9 {
			case 0, 1:
				s.Record(now, Record{Owner: o, Group: group, Action: []Action{"", Create, Delete, "Move"}[c>>6], Pod: pod, Token: token, Seen: b&16 != 0})
			case 2:
				s.Conclude(now, ref, []CallResult{CallSucceeded, CallAlreadyDone, CallFailed, CallAmbiguous}[c>>6], fmt.Sprint("p", b>>4&3), "")
			case 3:
				s.Satisfied(now, o, group, v)
			case 4:
				s.Observe(o, ObservedPod{Name: fmt.Sprint("p", b>>4&3), Token: fmt.Sprint("tp", b>>6)})
			case 5:
				s.Forget(o)
			case 6:
				s.Prune(now, owners[:c&3])
			case 7:
				now = now.Add(time.Duration(c) * time.Second)
			case 8:
				s.Rollback(ref)
			}
			if err := s.invariants(); err != nil {
				t.Fatalf("after op %d (%d, %d): %v", i/2, b, c, err)
			}
		}
		if err := s.Clone().invariants(); err != nil {
			t.Fatalf("clone: %v", err)
		}
	})
}

// TestChecksAllocateNothingOnValidInput: the checks every recording and
// lookup runs (the clock, the owner, the record or reference, the options)
// build a field path only when one fails, so valid input allocates nothing.
// Breaking it: build any path eagerly (field.NewPath outside an error branch).
func TestChecksAllocateNothingOnValidInput(t *testing.T) {
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	owner := Owner{Namespace: "ns", Name: "rc", UID: "u1"}
	rec := Record{Owner: owner, Group: "g", Action: Create, Token: "t1"}
	del := Record{Owner: owner, Group: "g", Action: Delete, Pod: "p1"}
	ref := rec.Ref()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	allocs := testing.AllocsPerRun(200, func() {
		if err := checkNow(now); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ownerKey(owner); err != nil {
			t.Fatal(err)
		}
		if err := rec.validate(); err != nil {
			t.Fatal(err)
		}
		if err := del.validate(); err != nil {
			t.Fatal(err)
		}
		if err := ref.validate(); err != nil {
			t.Fatal(err)
		}
		if err := s.opts.Validate(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("the checks allocate %v times per call on valid input, want 0", allocs)
	}
}
