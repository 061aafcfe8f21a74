package sim

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"k8s.io/utils/clock"

	"github.com/plancore/plancore/lock"
)

// LockClient is what one simulated process does with locks: plancore's
// lock.Locker, or any other implementation under test (e.g. a HAMi-like one).
type LockClient interface {
	Acquire(ctx context.Context, key lock.Key, req lock.Requester) (lock.Grant, error)
	Release(ctx context.Context, key lock.Key, req lock.Requester) (lock.Plan, error)
}

// LockRaceEnv is what a LockRace hands a client: a store whose every call is a
// scheduling point, the process's own (skewed) clock whose every timer is a
// scheduling point (it fires when the run resumes the process, whatever its
// duration), a truthful holder oracle (also a scheduling point), and a seed.
type LockRaceEnv struct {
	Store  lock.Store
	Clock  clock.Clock
	Holder func(ctx context.Context, key lock.Key, rec lock.Record) lock.Holder
	Seed   uint64
}

// Chooser makes the LockRace's choices: a rapid.T wrapper in property tests,
// RandChooser for seeded runs.
type Chooser interface {
	// Choose returns a number in [0, n); label names the choice.
	Choose(label string, n int) int
}

// RandChooser is a Chooser drawing from a seeded generator.
type RandChooser struct{ R *rand.Rand }

// Choose implements Chooser.
func (c RandChooser) Choose(_ string, n int) int { return c.R.IntN(n) }

// LockRace checks lock safety by simulation. Several processes, each with its
// own clock offset (at most MaxSkew either way), run real client code
// (Acquire, Release) concurrently against one store, while the Chooser picks,
// step by step, which parked store call proceeds next, whether it suffers a
// spurious conflict or a lost response, when simulated time jumps, and when a
// process dies (its pod deleted or terminal) or is re-created under the same
// name with a new UID. Only one process runs at a time, so a run is fully
// determined by the Chooser.
//
// A process believes it holds a lock from a successful Acquire until the
// first of its Release call, its death, or its own-clock deadline
// Record.Time + TTL − margin, where margin is 2×MaxSkew on the writer's clock
// and 0 on the observation clock. (Counting from the grant would need an extra
// second for whole-second timestamps; counting from the record's own
// timestamp, which is never later than the decision, needs no such second,
// so the check here is tighter. A margin of 0 on the writer's clock is caught
// within a few dozen runs.) Run reports a violation when:
//   - two processes believe they hold the same key at once (mutual exclusion);
//   - a write that took effect carried an epoch not above every earlier one of
//     its key (epochs strictly increase);
//   - a believer's epoch is below the highest its fenced resource has seen.
type LockRace struct {
	// Store is the store under test; it must start empty.
	Store lock.Store
	// NewClient builds a process's client; nil means a lock.Locker with
	// Options, Backoff{Wait: 2s} and the env's clock, oracle, sleep and seed.
	NewClient func(env LockRaceEnv, opts lock.Options) LockClient
	// Options are the lock options (TTL defaults to 1 minute here).
	Options lock.Options
	// Processes and Nodes size the run (defaults 4 and 2).
	Processes, Nodes int
	// MaxSkew bounds each process's clock offset (default 2s).
	MaxSkew time.Duration
	// Steps is the number of scheduling steps (default 80).
	Steps int
	// Faults enables spurious conflicts and lost responses on writes.
	Faults bool
}

// LockRaceReport counts what a run did.
type LockRaceReport struct {
	Grants, AlreadyHeld, Steals, Releases, Refusals  int
	Deaths, Respawns, Conflicts, LostResponses, Uses int
}

// ErrLockRaceViolation is wrapped by Run's error when an invariant broke.
var ErrLockRaceViolation = errors.New("sim: lock race invariant violated")

var errLost = errors.New("sim: response lost")

type raceProc struct {
	id         int
	req        lock.Requester
	offset     time.Duration
	alive      bool
	terminal   bool
	gen        int
	allocating bool
	client     LockClient
	busy       bool
	cancel     context.CancelFunc
	ctx        context.Context // the running call's context
	parked     *raceGate
	beliefs    map[int]raceBelief
}

type raceBelief struct {
	rec   lock.Record
	until time.Time
}

type raceGate struct {
	op     string
	key    lock.Key
	resume chan raceResume
}

type raceResume struct {
	kill  bool
	fault int // 0 none, 1 conflict before the write, 2 lost response after it
}

