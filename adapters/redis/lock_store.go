package redis

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/plancore/plancore"
	"github.com/plancore/plancore/lock"
)

var (
	//go:embed lua/lock_cas.lua
	lockCASSource string
	//go:embed lua/lock_cad.lua
	lockCADSource string
	//go:embed lua/lock_get.lua
	lockGetSource string

	lockCASScript = goredis.NewScript(lockCASSource)
	lockCADScript = goredis.NewScript(lockCADSource)
	lockGetScript = goredis.NewScript(lockGetSource)
)

// LockStoreOptions configures a LockStore. The zero value means the
// documented defaults.
type LockStoreOptions struct {
	// KeyPrefix prefixes every key and the change channel. Default
	// "plancore:lock:". A lock is stored at
	// <prefix>{<length of lock name>:<lock name>:<node>} and its epoch
	// high-water mark at the same key followed by ":epoch"; the hash tag keeps
	// both in one Redis Cluster slot. The length prefix makes the key
	// unambiguous: lock "a:b" on node "c" and lock "a" on node "b:c" are two
	// keys. (Keys written before the length prefix are not read: there were
	// no users yet.)
	KeyPrefix string
	// ServerTTL, when positive, makes Redis expire a lock value on its own, a
	// backstop for a store whose clients all vanished. It is off by default:
	// the decision owns expiry, and a server-side expiry would bypass the
	// protection of holders still allocating. It must be at least the
	// allocating ceiling of Lock (3 × TTL by default).
	ServerTTL time.Duration
	// Lock are the lock options the store is used with, to check ServerTTL.
	Lock lock.Options
	// WaitReplicas is how many replicas must have every write (acquire,
	// steal, release) and every lock value Get returns before the store
	// answers: 0, the default, means every replica the primary streams to,
	// as ROLE lists them on each call; above zero, exactly that many. Each
	// call ends with WAIT on the connection that wrote, in the same pipeline
	// (one round trip); a call that fewer replicas acknowledged within
	// WaitTimeout fails with an error (not a conflict), an unknown outcome
	// after which lock.Locker re-reads. So a lock and its fencing epoch that
	// the store acknowledged are on every replica, and a replica promoted in
	// a failover neither hands the lock to a second holder nor issues that
	// epoch again. On Cluster each call waits on its key's shard.
	WaitReplicas int
	// WaitTimeout bounds each WAIT; zero means 100ms. It must be at least
	// 1ms, since WAIT with 0 blocks forever.
	WaitTimeout time.Duration
	// AcceptLossOnFailover turns the waiting off: a failover to a replica
	// that had not yet received a grant loses it, and the promoted replica
	// may give the lock to a second holder with the same fencing epoch. It
	// cannot be combined with WaitReplicas.
	AcceptLossOnFailover bool
}

// Validate reports a ServerTTL that could expire a lock the decision would
// still protect, and waiting options out of range (as a
// *plancore.InvalidError wrapping lock.ErrInvalidOptions).
func (o LockStoreOptions) Validate() error {
	if err := o.Lock.Validate(); err != nil {
		return err
	}
	if err := plancore.Invalid(lock.ErrInvalidOptions, validateReplicaWait(o.WaitReplicas, o.WaitTimeout, o.AcceptLossOnFailover)); err != nil {
		return err
	}
	if o.ServerTTL < 0 {
		return fmt.Errorf("redis: LockStoreOptions.ServerTTL must not be negative, got %v", o.ServerTTL)
	}
	if o.ServerTTL == 0 {
		return nil
	}
	floor := 3 * o.Lock.EffectiveTTL()
	switch c := o.Lock.AllocatingCeiling; {
	case o.Lock.StealFromAllocatingHolder:
		floor = o.Lock.EffectiveTTL()
	case c == lock.AllocatingCeilingNever:
		return fmt.Errorf("redis: LockStoreOptions.ServerTTL %v would expire locks that Lock.AllocatingCeiling (never) protects forever", o.ServerTTL)
	case c > 0:
		floor = c
	}
	if o.ServerTTL < floor {
		return fmt.Errorf("redis: LockStoreOptions.ServerTTL %v is below %v, the age up to which the decision may keep a lock", o.ServerTTL, floor)
	}
	return nil
}

