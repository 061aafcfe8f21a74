package fake

import (
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// Faults decides, call by call, what goes wrong with an executor call of a given
// kind ("pod.create", "lock.cas", ...). Kinds are free-form strings chosen by
// each fake; the constants next to each fake name the kinds it uses.
//
// Scripted faults (FailNext, LoseResponseNext) are consumed in the order they
// were added, before any probabilistic fault is considered. Probabilistic faults
// draw from the World's seeded source, so a run is reproducible from its seed.
type Faults struct {
	mu       sync.Mutex
	rng      *rand.Rand
	scripted map[string][]scriptedFault
	rates    map[string]rateFault
	latency  map[string]time.Duration
}

type scriptedFault struct {
	lose bool
	err  error
}

type rateFault struct {
	failRate, loseRate float64
	err                error
}

// Injection is what Faults decided for one call.
type Injection struct {
	// Fail, when set, is returned before the call has any effect.
	Fail error
	// Lose, when set, is returned after the call took effect: the write happened
	// but the caller is told it did not ("lost response").
	Lose error
	// Latency is the simulated time the call takes.
	Latency time.Duration
}

// NewFaults returns a fault injector drawing probabilistic faults from seed.
func NewFaults(seed uint64) *Faults {
	return &Faults{
		rng:      rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		scripted: map[string][]scriptedFault{},
		rates:    map[string]rateFault{},
		latency:  map[string]time.Duration{},
	}
}

// FailNext makes the next n calls of kind fail with err before taking effect.
func (f *Faults) FailNext(kind string, n int, err error) {
	f.script(kind, n, scriptedFault{err: err})
}

// LoseResponseNext makes the next n calls of kind take effect and then return err,
// as when a response is lost on the network after the server applied the write.
func (f *Faults) LoseResponseNext(kind string, n int, err error) {
	f.script(kind, n, scriptedFault{lose: true, err: err})
}

func (f *Faults) script(kind string, n int, s scriptedFault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range n {
		f.scripted[kind] = append(f.scripted[kind], s)
	}
}

// SetRates makes every later call of kind fail before taking effect with
// probability failRate, or take effect and lose its response with probability
// loseRate, returning err either way. Rates of 0 remove the rule.
func (f *Faults) SetRates(kind string, failRate, loseRate float64, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if failRate <= 0 && loseRate <= 0 {
		delete(f.rates, kind)
		return
	}
	f.rates[kind] = rateFault{failRate: failRate, loseRate: loseRate, err: err}
}

// SetLatency makes every later call of kind take d of simulated time.
func (f *Faults) SetLatency(kind string, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if d <= 0 {
		delete(f.latency, kind)
		return
	}
	f.latency[kind] = d
}

// Pending reports how many scripted faults of kind have not fired yet.
func (f *Faults) Pending(kind string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.scripted[kind])
}

// Clear removes every scripted fault, rate and latency.
func (f *Faults) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.scripted)
	clear(f.rates)
	clear(f.latency)
}

// Next decides the fate of one call of kind and consumes any scripted fault it uses.
func (f *Faults) Next(kind string) Injection {
	f.mu.Lock()
	defer f.mu.Unlock()
	inj := Injection{Latency: f.latency[kind]}
	if queue := f.scripted[kind]; len(queue) > 0 {
		s := queue[0]
		f.scripted[kind] = slices.Delete(queue, 0, 1)
		if s.lose {
			inj.Lose = s.err
		} else {
			inj.Fail = s.err
		}
		return inj
	}
	if r, ok := f.rates[kind]; ok {
		// Always draw once so the sequence of draws does not depend on which
		// branch the previous call took.
		x := f.rng.Float64()
		switch {
		case x < r.failRate:
			inj.Fail = r.err
		case x < r.failRate+r.loseRate:
			inj.Lose = r.err
		}
	}
	return inj
}

// Float64 draws from the seeded source shared with probabilistic faults. Fakes use
// it for seeded behaviour such as informer lag, so one seed reproduces a run.
func (f *Faults) Float64() float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rng.Float64()
}

// IntN draws an int in [0, n) from the seeded source. It panics if n <= 0, like
// math/rand/v2.
func (f *Faults) IntN(n int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rng.IntN(n)
}