type raceEvent struct {
	who  int
	gate *raceGate
	done bool
	op   string
	node int
	g    lock.Grant
	rd   lock.Plan
	err  error
}

type raceRun struct {
	LockRace
	c       Chooser
	now     time.Time
	procs   []*raceProc
	events  chan raceEvent
	epochs  map[lock.Key]uint64
	written map[lock.Key]lock.Record
	fenced  map[int]uint64
	rep     LockRaceReport
	log     []string
	fail    error
	ttl     time.Duration
	margins time.Duration
}

// Run performs one simulated run and returns its counts, and an error wrapping
// ErrLockRaceViolation, with a transcript, if an invariant broke.
func (r LockRace) Run(c Chooser) (LockRaceReport, error) {
	if r.Processes <= 0 {
		r.Processes = 4
	}
	if r.Nodes <= 0 {
		r.Nodes = 2
	}
	if r.MaxSkew <= 0 {
		r.MaxSkew = 2 * time.Second
	}
	if r.Steps <= 0 {
		r.Steps = 80
	}
	if r.Options.TTL == 0 {
		r.Options.TTL = time.Minute
	}
	run := &raceRun{
		LockRace: r, c: c,
		now:     time.Date(2026, 6, 14, 10, 0, 0, 0, time.UTC),
		events:  make(chan raceEvent),
		epochs:  map[lock.Key]uint64{},
		written: map[lock.Key]lock.Record{},
		fenced:  map[int]uint64{},
		ttl:     r.Options.EffectiveTTL(),
	}
	if r.Options.ExpiryClock != lock.ObservationClock {
		run.margins = 2 * r.MaxSkew
	}
	for i := range r.Processes {
		p := &raceProc{id: i, offset: time.Duration(c.Choose("offset", 21)-10) * r.MaxSkew / 10}
		run.spawn(p)
		run.procs = append(run.procs, p)
	}
	for step := 0; step < r.Steps && run.fail == nil; step++ {
		run.step()
	}
	// Drain: stop every busy process without judging it.
	for _, p := range run.procs {
		for p.busy {
			run.kill(p)
		}
	}
	if run.fail != nil {
		return run.rep, run.fail
	}
	return run.rep, nil
}

func (r *raceRun) logf(format string, args ...any) {
	r.log = append(r.log, fmt.Sprintf("%s ", r.now.Format("15:04:05.000"))+fmt.Sprintf(format, args...))
}

func (r *raceRun) violate(format string, args ...any) {
	if r.fail != nil {
		return
	}
	r.logf("VIOLATION: "+format, args...)
	tail := r.log
	if len(tail) > 60 {
		tail = tail[len(tail)-60:]
	}
	r.fail = fmt.Errorf("%w: %s\n%s", ErrLockRaceViolation, fmt.Sprintf(format, args...), strings.Join(tail, "\n"))
}

func (r *raceRun) key(node int) lock.Key { return lock.NodeKey(fmt.Sprintf("n%d", node)) }

func (r *raceRun) spawn(p *raceProc) {
	p.alive, p.terminal, p.allocating = true, false, false
	p.req = lock.Requester{Namespace: "default", Name: fmt.Sprintf("p%d", p.id), UID: fmt.Sprintf("p%d-g%d", p.id, p.gen)}
	p.beliefs = map[int]raceBelief{}
	env := LockRaceEnv{
		Store: &raceStore{r: r, p: p},
		Clock: &raceClock{r: r, p: p},
		Holder: func(ctx context.Context, key lock.Key, rec lock.Record) lock.Holder {
			return r.holder(ctx, p, key, rec)
		},
		Seed: uint64(p.id)<<32 | uint64(p.gen),
	}
	if r.NewClient != nil {
		p.client = r.NewClient(env, r.Options)
	} else {
		p.client = &lock.Locker{
			Store: env.Store, Options: r.Options, Clock: env.Clock, Holder: env.Holder,
			Backoff: lock.Backoff{Wait: 2 * time.Second},
			Rand:    rand.New(rand.NewPCG(env.Seed, 1)),
		}
	}
}

// raceClock is one process's clock: the run's time plus the process's offset.
// Every timer is a scheduling point: creating one parks the process, and the
// timer has fired when the run resumes it (or never fires when the run kills
// the process, whose context is then cancelled).
type raceClock struct {
	r *raceRun
	p *raceProc
}

