package redis

import (
	"context"
	"embed"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/plancore/plancore"
	"github.com/plancore/plancore/capacity"
	goredis "github.com/redis/go-redis/v9"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"
)

//go:embed lua/capacity_*.lua
var capacityLua embed.FS

// capacityScript builds one operation's script: the shared library followed
// by the operation's body, so every script is self-contained on the server.
func capacityScript(name string) *goredis.Script {
	lib, err := capacityLua.ReadFile("lua/capacity_lib.lua")
	if err != nil {
		panic(err) // embedded at build time: cannot fail
	}
	body, err := capacityLua.ReadFile("lua/capacity_" + name + ".lua")
	if err != nil {
		panic(err)
	}
	return goredis.NewScript(string(lib) + "\n" + string(body))
}

// capacityStandalone builds a script that does without the library: the
// hot reserves, written out flat. It does not call
// redis.replicate_commands(): since Redis 5 scripts replicate their effects
// by default, and the scripts need Redis 7 (EVALSHA_RO) anyway.
func capacityStandalone(name string) *goredis.Script {
	body, err := capacityLua.ReadFile("lua/capacity_" + name + ".lua")
	if err != nil {
		panic(err) // embedded at build time: cannot fail
	}
	return goredis.NewScript(string(body))
}

var (
	capReserve      = capacityStandalone("reserve")
	capReserveBatch = capacityStandalone("reserve_batch")
	capAck          = capacityScript("ack")
	capRelease      = capacityScript("release")
	capHeartbeat    = capacityScript("heartbeat")
	capLoads        = capacityScript("loads")
	capScripts      = []*goredis.Script{capReserve, capReserveBatch, capAck, capRelease, capHeartbeat, capLoads}
)

// CapacityReserveSHA is the SHA1 of the reserve script, for SCRIPT EXISTS in
// monitoring and for tools that call it with EVALSHA, with the arguments
// lua/capacity_reserve.lua lists (the second is binary MessagePack).
func CapacityReserveSHA() string { return capReserve.Hash() }

// maxExact is the largest integer a Lua number (a double) holds exactly; the
// scripts compare epochs and seqs as Lua numbers.
const maxExact = 1<<53 - 1

// CapacityStoreOptions configure a CapacityStore. The zero value means the
// defaults of capacity.Options.
type CapacityStoreOptions struct {
	capacity.Options
	// Prefix goes before each key's {n:<id>} hash tag; it must not contain '{'.
	Prefix string
	// Cluster makes ReserveBatch and Loads group their nodes by hash slot and
	// send one script call per slot, pipelined per shard, as Redis Cluster
	// requires. A *goredis.ClusterClient (including one behind a
	// goredis.UniversalClient) turns it on by itself; set it for another
	// client that fronts a Cluster, such as a client of a cluster proxy that
	// rejects cross-slot scripts. Such a client must also offer
	// Pipeline() goredis.Pipeliner, as *goredis.Client does.
	Cluster bool
	// WaitReplicas is how many replicas must have every grant (Reserve,
	// ReserveBatch) and ACK before the store answers: 0, the default, means
	// every replica the primary streams to, learned from ROLE (see
	// AcceptLossOnFailover); above zero, exactly that many, whatever ROLE
	// says. Each such call ends with WAIT on the connection that wrote, in
	// the same pipeline (one round trip), and a call that fewer replicas
	// acknowledged within WaitTimeout fails with an error wrapping
	// capacity.ErrStoreUnavailable: an unknown outcome, never a lease, after
	// which retrying the same rid is safe (its lease, if written, answers
	// DUPLICATE once it has reached the replicas) and a lease that was
	// written expires after its TTL or on Release. On Cluster each shard's
	// calls wait on that shard. Heartbeats and releases do not wait: losing
	// one in a failover refuses a node until its next heartbeat, or counts
	// a slot that is free, both closed.
	WaitReplicas int
	// WaitTimeout bounds each WAIT; zero means 100ms. It must be at least
	// 1ms, since WAIT with 0 blocks forever.
	WaitTimeout time.Duration
	// AcceptLossOnFailover turns the waiting off: the store answers as soon
	// as the primary has written, and a failover to a replica that had not
	// yet received a grant loses it, so the promoted replica grants the same
	// slots again and nodes are asked for more than M jobs (their own hard
	// limit then refuses the surplus). Set it only for a primary without
	// replicas that will never fail over, or where a lost grant is
	// acceptable; it cannot be combined with WaitReplicas.
	AcceptLossOnFailover bool
	// Clock, when set, makes every script use this client clock instead of
	// Redis TIME. It reproduces the seed, whose script takes the client's now,
	// and lets tests hit exact TTL boundaries. Leave it nil in production:
	// clients' clocks disagree, and skew in either direction oversells.
	Clock clock.PassiveClock
}