// LockStore is a lock.Store on one Redis primary. The value is the extended
// record, so Version is the raw value itself (unique thanks to the UID and
// epoch). Acquire and steal are one Lua script that compares the value,
// checks that the new epoch is exactly the stored high-water mark + 1, and
// sets both; release is a compare-and-delete script that keeps the epoch. Both
// publish the key on a change channel, which Changes listens to, so waiting
// acquirers wake on a release.
//
// Redlock's quorum over several primaries is out of scope; unlike Redlock, the
// epoch gives consumers a fencing token. Epochs survive releases, and by
// default failovers: the epoch high-water mark is written by the same script
// as the lock, and the store answers only once every replica has both
// (WaitReplicas), so a promoted replica's high-water mark is at least every
// epoch the store has acknowledged and it never issues one again. Epochs do
// not survive the loss of every copy of Redis's data (a restart without
// persistence): run Redis with persistence where fencing matters.
type LockStore struct {
	client goredis.UniversalClient
	opts   LockStoreOptions
	rw     *replicaWait
	// looked holds the addresses ("" for a client of one primary) whose
	// replicas a call has already learned with ROLE.
	looked  sync.Map
	reloads atomic.Uint64

	mu      sync.Mutex
	sub     *goredis.PubSub
	waiters map[string]chan struct{}
}

var (
	_ lock.Store    = (*LockStore)(nil)
	_ lock.Notifier = (*LockStore)(nil)
)

// NewLockStore returns a store on client. A client that would ignore its
// callers' deadlines is refused with an error wrapping
// lock.ErrInvalidOptions and ErrIgnoresDeadlines (see CheckDeadlines).
func NewLockStore(client goredis.UniversalClient, opts LockStoreOptions) (*LockStore, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if err := CheckDeadlines(client); err != nil {
		return nil, fmt.Errorf("%w: %w", lock.ErrInvalidOptions, err)
	}
	if _, ring := client.(*goredis.Ring); ring && !opts.AcceptLossOnFailover {
		return nil, fmt.Errorf("%w: a *goredis.Ring has no primary to WAIT on; use a client of one primary, Sentinel or Cluster, or set AcceptLossOnFailover", lock.ErrInvalidOptions)
	}
	if opts.KeyPrefix == "" {
		opts.KeyPrefix = "plancore:lock:"
	}
	return &LockStore{client: client, opts: opts, waiters: map[string]chan struct{}{},
		rw: newReplicaWait(opts.WaitReplicas, opts.WaitTimeout, opts.AcceptLossOnFailover)}, nil
}

// run calls sc on keys, followed, unless the store accepts losses on
// failover, by WAIT and ROLE in the same pipeline on the primary that owns
// the keys (see durability.go), so its writes are on every replica before
// it answers. Unlike the capacity store's hot path, every call asks ROLE:
// lock calls are few, and so a replica that attaches is waited for from
// the first call after it, with no window.
func (s *LockStore) run(ctx context.Context, sc *goredis.Script, keys []string, args ...any) *goredis.Cmd {
	if s.rw == nil || s.client == nil {
		cmd := goredis.NewCmd(ctx)
		cmd.SetErr(fmt.Errorf("%w: LockStore not made by NewLockStore", lock.ErrNilStore))
		return cmd
	}
	if s.rw.mode == waitNone {
		return sc.Run(ctx, s.client, keys, args...)
	}
	var pl pipeliner = s.client
	addr := ""
	if cc, ok := s.client.(*goredis.ClusterClient); ok {
		m, err := cc.MasterForKey(ctx, keys[0])
		if err != nil {
			cmd := goredis.NewCmd(ctx)
			cmd.SetErr(err)
			return cmd
		}
		pl, addr = m, m.Options().Addr
	}
	if _, ok := s.looked.Load(addr); !ok && s.rw.mode == waitAll {
		// The first call on this primary learns its replicas first, so
		// that it does not fail for having waited for none.
		n, err := replicasOf(pl.(doer).Do(ctx, "ROLE"))
		if err != nil {
			cmd := goredis.NewCmd(ctx)
			cmd.SetErr(err)
			return cmd
		}
		s.rw.saw(addr, n)
		s.looked.Store(addr, true)
	}
	cmds := make([]*goredis.Cmd, 1)
	runOn(ctx, pl, []scriptCall{{sc, keys, args}}, cmds, false, s.rw.shard(addr), addr, s.rw, &s.reloads)
	return cmds[0]
}

// Key returns the Redis key of a lock. Distinct lock keys always give
// distinct Redis keys: the lock name's length in bytes comes first, so where
// the name ends and the node begins is never a guess, and a value key (ending
// in "}") never equals an epoch key (ending in ":epoch").
func (s *LockStore) Key(key lock.Key) string {
	return s.opts.KeyPrefix + "{" + strconv.Itoa(len(key.Name)) + ":" + key.Name + ":" + key.Node + "}"
}

func (s *LockStore) channel() string { return s.opts.KeyPrefix + "changes" }

