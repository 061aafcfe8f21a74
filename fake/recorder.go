package fake

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// Outcome says how a recorded call ended.
type Outcome string

const (
	// OutcomeOK means the call took effect and reported success.
	OutcomeOK Outcome = "ok"
	// OutcomeError means the call itself returned an error (not injected), e.g.
	// not found or already exists.
	OutcomeError Outcome = "error"
	// OutcomeInjectedFail means an injected fault failed the call before it took effect.
	OutcomeInjectedFail Outcome = "injected-fail"
	// OutcomeLostResponse means the call took effect but an injected fault made it
	// report an error.
	OutcomeLostResponse Outcome = "lost-response"
)

// Call is one executor call as the fake saw it.
type Call struct {
	Seq     int
	At      time.Time
	Kind    string
	Target  string
	Outcome Outcome
	Err     error
}

// String renders the call on one line, for transcripts.
func (c Call) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d %s %s %s %s", c.Seq, c.At.UTC().Format(time.RFC3339Nano), c.Kind, c.Target, c.Outcome)
	if c.Err != nil {
		fmt.Fprintf(&b, ": %v", c.Err)
	}
	return b.String()
}

// Recorder keeps every call made through a World, in order.
type Recorder struct {
	mu    sync.Mutex
	calls []Call
}

// Record appends c, numbering it.
func (r *Recorder) Record(c Call) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c.Seq = len(r.calls) + 1
	r.calls = append(r.calls, c)
}

// Calls returns a copy of every recorded call.
func (r *Recorder) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Call, len(r.calls))
	copy(out, r.calls)
	return out
}

// Count returns how many calls of kind were recorded with the given outcomes (any
// outcome when none is given).
func (r *Recorder) Count(kind string, outcomes ...Outcome) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.calls {
		if c.Kind != kind {
			continue
		}
		if len(outcomes) == 0 {
			n++
			continue
		}
		for _, o := range outcomes {
			if c.Outcome == o {
				n++
				break
			}
		}
	}
	return n
}

// Reset forgets every recorded call.
func (r *Recorder) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = nil
}