var _ clock.Clock = (*raceClock)(nil)

func (c *raceClock) Now() time.Time                  { return c.r.now.Add(c.p.offset) }
func (c *raceClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c *raceClock) After(d time.Duration) <-chan time.Time {
	return c.NewTimer(d).C()
}
func (c *raceClock) Sleep(d time.Duration) { <-c.After(d) }
func (c *raceClock) Tick(d time.Duration) <-chan time.Time {
	return c.After(d)
}

// NewTimer parks the process; the returned timer has fired once it resumes.
func (c *raceClock) NewTimer(time.Duration) clock.Timer {
	t := &raceTimer{ch: make(chan time.Time, 1)}
	ctx := c.p.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	if _, err := c.r.park(ctx, c.p, "sleep", lock.Key{}); err == nil {
		t.ch <- c.Now()
	}
	return t
}

type raceTimer struct{ ch chan time.Time }

func (t *raceTimer) C() <-chan time.Time      { return t.ch }
func (t *raceTimer) Stop() bool               { return false }
func (t *raceTimer) Reset(time.Duration) bool { return false }

// park blocks the calling process until the run resumes it.
func (r *raceRun) park(ctx context.Context, p *raceProc, op string, key lock.Key) (raceResume, error) {
	if err := ctx.Err(); err != nil {
		return raceResume{}, err
	}
	g := &raceGate{op: op, key: key, resume: make(chan raceResume)}
	r.events <- raceEvent{who: p.id, gate: g}
	msg := <-g.resume
	if msg.kill {
		return msg, context.Canceled
	}
	return msg, nil
}

// holder is the truthful oracle: what a Pod Get plus lock.ClassifyHolder
// would say about rec's holder right now.
func (r *raceRun) holder(ctx context.Context, self *raceProc, key lock.Key, rec lock.Record) lock.Holder {
	if _, err := r.park(ctx, self, "holder", key); err != nil {
		return lock.Holder{State: lock.HolderUnknown}
	}
	for _, q := range r.procs {
		if q.req.Namespace != rec.Namespace || q.req.Name != rec.Name {
			continue
		}
		if rec.UID != "" && rec.UID != q.req.UID && r.Options.Identity != lock.NameOnly {
			return lock.Holder{State: lock.HolderNotFound, Replaced: q.alive}
		}
		switch {
		case q.alive:
			return lock.Holder{State: lock.HolderExists, Allocating: q.allocating}
		case q.terminal:
			return lock.Holder{State: lock.HolderTerminal}
		}
		return lock.Holder{State: lock.HolderNotFound}
	}
	return lock.Holder{State: lock.HolderNotFound}
}