// Validate reports every field out of range at once, as a
// *plancore.InvalidError wrapping capacity.ErrInvalidOptions.
func (o CapacityStoreOptions) Validate() error {
	var errs field.ErrorList
	var inv *plancore.InvalidError
	if err := o.Options.Validate(); errors.As(err, &inv) {
		errs = append(errs, inv.Errors...)
	}
	switch o.Accounting {
	case "", capacity.Sum, capacity.SeedMax:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("accounting"), string(o.Accounting),
			[]string{string(capacity.Sum), string(capacity.SeedMax)}))
	}
	errs = append(errs, validateReplicaWait(o.WaitReplicas, o.WaitTimeout, o.AcceptLossOnFailover)...)
	if strings.Contains(o.Prefix, "{") {
		errs = append(errs, field.Invalid(field.NewPath("prefix"), o.Prefix, "must not contain '{'"))
	}
	return plancore.Invalid(capacity.ErrInvalidOptions, errs)
}

// CapacityStore is the capacity.SlotStore of several scheduler instances,
// on Redis. Each node is one small hash,
//
//	<prefix>{n:<id>}  HASH  ''    → the node's state: its last heartbeat (epoch, seq,
//	                               running, receive time, M, usage) and lifetimes
//	                        <rid> → a pending lease's expiry (ms), or an acked
//	                               job's node seq (stored negated)
//
// and each operation is one Lua script over that one key: a reserve reads
// the hash (HGETALL) and writes its lease (HSET), two commands. A lapsed
// lease is deleted by the next call that reads its node, and a node is
// refused once it holds M live leases (and jobs acked since its previous
// heartbeat), so a node's hash holds about M entries and a call's cost is
// bounded by M, which capacity.MaxLimit bounds. The hash tag keeps a node in
// one Cluster slot, and there is no global hot key. Scripts read Redis TIME
// (unless Clock is set), run with EVALSHA and fall back to EVAL on NOSCRIPT,
// so a restart or SCRIPT FLUSH costs one round trip, never a wrong answer;
// ScriptReloads counts those fallbacks. Wrap the store in
// capacity.CountingStore to count its answers (reserve_total, ack_total).
//
// Every Redis failure is an error wrapping capacity.ErrStoreUnavailable:
// never a lease and never a "yes". The seed's wrapper maps errors to "full"
// (false); here the caller knows the outcome is unknown and may retry the
// same rid safely. A call's deadline holds while Redis stalls only if the
// client honours contexts; NewCapacityStore checks that it does (see
// CheckDeadlines).
//
// On standalone or Sentinel Redis, ReserveBatch and Loads send all their
// nodes' keys in one atomic call. On Redis Cluster (a *goredis.ClusterClient,
// or the Cluster option) a script may touch one slot only, so they group
// their nodes by hash slot and pipeline one call per slot; an all-or-nothing
// batch is then made good by compensation, which is not atomic (see
// ReserveBatch).
type CapacityStore struct {
	c     goredis.Scripter
	pipe  pipeliner // non-nil in Cluster mode
	opts  capacity.Options
	acct  string
	pre   string
	clock clock.PassiveClock
	// Script arguments that never change, boxed once: every interface
	// conversion of a string or a large int is an allocation, and Reserve is
	// the hot path.
	acctArg, hbtoArg, ttlArg, maxArg any
	lastTTL                          atomic.Pointer[boxedTTL]
	lastParams                       atomic.Pointer[boxedParams]
	reloads                          atomic.Uint64
	// rw decides the WAIT that follows grants and ACKs (durability.go).
	rw *replicaWait
}

var _ capacity.SlotStore = (*CapacityStore)(nil)

