package lock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/internal/golden"
	"github.com/plancore/plancore/lock"
)

// goldenInput is one transcript's input: narrated runs of typical lock
// scenarios and of the defects plancore fixes, rendered through the plans'
// String methods. Every step is on node n1's lock.
type goldenInput struct {
	// Store, when set, is the store the store steps use: "memory"
	// (lock.NewMemoryStore) or "fake" (fake.NewLockStore, whose faults
	// can be injected and whose calls are logged). Its clock starts at
	// t0, 2026-06-14T10:00:00Z.
	Store string       `json:"store"`
	Steps []goldenStep `json:"steps"`
}

// goldenStep is exactly one of its fields. A label (As) is written just
// before the step's result; "{at}" in it stands for the step's time and
// "{raw}" for the observed annotation, quoted.
type goldenStep struct {
	// Say writes its text as a line.
	Say *string `json:"say"`
	// Plan decides with PlanAcquire (or PlanRelease) on Observation, or
	// on what the store holds now when Observation is absent.
	Plan *struct {
		As          string            `json:"as"`
		Release     bool              `json:"release"`
		Observation *lock.Observation `json:"observation"`
		Requester   lock.Requester    `json:"requester"`
		Holder      lock.Holder       `json:"holder"`
		At          *time.Time        `json:"at"`
		Options     lock.Options      `json:"options"`
		// Errors writes the plan's error, if any, on the next line.
		Errors bool `json:"errors"`
		// Encode writes the annotations the node store writes for the
		// plan's record.
		Encode bool `json:"encode"`
		// Keep names the plan for a later apply step.
		Keep string `json:"keep"`
	} `json:"plan"`
	// Apply applies a kept plan to the store and writes its error.
	Apply *struct {
		Plan string `json:"plan"`
		As   string `json:"as"`
	} `json:"apply"`
	// Put writes a raw annotation into the memory store, as a person could.
	Put *string `json:"put"`
	// Write stores a record on an absent lock.
	Write *lock.Record `json:"write"`
	// Advance moves the store's clock.
	Advance *golden.Duration `json:"advance"`
	// Fault makes the next call of kind Op ("cas" or "cad") of the fake
	// store fail (Fail: "conflict" or a message) or lose its response
	// (Lose: a message) after it took effect.
	Fault *goldenFault `json:"fault"`
	// Locker acquires (or releases) through a lock.Locker on the store and
	// writes the plan, or the error and whether it is ErrInvalid; with
	// WithErr it writes the plan and then the error, whatever it is.
	Locker *goldenLocker `json:"locker"`
	// Calls writes the fake store's call log.
	Calls bool `json:"calls"`
}

// goldenRun is the state of one transcript.
type goldenRun struct {
	t      *testing.T
	b      strings.Builder
	world  *fake.World
	store  lock.Store
	locker *lock.Locker
	kept   map[string]lock.Plan
}

func TestGoldenScenarios(t *testing.T) {
	golden.Run(t, "testdata", func(t *testing.T, input []byte) string {
		in := golden.Decode[goldenInput](t, input)
		r := &goldenRun{t: t, world: fake.NewWorld(1, t0), kept: map[string]lock.Plan{}}
		switch in.Store {
		case "":
		case "memory":
			r.store = lock.NewMemoryStore()
		case "fake":
			r.store = fake.NewLockStore(r.world)
		default:
			t.Fatalf("store %q is neither memory nor fake", in.Store)
		}
		if r.store != nil {
			r.locker = &lock.Locker{Store: r.store, Clock: stepClock{Clock: r.world.Clock}}
		}
		for i, st := range in.Steps {
			if err := r.step(st); err != nil {
				t.Fatalf("step %d: %v", i+1, err)
			}
		}
		return r.b.String()
	})
}

func label(as string, at time.Time, raw string) string {
	return strings.NewReplacer("{at}", at.Format(time.RFC3339Nano), "{raw}", fmt.Sprintf("%q", raw)).Replace(as)
}

