package dag

import (
	"encoding/json"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Durations in a JobFlow are written the way Kubernetes writes them
// (metav1.Duration: "90s", "1m30s"), not as integer nanoseconds, so that a
// YAML author can read and write them. The Go fields stay time.Duration.

// durationOrNil returns d as a metav1.Duration, nil when zero (omitted).
func durationOrNil(d time.Duration) *metav1.Duration {
	if d == 0 {
		return nil
	}
	return &metav1.Duration{Duration: d}
}

func durationOf(d *metav1.Duration) time.Duration {
	if d == nil {
		return 0
	}
	return d.Duration
}

type backoffWire struct {
	Duration *metav1.Duration `json:"duration,omitempty"`
	Factor   float64          `json:"factor,omitempty"`
	Cap      *metav1.Duration `json:"cap,omitempty"`
}

// MarshalJSON writes the durations as strings ("90s").
func (b Backoff) MarshalJSON() ([]byte, error) {
	return json.Marshal(backoffWire{Duration: durationOrNil(b.Duration), Factor: b.Factor, Cap: durationOrNil(b.Cap)})
}

// UnmarshalJSON reads the durations as strings ("90s").
func (b *Backoff) UnmarshalJSON(data []byte) error {
	var w backoffWire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*b = Backoff{Duration: durationOf(w.Duration), Factor: w.Factor, Cap: durationOf(w.Cap)}
	return nil
}

// probePlain has Probe's fields without its methods, so the wire forms below
// can embed it without recursing.
type probePlain Probe

type probeWire struct {
	probePlain
	Period *metav1.Duration `json:"plancorePeriod,omitempty"` // shadows probePlain.Period
}

// MarshalJSON writes Period as a string ("10s").
func (p Probe) MarshalJSON() ([]byte, error) {
	return json.Marshal(probeWire{probePlain: probePlain(p), Period: durationOrNil(p.Period)})
}

// UnmarshalJSON reads Period as a string ("10s").
func (p *Probe) UnmarshalJSON(data []byte) error {
	var w probeWire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*p = Probe(w.probePlain)
	p.Period = durationOf(w.Period)
	return nil
}