// NewCapacityStore returns a store on c and loads its scripts (SCRIPT LOAD),
// failing with capacity.ErrStoreUnavailable if Redis cannot be reached. A
// client that would ignore its callers' deadlines is refused with an error
// wrapping capacity.ErrInvalidOptions and ErrIgnoresDeadlines (see
// CheckDeadlines).
func NewCapacityStore(ctx context.Context, c goredis.Scripter, o CapacityStoreOptions) (*CapacityStore, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if err := CheckDeadlines(c); err != nil {
		return nil, fmt.Errorf("%w: %w", capacity.ErrInvalidOptions, err)
	}
	s := &CapacityStore{c: c, opts: o.Options.WithDefaults(), acct: "sum", pre: o.Prefix, clock: o.Clock}
	if o.Accounting == capacity.SeedMax {
		s.acct = "max"
	}
	s.acctArg, s.hbtoArg, s.ttlArg, s.maxArg = s.acct, msArg(s.opts.HeartbeatTimeout), msArg(s.opts.TTL), s.opts.MaxJobs
	if cc, ok := c.(*goredis.ClusterClient); ok {
		s.pipe = cc
	} else if o.Cluster {
		p, ok := c.(pipeliner)
		if !ok {
			return nil, fmt.Errorf("%w: Cluster is set but the client %T cannot pipeline", capacity.ErrInvalidOptions, c)
		}
		s.pipe = p
	}
	s.rw = newReplicaWait(o.WaitReplicas, o.WaitTimeout, o.AcceptLossOnFailover)
	if s.rw.mode != waitNone {
		if _, ok := c.(pipeliner); !ok {
			return nil, fmt.Errorf("%w: the client %T cannot pipeline, which waiting for replicas (WAIT on the connection that wrote) needs; set AcceptLossOnFailover to go without", capacity.ErrInvalidOptions, c)
		}
	}
	if err := s.lookAtReplicas(ctx); err != nil {
		return nil, err
	}
	if err := s.LoadScripts(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// ready reports a zero store (not made by NewCapacityStore) as an error
// wrapping capacity.ErrNilStore, never a panic.
func (s *CapacityStore) ready() error {
	if s == nil || s.c == nil {
		return fmt.Errorf("%w: %w: CapacityStore not made by NewCapacityStore", capacity.ErrInvalidInput, capacity.ErrNilStore)
	}
	return nil
}

// LoadScripts runs SCRIPT LOAD for every capacity script; call it after a
// reconnect to a fresh server to save the NOSCRIPT round trip.
func (s *CapacityStore) LoadScripts(ctx context.Context) error {
	if err := s.ready(); err != nil {
		return err
	}
	for _, sc := range capScripts {
		if err := sc.Load(ctx, s.c).Err(); err != nil {
			return unavailable("script load", err)
		}
	}
	return nil
}

// run calls sc with EVALSHA and, on NOSCRIPT (a restart, a failover, SCRIPT
// FLUSH or, on Redis 7.4+, eviction emptied the script cache), once more with
// EVAL, which loads it again. NOSCRIPT proves the script did not run, so the
// retry cannot apply it twice. Each reload is counted (ScriptReloads).
func (s *CapacityStore) run(ctx context.Context, sc *goredis.Script, keys []string, args ...any) *goredis.Cmd {
	r := sc.EvalSha(ctx, s.c, keys, args...)
	if noScript(r.Err()) {
		s.reloads.Add(1)
		return sc.Eval(ctx, s.c, keys, args...)
	}
	return r
}

// write runs one call of a script that grants (reserve, batch, ack), with the
// WAIT the store's policy asks for (durability.go): on a primary seen
// without replicas, and with AcceptLossOnFailover, it is run alone.
func (s *CapacityStore) write(ctx context.Context, sc *goredis.Script, keys []string, args []any) *goredis.Cmd {
	w, err := s.waitFor(ctx)
	var cmd *goredis.Cmd
	switch {
	case err != nil:
		cmd = goredis.NewCmd(ctx)
		cmd.SetErr(err)
	case !w.on:
		cmd = s.run(ctx, sc, keys, args...)
	default:
		cmd = s.runWaited(ctx, []scriptCall{{sc, keys, args}}, w)[0]
	}
	if cmd.Err() != nil {
		s.rw.failed()
	}
	return cmd
}

// waitFor returns the WAIT of the next granting call: on a
// *goredis.ClusterClient only whether to wait, as each shard's pipeline
// waits with its own count (runWaited).
func (s *CapacityStore) waitFor(ctx context.Context) (waitSpec, error) {
	if _, ok := s.c.(*goredis.ClusterClient); ok {
		return waitSpec{on: s.rw.mode != waitNone}, nil
	}
	return s.rw.standalone(ctx, s.c)
}

// lookAtReplicas learns, when the store waits for every replica, how many
// replicas its primary (on Cluster, each shard's primary) streams to.
func (s *CapacityStore) lookAtReplicas(ctx context.Context) error {
	if s.rw.mode != waitAll {
		return nil
	}
	cc, ok := s.c.(*goredis.ClusterClient)
	if !ok {
		if err := s.rw.look(ctx, s.c); err != nil {
			return unavailable("replica check", fmt.Errorf("%w (grant ROLE, set WaitReplicas, or set AcceptLossOnFailover)", err))
		}
		return nil
	}
	err := cc.ForEachMaster(ctx, func(ctx context.Context, m *goredis.Client) error {
		n, err := replicasOf(m.Do(ctx, "ROLE"))
		if err == nil {
			s.rw.saw(m.Options().Addr, n)
		}
		return err
	})
	if err != nil {
		return unavailable("replica check", err)
	}
	return nil
}

// runRO is run with EVALSHA_RO and EVAL_RO, which a replica may serve.
func (s *CapacityStore) runRO(ctx context.Context, sc *goredis.Script, keys []string, args ...any) *goredis.Cmd {
	r := sc.EvalShaRO(ctx, s.c, keys, args...)
	if noScript(r.Err()) {
		s.reloads.Add(1)
		return sc.EvalRO(ctx, s.c, keys, args...)
	}
	return r
}

func noScript(err error) bool {
	return err != nil && (errors.Is(err, goredis.ErrNoScript) || goredis.HasErrorPrefix(err, "NOSCRIPT"))
}

// ScriptReloads is the script_reloads_total counter: how many calls found
// their script missing from the server's cache and sent it again. A rising
// count means restarts, failovers or script-cache evictions.
func (s *CapacityStore) ScriptReloads() uint64 { return s.reloads.Load() }

func unavailable(op string, err error) error {
	return fmt.Errorf("%w: redis %s: %w", capacity.ErrStoreUnavailable, op, err)
}

func (s *CapacityStore) keys(node string) []string {
	return s.appendKeys(make([]string, 0, 1), node)
}

// appendKeys appends the key of each node, <prefix>{n:<id>}, to dst, all of
// them substrings of one allocation: a batch on 16 nodes builds its 16 keys
// with one string rather than 16.
func (s *CapacityStore) appendKeys(dst []string, nodes ...string) []string {
	size := 0
	for _, n := range nodes {
		size += len(s.pre) + len(n) + 4 // <prefix>{n:<id>}
	}
	var b strings.Builder
	b.Grow(size)
	for _, n := range nodes {
		b.WriteString(s.pre)
		b.WriteString("{n:")
		b.WriteString(n)
		b.WriteString("}")
	}
	all, off := b.String(), 0
	for _, n := range nodes {
		l := len(s.pre) + len(n) + 4
		dst = append(dst, all[off:off+l])
		off += l
	}
	return dst
}

// ttl is the TTL argument of a script, boxed once for the default TTL and
// for the last other TTL asked for (callers mostly use one or two).
func (s *CapacityStore) ttl(d time.Duration) any {
	if d == s.opts.TTL {
		return s.ttlArg
	}
	if b := s.lastTTL.Load(); b != nil && b.d == d {
		return b.arg
	}
	b := &boxedTTL{d, msArg(d)}
	s.lastTTL.Store(b)
	return b.arg
}

// boxedTTL is a TTL and its script argument.
type boxedTTL struct {
	d   time.Duration
	arg any
}

// reserveParams is the reserve script's second argument: its limit (limit,
// or when that is 0 the store's default negated, meaning "the node's, else
// this"), TTL and heartbeat timeout in ms, as three MessagePack integers,
// boxed once for the last limit and TTL asked for (callers mostly use one).
func (s *CapacityStore) reserveParams(limit int, ttl time.Duration) any {
	if p := s.lastParams.Load(); p != nil && p.limit == limit && p.ttl == ttl {
		return p.arg
	}
	n := int64(limit)
	if limit == 0 {
		n = -int64(s.opts.MaxJobs)
	}
	p := &boxedParams{limit, ttl, msgpackInts(n, ttl.Milliseconds(), s.opts.HeartbeatTimeout.Milliseconds())}
	s.lastParams.Store(p)
	return p.arg
}

// boxedParams is a limit and TTL and their reserve script argument.
type boxedParams struct {
	limit int
	ttl   time.Duration
	arg   any
}

// msgpackInts encodes each value as a MessagePack int64 (0xd3 and eight
// bytes, big-endian), which cmsgpack.unpack returns as Lua numbers: exact,
// since every value here is far below 2^53.
func msgpackInts(vals ...int64) string {
	b := make([]byte, 0, 9*len(vals))
	for _, v := range vals {
		b = append(b, 0xd3)
		b = binary.BigEndian.AppendUint64(b, uint64(v))
	}
	return string(b)
}

func (s *CapacityStore) now() string {
	if s.clock == nil {
		return ""
	}
	return strconv.FormatInt(s.clock.Now().UnixMilli(), 10)
}

func msArg(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

func fromMS(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// Reserve asks for a pending lease; see capacity.SlotStore.
func (s *CapacityStore) Reserve(ctx context.Context, r capacity.Reservation) (capacity.ReserveResult, error) {
	if err := s.ready(); err != nil {
		return capacity.ReserveResult{}, err
	}
	r, err := s.resolve(r)
	if err != nil {
		return capacity.ReserveResult{}, err
	}
	keys := s.keys(r.Node)
	var v []int64
	params := s.reserveParams(r.Max, r.TTL)
	var args []any
	switch {
	case s.acct != "sum":
		args = []any{r.RID, params, s.now(), r.Running}
	case s.clock != nil:
		args = []any{r.RID, params, s.now()}
	default:
		args = []any{r.RID, params} // on TIME
	}
	reply, err := s.write(ctx, capReserve, keys, args).Text()
	if err == nil {
		var buf [5]int64
		v, err = parseInts(reply, buf[:0], 5)
	}
	if err != nil {
		return capacity.ReserveResult{}, unavailable("reserve", err)
	}
	return reserveResult(v), nil
}

// The scripts answer with status numbers (capacity_lib.lua); these tables
// turn them into the capacity package's statuses (0 and unknown numbers into
// the empty status, which no caller grants).
var (
	reserveStatuses = [...]capacity.ReserveStatus{1: capacity.ReserveOK, 2: capacity.ReserveDuplicate, 3: capacity.ReserveFull,
		4: capacity.ReserveUnknownNode, 5: capacity.ReserveStaleHeartbeat, 6: capacity.ReserveLimitMismatch}
	ackStatuses = [...]capacity.AckStatus{1: capacity.AckOK, 2: capacity.AckDuplicate, 3: capacity.AckEpochMismatch,
		4: capacity.AckExpired, 5: capacity.AckLate}
	heartbeatStatuses = [...]capacity.HeartbeatStatus{1: capacity.HeartbeatApplied, 2: capacity.HeartbeatStale}
)

// statusOf returns table[n], or "" for a number out of range.
func statusOf[S ~string, T ~[]S](table T, n int64) S {
	if n < 0 || n >= int64(len(table)) {
		return ""
	}
	return table[n]
}

func reserveResult(v []int64) capacity.ReserveResult {
	return capacity.ReserveResult{Status: statusOf(reserveStatuses[:], v[0]), Epoch: uint64(v[1]), Expiry: fromMS(v[2]),
		Load: int(v[3]), EarliestExpiry: fromMS(v[4])}
}

// validate checks and defaults reservations. The Redis store works in whole
// milliseconds, so a TTL must be at least 1 ms.
func (s *CapacityStore) validate(items []capacity.Reservation) ([]capacity.Reservation, error) {
	out := make([]capacity.Reservation, len(items))
	for i, r := range items {
		r, err := s.resolve(r)
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}

func (s *CapacityStore) resolve(r capacity.Reservation) (capacity.Reservation, error) {
	r, err := r.Resolve(s.opts)
	if err != nil {
		return r, err
	}
	if r.TTL < time.Millisecond {
		return r, plancore.Invalid(capacity.ErrInvalidInput, field.ErrorList{
			field.Invalid(field.NewPath("ttl"), r.TTL, "must be at least the store's 1ms resolution")})
	}
	return r, nil
}

// ReserveBatch reserves several items; see capacity.SlotStore. On standalone
// or Sentinel Redis it is one atomic script call. On Cluster, items are
// grouped by the hash slot of their node and each group is one script call,
// pipelined per shard; see reserveBatchCluster for what that changes.
func (s *CapacityStore) ReserveBatch(ctx context.Context, items []capacity.Reservation, mode capacity.BatchMode) (capacity.BatchResult, error) {
	if err := s.ready(); err != nil {
		return capacity.BatchResult{}, err
	}
	if err := capacity.ValidateBatch(items, mode, s.opts); err != nil {
		return capacity.BatchResult{}, err
	}
	items, err := s.validate(items)
	if err != nil {
		return capacity.BatchResult{}, err
	}
	if len(items) == 0 {
		return capacity.BatchResult{Committed: true, Items: []capacity.ReserveResult{}}, nil
	}
	if s.pipe != nil {
		return s.reserveBatchCluster(ctx, items, mode)
	}
	keys, args := s.batchCall(items, mode)
	cmd := s.write(ctx, capReserveBatch, keys, args)
	res := capacity.BatchResult{Items: make([]capacity.ReserveResult, len(items))}
	if res.Committed, err = parseBatch(cmd, res.Items); err != nil {
		return capacity.BatchResult{}, unavailable("reserve batch", err)
	}
	return res, nil
}

// parseBatch reads a reserve_batch reply (committed, then five numbers per
// item) into out, one result per item, and returns its committed flag.
func parseBatch(cmd *goredis.Cmd, out []capacity.ReserveResult) (bool, error) {
	reply, err := cmd.Text()
	if err != nil {
		return false, err
	}
	v, err := parseInts(reply, make([]int64, 0, 1+5*len(out)), 1+5*len(out))
	if err != nil {
		return false, err
	}
	for i := range out {
		out[i] = reserveResult(v[1+5*i : 6+5*i])
	}
	return v[0] == 1, nil
}

// parseInts reads the want space-separated decimal integers of a script's
// reply into dst, which must be empty (it lends its capacity). The reserve scripts answer with one string rather than an
// array because Redis turns a Lua table into a reply at several times the
// cost of a string.
func parseInts(reply string, dst []int64, want int) ([]int64, error) {
	for f := range strings.SplitSeq(reply, " ") {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("malformed reply %q: %w", reply, err)
		}
		dst = append(dst, n)
	}
	if len(dst) != want {
		return nil, fmt.Errorf("reply of %d values, want %d", len(dst), want)
	}
	return dst, nil
}

// batchCall builds the keys and arguments of one reserve_batch script call
// over items, in the most compact of the script's three forms that holds
// them: every argument costs the server a string to parse and another to
// build in Lua, a good part of a small command. items is never empty:
// ReserveBatch answers an empty batch itself.
func (s *CapacityStore) batchCall(items []capacity.Reservation, mode capacity.BatchMode) ([]string, []any) {
	modeArg := "all"
	if mode == capacity.Partial {
		modeArg = "partial"
	}
	nodes, index := numberNodes(items)
	uniform := true // every item has the first one's max, TTL and running
	for _, it := range items[1:] {
		uniform = uniform && it.Max == items[0].Max && it.TTL == items[0].TTL && it.Running == items[0].Running
	}
	args := make([]any, 0, 9+5*len(items))
	args = append(args, s.now(), s.hbtoArg, s.acctArg, modeArg, s.maxArg)
	switch first := items[0]; {
	case uniform && len(nodes) == len(items):
		// Item q on node q: the rids alone.
		args = append(args, "each", first.Max, s.ttl(first.TTL), first.Running)
		for _, it := range items {
			args = append(args, it.RID)
		}
	case uniform:
		args = append(args, "same", first.Max, s.ttl(first.TTL), first.Running)
		for i, it := range items {
			args = append(args, index[i], it.RID)
		}
	default:
		args = append(args, "full")
		// Items of one batch mostly share M, TTL and running: box each
		// value once.
		var lastMax, lastTTL, lastRunning any
		for i, it := range items {
			if i == 0 || it.Max != items[i-1].Max {
				lastMax = it.Max
			}
			if i == 0 || it.TTL != items[i-1].TTL {
				lastTTL = s.ttl(it.TTL)
			}
			if i == 0 || it.Running != items[i-1].Running {
				lastRunning = it.Running
			}
			args = append(args, index[i], it.RID, lastMax, lastTTL, lastRunning)
		}
	}
	return s.appendKeys(make([]string, 0, len(nodes)), nodes...), args
}

// numberNodes returns the distinct nodes of items in order of first
// appearance and each item's node number in that list, 1-based as Lua
// counts. A linear scan beats a map for the usual batch of a few distinct
// nodes; past 16 a map takes over.
func numberNodes(items []capacity.Reservation) (nodes []string, index []int) {
	nodes = make([]string, 0, len(items))
	index = make([]int, len(items))
	var byID map[string]int
	for i, it := range items {
		n := -1
		if byID != nil {
			if j, ok := byID[it.Node]; ok {
				n = j
			}
		} else {
			n = slices.Index(nodes, it.Node)
		}
		if n < 0 {
			n = len(nodes)
			nodes = append(nodes, it.Node)
			switch {
			case byID != nil:
				byID[it.Node] = n
			case len(nodes) > 16:
				byID = make(map[string]int, len(items))
				for j, id := range nodes {
					byID[id] = j
				}
			}
		}
		index[i] = n + 1
	}
	return nodes, index
}

// Ack commits a node's ACK; see capacity.SlotStore.
func (s *CapacityStore) Ack(ctx context.Context, a capacity.Ack) (capacity.AckStatus, error) {
	if err := s.ready(); err != nil {
		return "", err
	}
	if err := a.Validate(); err != nil {
		return "", err
	}
	if a.Epoch > maxExact || a.Seq > maxExact {
		return "", fmt.Errorf("%w: ack of %q: Epoch %d or Seq %d above 2^53-1", capacity.ErrInvalidInput, a.RID, a.Epoch, a.Seq)
	}
	fenced := "1"
	if s.opts.Unfenced {
		fenced = "0"
	}
	v, err := s.write(ctx, capAck, s.keys(a.Node), []any{a.RID, strconv.FormatUint(a.Epoch, 10), strconv.FormatUint(a.Seq, 10),
		fenced, msArg(s.opts.Lifetime), s.acctArg, s.now()}).Int64()
	if err != nil {
		return "", unavailable("ack", err)
	}
	return statusOf(ackStatuses[:], v), nil
}

// Release drops a pending lease; see capacity.SlotStore.
func (s *CapacityStore) Release(ctx context.Context, node, rid string) (bool, error) {
	if err := s.ready(); err != nil {
		return false, err
	}
	if err := capacity.ValidateNodeID(node); err != nil {
		return false, err
	}
	if rid == "" {
		return false, plancore.Invalid(capacity.ErrInvalidInput, field.ErrorList{field.Required(field.NewPath("rid"), "a reservation id (job id) is required")})
	}
	v, err := s.run(ctx, capRelease, s.keys(node), rid, s.now()).Int64()
	if err != nil {
		return false, unavailable("release", err)
	}
	return v == 1, nil
}

// Heartbeat applies a node's heartbeat; see capacity.SlotStore.
func (s *CapacityStore) Heartbeat(ctx context.Context, node string, h capacity.Heartbeat) (capacity.HeartbeatStatus, error) {
	if err := s.ready(); err != nil {
		return "", err
	}
	if err := capacity.ValidateNodeID(node); err != nil {
		return "", err
	}
	if err := h.Validate(); err != nil {
		return "", err
	}
	if h.Epoch > maxExact || h.Seq > maxExact {
		return "", fmt.Errorf("%w: heartbeat of node %q: Epoch %d or Seq %d above 2^53-1", capacity.ErrInvalidInput, node, h.Epoch, h.Seq)
	}
	hasGPU := "0"
	if h.Usage.HasGPU {
		hasGPU = "1"
	}
	usage := fmtFloat(h.Usage.CPU) + " " + fmtFloat(h.Usage.Memory) + " " + fmtFloat(h.Usage.GPU) + " " + hasGPU
	v, err := s.run(ctx, capHeartbeat, s.keys(node), strconv.FormatUint(h.Epoch, 10), strconv.FormatUint(h.Seq, 10),
		h.Running, h.Max, usage, msArg(s.opts.Lifetime), s.now()).Slice()
	if err != nil {
		return "", unavailable("heartbeat", err)
	}
	if len(v) != 3 {
		return "", unavailable("heartbeat", fmt.Errorf("reply of %d values", len(v)))
	}
	st, _ := v[0].(int64)
	if back, _ := v[1].(int64); back == 1 {
		return capacity.HeartbeatStale, fmt.Errorf("%w: node %q epoch %d: Seq %d is below the stored %v",
			capacity.ErrSeqBackwards, node, h.Epoch, h.Seq, v[2])
	}
	return statusOf(heartbeatStatuses[:], st), nil
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// Loads reports nodes in the order asked, read-only (EVALSHA_RO, so a replica
// may serve it), in one call or, on Cluster, one call per hash slot; see
// capacity.SlotStore.
func (s *CapacityStore) Loads(ctx context.Context, nodes []string) ([]capacity.NodeLoad, error) {
	if err := s.ready(); err != nil {
		return nil, err
	}
	if len(nodes) == 0 {
		return []capacity.NodeLoad{}, nil
	}
	for _, n := range nodes {
		if err := capacity.ValidateNodeID(n); err != nil {
			return nil, err
		}
	}
	if s.pipe != nil {
		return s.loadsCluster(ctx, nodes)
	}
	keys := s.appendKeys(make([]string, 0, len(nodes)), nodes...)
	v, err := s.runRO(ctx, capLoads, keys, s.now()).Slice()
	if err != nil {
		return nil, unavailable("loads", err)
	}
	if len(v) != len(nodes) {
		return nil, unavailable("loads", fmt.Errorf("reply of %d rows for %d nodes", len(v), len(nodes)))
	}
	out := make([]capacity.NodeLoad, len(nodes))
	for i, row := range v {
		l, err := parseLoad(nodes[i], row, s.opts.MaxJobs)
		if err != nil {
			return nil, unavailable("loads", err)
		}
		out[i] = l
	}
	return out, nil
}

// parseLoad reads one row of the loads script: the node's state words
// (hx epoch seq running recv max ax kx cpu mem gpu hasgpu, or "" when no
// live heartbeat is known), its live leases and its acked jobs no
// heartbeat has counted.
func parseLoad(id string, row any, maxJobs int) (capacity.NodeLoad, error) {
	cols, ok := row.([]any)
	if !ok || len(cols) != 3 {
		return capacity.NodeLoad{}, fmt.Errorf("malformed row %v", row)
	}
	st, _ := cols[0].(string)
	pending, _ := cols[1].(int64)
	unc, _ := cols[2].(int64)
	l := capacity.NodeLoad{ID: id, Max: maxJobs, Pending: int(pending), AckedUncounted: int(unc)}
	if st == "" {
		return l, nil
	}
	w := strings.Split(st, " ")
	if len(w) != 12 {
		return capacity.NodeLoad{}, fmt.Errorf("malformed node state %q", st)
	}
	var errs []error
	u64 := func(s string) uint64 { n, err := strconv.ParseUint(s, 10, 64); errs = append(errs, err); return n }
	i64 := func(s string) int64 { n, err := strconv.ParseInt(s, 10, 64); errs = append(errs, err); return n }
	f64 := func(s string) float64 {
		if s == "-" {
			return math.NaN()
		}
		f, err := strconv.ParseFloat(s, 64)
		errs = append(errs, err)
		return f
	}
	l.Epoch, l.Seq = u64(w[1]), u64(w[2])
	l.Running = int(i64(w[3]))
	l.HeartbeatAt = time.UnixMilli(i64(w[4]))
	if m := int(i64(w[5])); m > 0 {
		l.Max = m // the heartbeat's statement of M; else the store's default
	}
	l.Usage = capacity.Usage{CPU: f64(w[8]), Memory: f64(w[9]), GPU: f64(w[10]), HasGPU: w[11] == "1"}
	return l, errors.Join(errs...)
}