func (r *goldenRun) step(st goldenStep) error {
	ctx := context.Background()
	if r.store == nil && (st.Plan == nil || st.Plan.Observation == nil) && st.Say == nil {
		return errors.New("a step on the store needs store: memory or fake")
	}
	switch {
	case st.Say != nil:
		fmt.Fprintln(&r.b, *st.Say)
	case st.Plan != nil:
		return r.plan(ctx, st)
	case st.Apply != nil:
		p, ok := r.kept[st.Apply.Plan]
		if !ok {
			return fmt.Errorf("no plan kept as %q", st.Apply.Plan)
		}
		_, err := lock.Apply(ctx, p, r.store)
		fmt.Fprintf(&r.b, "%s%v\n", st.Apply.As, err)
	case st.Put != nil:
		m, ok := r.store.(*lock.MemoryStore)
		if !ok {
			return errors.New("put needs the memory store")
		}
		return m.Put(node1, *st.Put)
	case st.Write != nil:
		return r.store.CompareAndSwap(ctx, node1, lock.Precondition{Version: "0"}, *st.Write)
	case st.Advance != nil:
		r.world.Clock.Advance(st.Advance.D())
	case st.Fault != nil:
		return r.fault(*st.Fault)
	case st.Locker != nil:
		r.lock(ctx, *st.Locker)
	case st.Calls:
		fmt.Fprintln(&r.b, "calls:")
		for _, c := range r.world.Calls.Calls() {
			fmt.Fprintf(&r.b, "  %v\n", c)
		}
	default:
		return errors.New("the step does nothing")
	}
	return nil
}

// lock runs a locker step.
func (r *goldenRun) lock(ctx context.Context, l goldenLocker) {
	var p lock.Plan
	var err error
	if l.Release {
		p, err = r.locker.Release(ctx, node1, l.Requester)
	} else {
		var g lock.Grant
		g, err = r.locker.Acquire(ctx, node1, l.Requester)
		p = g.Plan
	}
	r.b.WriteString(label(l.As, r.world.Clock.Now(), ""))
	switch {
	case l.WithErr:
		fmt.Fprintf(&r.b, "%v (err %v)\n", p, err)
	case err != nil:
		fmt.Fprintf(&r.b, "%v (ErrInvalid: %v)\n", err, errors.Is(err, lock.ErrInvalid))
	default:
		fmt.Fprintf(&r.b, "%v\n", p)
	}
}

func (r *goldenRun) plan(ctx context.Context, st goldenStep) error {
	s := st.Plan
	var obs lock.Observation
	if s.Observation != nil {
		obs = *s.Observation
		if obs.Key == (lock.Key{}) {
			obs.Key = node1
		}
	} else {
		var err error
		if obs, err = r.store.Get(ctx, node1); err != nil {
			return err
		}
	}
	now := t0
	if s.At != nil {
		now = *s.At
	}
	var p lock.Plan
	var err error
	if s.Release {
		p, err = planRelease(obs, s.Requester, s.Options)
	} else {
		p, err = decide(obs, s.Requester, now, s.Options, s.Holder)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(&r.b, "%s%v\n", label(s.As, now, obs.Raw), p)
	if err := p.Err(); s.Errors && err != nil {
		fmt.Fprintf(&r.b, "    error: %v\n", err)
	}
	if s.Encode {
		main, side := lock.EncodeNode(p.Record)
		fmt.Fprintf(&r.b, "node store writes %s=%s\n                  %s=%s\n", lock.HAMiLockName, main, lock.SidecarAnnotation(lock.HAMiLockName), side)
	}
	if s.Keep != "" {
		r.kept[s.Keep] = p
	}
	return nil
}

// goldenLocker is a locker step.
type goldenLocker struct {
	As        string         `json:"as"`
	Release   bool           `json:"release"`
	Requester lock.Requester `json:"requester"`
	WithErr   bool           `json:"withErr"`
}

// goldenFault is a fault step's fault.
type goldenFault struct {
	Op   string `json:"op"`
	Fail string `json:"fail"`
	Lose string `json:"lose"`
}

func (r *goldenRun) fault(f goldenFault) error {
	kind := map[string]string{"cas": fake.LockCAS, "cad": fake.LockCAD}[f.Op]
	switch {
	case kind == "":
		return fmt.Errorf("fault op %q is neither cas nor cad", f.Op)
	case f.Lose != "":
		r.world.Faults.LoseResponseNext(kind, 1, errors.New(f.Lose))
	case f.Fail == "conflict":
		r.world.Faults.FailNext(kind, 1, lock.ErrConflict)
	case f.Fail != "":
		r.world.Faults.FailNext(kind, 1, errors.New(f.Fail))
	default:
		return errors.New("a fault needs fail or lose")
	}
	return nil
}