// Get implements lock.Store with one MGET of the value and its epoch.
func (s *LockStore) Get(ctx context.Context, key lock.Key) (lock.Observation, error) {
	if err := key.Validate(); err != nil {
		return lock.Observation{}, err
	}
	k := s.Key(key)
	var vals []any
	var err error
	if s.rw != nil && s.rw.mode == waitNone {
		vals, err = s.client.MGet(ctx, k, k+":epoch").Result()
	} else {
		vals, err = s.run(ctx, lockGetScript, []string{k, k + ":epoch"}).Slice()
		if err == nil && len(vals) != 2 {
			err = fmt.Errorf("reply of %d values", len(vals))
		}
	}
	if err != nil {
		return lock.Observation{}, fmt.Errorf("redis: get lock %s: %w", key, err)
	}
	obs := lock.Observation{Key: key}
	if raw, ok := vals[0].(string); ok {
		obs.Present, obs.Raw, obs.Version = true, raw, raw
	}
	if e, ok := vals[1].(string); ok {
		high, err := strconv.ParseUint(e, 10, 64)
		if err != nil {
			return lock.Observation{}, fmt.Errorf("redis: lock %s has a corrupt epoch %q: %w", key, e, err)
		}
		obs.EpochHigh = high
	}
	return obs, nil
}

// CompareAndSwap implements lock.Store.
func (s *LockStore) CompareAndSwap(ctx context.Context, key lock.Key, pre lock.Precondition, rec lock.Record) error {
	if err := key.Validate(); err != nil {
		return err
	}
	if err := rec.ValidateExtended(); err != nil {
		return err
	}
	present := "0"
	if pre.Present {
		present = "1"
	}
	k := s.Key(key)
	res, err := s.run(ctx, lockCASScript, []string{k, k + ":epoch"},
		present, pre.Raw, lock.Encode(rec, lock.FormatExtended),
		strconv.FormatUint(rec.Epoch-1, 10), strconv.FormatUint(rec.Epoch, 10),
		strconv.FormatInt(s.opts.ServerTTL.Milliseconds(), 10), s.channel()).Int()
	if err != nil {
		return fmt.Errorf("redis: compare-and-swap lock %s: %w", key, err)
	}
	switch res {
	case 1:
		return nil
	case -1:
		return fmt.Errorf("%w: %s epoch %d is not the next", lock.ErrConflict, key, rec.Epoch)
	}
	return fmt.Errorf("%w: %s no longer %s", lock.ErrConflict, key, pre)
}

// CompareAndDelete implements lock.Store; the epoch key stays.
func (s *LockStore) CompareAndDelete(ctx context.Context, key lock.Key, pre lock.Precondition) error {
	if err := key.Validate(); err != nil {
		return err
	}
	if !pre.Present {
		return fmt.Errorf("%w: %s: nothing to delete under %s", lock.ErrConflict, key, pre)
	}
	res, err := s.run(ctx, lockCADScript, []string{s.Key(key)}, pre.Raw, s.channel()).Int()
	if err != nil {
		return fmt.Errorf("redis: compare-and-delete lock %s: %w", key, err)
	}
	if res != 1 {
		return fmt.Errorf("%w: %s no longer %s", lock.ErrConflict, key, pre)
	}
	return nil
}

// Changes implements lock.Notifier: the channel closes at the next write the
// scripts publish for key. The first call subscribes to the change channel
// (and waits for Redis to confirm, so no later write is missed); if that
// fails, Changes returns nil and waiters fall back to their backoff.
func (s *LockStore) Changes(key lock.Key) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sub == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		sub := s.client.Subscribe(ctx, s.channel())
		if _, err := sub.Receive(ctx); err != nil {
			_ = sub.Close()
			return nil
		}
		s.sub = sub
		go s.dispatch(sub.Channel())
	}
	k := s.Key(key)
	ch := s.waiters[k]
	if ch == nil {
		ch = make(chan struct{})
		s.waiters[k] = ch
	}
	return ch
}

func (s *LockStore) dispatch(msgs <-chan *goredis.Message) {
	for m := range msgs {
		s.mu.Lock()
		if ch := s.waiters[m.Payload]; ch != nil {
			close(ch)
			delete(s.waiters, m.Payload)
		}
		s.mu.Unlock()
	}
	// The subscription closed: wake everyone rather than leave them waiting.
	s.mu.Lock()
	for k, ch := range s.waiters {
		close(ch)
		delete(s.waiters, k)
	}
	s.mu.Unlock()
}

// Close stops the change subscription, if any. The client stays open.
func (s *LockStore) Close() error {
	s.mu.Lock()
	sub := s.sub
	s.sub = nil
	s.mu.Unlock()
	if sub == nil {
		return nil
	}
	if err := sub.Close(); err != nil && !errors.Is(err, goredis.ErrClosed) {
		return fmt.Errorf("redis: close lock change subscription: %w", err)
	}
	return nil
}