// wait receives the running process's next event: parked again, or done.
func (r *raceRun) wait() {
	ev := <-r.events
	p := r.procs[ev.who]
	if ev.gate != nil {
		p.parked = ev.gate
		return
	}
	p.busy, p.parked = false, nil
	p.cancel()
	if !p.alive {
		return // a dead process's result means nothing
	}
	key := r.key(ev.node)
	switch ev.op {
	case "acquire":
		if ev.err != nil {
			r.rep.Refusals++
			r.logf("p%d acquire %s: %v", p.id, key.Node, firstLine(ev.err))
			return
		}
		rec := ev.g.Record()
		switch ev.g.Plan.Kind {
		case lock.AlreadyHeld:
			r.rep.AlreadyHeld++
		case lock.StealExpired, lock.StealDangling:
			r.rep.Steals++
		default:
			r.rep.Grants++
		}
		b := raceBelief{rec: rec, until: rec.Time.Add(r.ttl - r.margins)}
		r.logf("p%d acquire %s: %s epoch %d, believes until %s (own clock)", p.id, key.Node, ev.g.Plan.Kind, rec.Epoch, b.until.Format("15:04:05"))
		if !p.believes(b, r.now) {
			return
		}
		for _, q := range r.procs {
			if qb, ok := q.beliefs[ev.node]; ok && q != p && q.alive && q.believes(qb, r.now) {
				r.violate("p%d and p%d both believe they hold %s (epochs %d and %d)", q.id, p.id, key.Node, qb.rec.Epoch, rec.Epoch)
			}
		}
		p.beliefs[ev.node] = b
		p.allocating = r.c.Choose("allocating", 2) == 1
	case "release":
		r.logf("p%d release %s: %v %v", p.id, key.Node, ev.rd, ev.err)
		if ev.err == nil && ev.rd.Kind == lock.Release {
			r.rep.Releases++
		}
	}
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

func (p *raceProc) believes(b raceBelief, globalNow time.Time) bool {
	return p.alive && globalNow.Add(p.offset).Before(b.until)
}

// start runs op for p in a goroutine and waits for its first event.
func (r *raceRun) start(p *raceProc, op string, node int) {
	ctx, cancel := context.WithCancel(context.Background())
	p.busy, p.cancel, p.ctx = true, cancel, ctx
	key := r.key(node)
	if op == "release" {
		delete(p.beliefs, node) // a process stops using the resource before releasing
	}
	go func() {
		ev := raceEvent{who: p.id, done: true, op: op, node: node}
		if op == "acquire" {
			ev.g, ev.err = p.client.Acquire(ctx, key, p.req)
		} else {
			ev.rd, ev.err = p.client.Release(ctx, key, p.req)
		}
		r.events <- ev
	}()
	r.wait()
}

// kill resumes p's parked call with a kill and waits for its next event.
func (r *raceRun) kill(p *raceProc) {
	if !p.busy || p.parked == nil {
		return
	}
	g := p.parked
	p.parked = nil
	p.cancel()
	g.resume <- raceResume{kill: true}
	r.wait()
}

// raceGroups sorts the processes by what a step may do with them.
type raceGroups struct {
	idle, parked, alive, dead, believers []*raceProc
}

func (r *raceRun) groups() raceGroups {
	var g raceGroups
	for _, p := range r.procs {
		switch {
		case !p.alive:
			g.dead = append(g.dead, p)
		case p.busy:
			g.parked = append(g.parked, p)
		default:
			g.idle = append(g.idle, p)
		}
		if p.alive {
			g.alive = append(g.alive, p)
			for _, b := range p.beliefs {
				if p.believes(b, r.now) {
					g.believers = append(g.believers, p)
					break
				}
			}
		}
	}
	return g
}

func (r *raceRun) pick(label string, ps []*raceProc) *raceProc { return ps[r.c.Choose(label, len(ps))] }

func (r *raceRun) step() {
	g := r.groups()
	// Weights: time 2, time to a boundary 1, acquire 3, release 1, resume 6,
	// death 1, re-creation 1, use 1. An action that does not apply (nobody
	// idle, ...) does nothing.
	action := []int{0, 0, 5, 1, 1, 1, 3, 4, 4, 4, 4, 4, 4, 7, 8, 9}[r.c.Choose("action", 16)]
	switch {
	case action == 5:
		r.jumpToMark()
	case action == 0:
		steps := []time.Duration{200 * time.Millisecond, 3 * time.Second, 30 * time.Second, r.ttl / 2, r.ttl, 2 * r.ttl, 4 * r.ttl}
		d := steps[r.c.Choose("advance", len(steps))]
		r.now = r.now.Add(d)
		r.logf("time +%v", d)
	case action == 1 && len(g.idle) > 0:
		p, node := r.pick("acquirer", g.idle), r.c.Choose("node", r.Nodes)
		r.logf("p%d starts acquire %s", p.id, r.key(node).Node)
		r.start(p, "acquire", node)
	case action == 3 && len(g.idle) > 0:
		p, node := r.pick("releaser", g.idle), r.c.Choose("node", r.Nodes)
		r.logf("p%d starts release %s", p.id, r.key(node).Node)
		r.start(p, "release", node)
	case action == 4 && len(g.parked) > 0:
		r.resume(r.pick("resume", g.parked))
	case action == 7 && len(g.alive) > 0:
		r.die(r.pick("victim", g.alive))
	case action == 8 && len(g.dead) > 0:
		p := r.pick("respawn", g.dead)
		p.gen++
		r.spawn(p)
		r.rep.Respawns++
		r.logf("p%d re-created as %s", p.id, p.req.UID)
	case action == 9 && len(g.believers) > 0:
		r.use(r.pick("user", g.believers))
	}
}

// jumpToMark moves time next to an instant where some process's view
// changes: a believer's deadline, or when a process first sees a written
// record as expired on its own clock. Clock bugs live there.
func (r *raceRun) jumpToMark() {
	var marks []time.Time
	keys := slices.SortedFunc(maps.Keys(r.written), func(a, b lock.Key) int { return strings.Compare(a.Node, b.Node) })
	for _, q := range r.procs {
		for _, node := range slices.Sorted(maps.Keys(q.beliefs)) {
			marks = append(marks, q.beliefs[node].until.Add(-q.offset))
		}
		for _, k := range keys {
			marks = append(marks, r.written[k].Time.Add(r.ttl-q.offset))
		}
	}
	if len(marks) == 0 {
		return
	}
	slices.SortFunc(marks, func(a, b time.Time) int { return a.Compare(b) })
	eps := []time.Duration{-time.Second, -time.Millisecond, 1, time.Millisecond, time.Second}
	at := marks[r.c.Choose("mark", len(marks))].Add(eps[r.c.Choose("epsilon", len(eps))])
	if at.After(r.now) {
		r.logf("time jumps to %s", at.Format("15:04:05.000000000"))
		r.now = at
	}
}

// resume lets p's parked store call proceed, with a chosen fault for a write.
func (r *raceRun) resume(p *raceProc) {
	g := p.parked
	p.parked = nil
	var fault int
	if r.Faults && (g.op == "cas" || g.op == "cad") {
		fault = []int{0, 0, 1, 2}[r.c.Choose("fault", 4)]
	}
	r.logf("p%d resumes %s %s (fault %d)", p.id, g.op, g.key.Node, fault)
	g.resume <- raceResume{fault: fault}
	r.wait()
}

// die kills p: its pod is deleted, or kept as terminal.
func (r *raceRun) die(p *raceProc) {
	p.terminal = r.c.Choose("terminal", 2) == 1
	r.logf("p%d dies (terminal %v)", p.id, p.terminal)
	p.alive = false
	p.beliefs = map[int]raceBelief{}
	r.rep.Deaths++
	for p.busy {
		r.kill(p)
	}
}

// use has p use every resource it believes it holds, checking the fence.
func (r *raceRun) use(p *raceProc) {
	for node, b := range p.beliefs {
		if !p.believes(b, r.now) {
			continue
		}
		r.rep.Uses++
		if b.rec.Epoch < r.fenced[node] {
			r.violate("p%d uses %s with epoch %d, but the resource has seen %d", p.id, r.key(node).Node, b.rec.Epoch, r.fenced[node])
		}
		r.fenced[node] = b.rec.Epoch
	}
}

// raceStore is one process's view of the store under test: every call parks
// until the run resumes it, and writes may suffer injected faults.
type raceStore struct {
	r *raceRun
	p *raceProc
}

func (s *raceStore) Get(ctx context.Context, key lock.Key) (lock.Observation, error) {
	if _, err := s.r.park(ctx, s.p, "get", key); err != nil {
		return lock.Observation{}, err
	}
	return s.r.Store.Get(ctx, key)
}

// write parks a write, then injects the chosen fault: a conflict before it
// takes effect, or a lost response after it took effect (and after note).
func (s *raceStore) write(ctx context.Context, op string, key lock.Key, do func() error, note func()) error {
	msg, err := s.r.park(ctx, s.p, op, key)
	if err != nil {
		return err
	}
	if msg.fault == 1 {
		s.r.rep.Conflicts++
		return fmt.Errorf("%w: injected", lock.ErrConflict)
	}
	if err := do(); err != nil {
		return err
	}
	note()
	if msg.fault == 2 {
		s.r.rep.LostResponses++
		return errLost
	}
	return nil
}

func (s *raceStore) CompareAndSwap(ctx context.Context, key lock.Key, pre lock.Precondition, rec lock.Record) error {
	return s.write(ctx, "cas", key, func() error { return s.r.Store.CompareAndSwap(ctx, key, pre, rec) }, func() {
		if high := s.r.epochs[key]; rec.Epoch <= high {
			s.r.violate("a write to %s took effect with epoch %d, not above %d", key.Node, rec.Epoch, high)
		}
		s.r.epochs[key] = rec.Epoch
		s.r.written[key] = rec
		s.r.logf("p%d wrote %s epoch %d", s.p.id, key.Node, rec.Epoch)
	})
}

func (s *raceStore) CompareAndDelete(ctx context.Context, key lock.Key, pre lock.Precondition) error {
	return s.write(ctx, "cad", key, func() error { return s.r.Store.CompareAndDelete(ctx, key, pre) }, func() {
		s.r.logf("p%d deleted %s (%q)", s.p.id, key.Node, pre.Raw)
	})
}
