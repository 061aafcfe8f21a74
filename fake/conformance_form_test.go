package fake_test

import (
	"context"
	"testing"

	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/lock"
)

// blindDeleteStore deletes whatever value the key holds, ignoring the
// precondition: the lock-store suite must notice.
type blindDeleteStore struct{ *lock.MemoryStore }

func (s blindDeleteStore) CompareAndDelete(ctx context.Context, key lock.Key, _ lock.Precondition) error {
	obs, err := s.Get(ctx, key)
	if err != nil || !obs.Present {
		return err
	}
	return s.MemoryStore.CompareAndDelete(ctx, key, lock.Precondition{Present: true, Raw: obs.Raw, Version: obs.Version})
}

// TestLockSuiteCatchesABlindDelete: built on the one table form, each clause
// on a fresh store, the lock-store suite still finds a store that deletes a
// value it did not observe, and names the clause.
func TestLockSuiteCatchesABlindDelete(t *testing.T) {
	got := fake.CheckLockStore(context.Background(), func() lock.Store { return blindDeleteStore{lock.NewMemoryStore()} })
	if len(got) == 0 {
		t.Fatal("a store that deletes without checking the precondition passed the suite")
	}
	for _, v := range got {
		if v.Check != "release is one compare-and-delete and keeps the epoch" && v.Check != "keys are independent" {
			t.Errorf("unexpected violation %v", v)
		}
	}
}
