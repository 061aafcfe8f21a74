package extender

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plancore/plancore"
)

// Defaults of Limits, used where a field is zero.
const (
	// DefaultMaxNodes is Kubernetes' largest supported cluster, 5,000 nodes.
	DefaultMaxNodes = 5000
	// DefaultMaxPodBytes is the API server's request limit, 3 MiB: no pod it
	// stores is larger.
	DefaultMaxPodBytes = 3 << 20
	// DefaultMaxPodValues allows a pod far larger than real ones (a pod of
	// 50 containers with 100 environment variables each holds about 20,000
	// JSON values) while keeping the worst pod's decoding near 100 MB: a
	// JSON value can decode into a Go struct of up to a few hundred bytes
	// (a container is 384), about 2 KB once lists grow and the fit reads it.
	DefaultMaxPodValues = 50_000
	// DefaultMaxConcurrentDecodes lets two requests be read and decoded at
	// once: kube-scheduler sends Filter and Prioritize from one scheduling
	// cycle at a time, and only Binds overlap.
	DefaultMaxConcurrentDecodes = 2
)

// Sizes the request bounds are built from.
const (
	// maxNodeNameBytes is the longest node name (a DNS subdomain, 253
	// bytes) with its quotes and comma in a JSON list.
	maxNodeNameBytes = 253 + 3
	// envelopeBytes and envelopeValues cover what a request holds beside
	// the pod and the names: field names, brackets, a few small fields.
	envelopeBytes  = 4 << 10
	envelopeValues = 64
	// bindRequestBytes bounds a Bind body: four names and a UID, each at
	// most 253 bytes, however escaped.
	bindRequestBytes = 16 << 10
)

// Limits bounds what one extender request may cost, so that no request,
// however built, stalls the scheduler or exhausts its memory. The zero value
// means the defaults; Validate refuses what cannot work.
type Limits struct {
	// MaxNodes is the most nodes the cluster may have (DefaultMaxNodes when
	// zero): a Filter or Prioritize naming more candidates is refused, and
	// so is one naming more candidates than the scheduler's node cache
	// holds. A larger cluster must raise it.
	MaxNodes int
	// MaxPodBytes bounds the pod's JSON in a Filter or Prioritize request
	// (DefaultMaxPodBytes when zero).
	MaxPodBytes int64
	// MaxPodValues bounds the JSON values (object keys included) of the pod
	// in a request (DefaultMaxPodValues when zero). Bytes alone do not bound
	// decoding: "{}," is three bytes and becomes a 384-byte container.
	MaxPodValues int
	// MaxConcurrentDecodes bounds the requests read and decoded at once
	// (DefaultMaxConcurrentDecodes when zero). A request beyond it waits for
	// a turn until its context ends (kube-scheduler's httpTimeout), rather
	// than being answered 503 at once: kube-scheduler takes any answer but
	// 200 from an extender that is not ignorable as a failed scheduling
	// attempt and backs the pod off, while the wait is one decode long.
	MaxConcurrentDecodes int
}

// Validate reports every negative field at once, as a
// *plancore.InvalidError wrapping ErrInvalidConfig with paths under
// limits.
func (l Limits) Validate() error {
	var errs field.ErrorList
	p := field.NewPath("limits")
	for _, f := range []struct {
		name string
		v    int64
	}{{"maxNodes", int64(l.MaxNodes)}, {"maxPodBytes", l.MaxPodBytes}, {"maxPodValues", int64(l.MaxPodValues)}, {"maxConcurrentDecodes", int64(l.MaxConcurrentDecodes)}} {
		if f.v < 0 {
			errs = append(errs, field.Invalid(p.Child(f.name), f.v, "must not be negative (zero means the default)"))
		}
	}
	// Bounds beyond these would overflow the request bounds built from them.
	if l.MaxNodes > 1<<30/maxNodeNameBytes {
		errs = append(errs, field.Invalid(p.Child("maxNodes"), l.MaxNodes, fmt.Sprintf("must be at most %d", 1<<30/maxNodeNameBytes)))
	}
	if l.MaxPodBytes > 1<<30 {
		errs = append(errs, field.Invalid(p.Child("maxPodBytes"), l.MaxPodBytes, "must be at most 1 GiB"))
	}
	if l.MaxPodValues > 1<<30 {
		errs = append(errs, field.Invalid(p.Child("maxPodValues"), l.MaxPodValues, "must be at most 2^30"))
	}
	return plancore.Invalid(ErrInvalidConfig, errs)
}

// withDefaults returns l with every zero field set to its default.
func (l Limits) withDefaults() Limits {
	if l.MaxNodes == 0 {
		l.MaxNodes = DefaultMaxNodes
	}
	if l.MaxPodBytes == 0 {
		l.MaxPodBytes = DefaultMaxPodBytes
	}
	if l.MaxPodValues == 0 {
		l.MaxPodValues = DefaultMaxPodValues
	}
	if l.MaxConcurrentDecodes == 0 {
		l.MaxConcurrentDecodes = DefaultMaxConcurrentDecodes
	}
	return l
}

// FilterRequestBytes is the largest Filter or Prioritize body accepted: the
// pod, MaxNodes node names and the envelope (4.2 MiB by default). It
// assumes kube-scheduler's nodeCacheCapable true, which sends the
// candidates as NodeNames only. A configuration sending whole Node objects
// (nodeCacheCapable false) would add a per-node term for a Node's JSON
// here and in FilterRequestValues; until then such a body is refused
// beyond a handful of nodes.
func (l Limits) FilterRequestBytes() int64 {
	l = l.withDefaults()
	return l.MaxPodBytes + int64(l.MaxNodes)*maxNodeNameBytes + envelopeBytes
}

// FilterRequestValues is the most JSON values a Filter or Prioritize body
// may hold: the pod's, one per node name, and the envelope's. See
// FilterRequestBytes for the names-only assumption.
func (l Limits) FilterRequestValues() int {
	l = l.withDefaults()
	return l.MaxPodValues + l.MaxNodes + envelopeValues
}

// countValues counts the JSON values in b, object keys included, stopping
// once the count passes limit; it only finds where values start (a quote,
// a bracket, or the first byte of a number or literal outside strings),
// leaving the syntax to the decoder. It allocates nothing.
func countValues(b []byte, limit int) int {
	n := 0
	inString, escaped, inScalar := false, false, false
	for _, c := range b {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString, inScalar = true, false
			n++
		case '{', '[':
			inScalar = false
			n++
		case ',', ':', '}', ']', ' ', '\t', '\n', '\r':
			inScalar = false
		default:
			if !inScalar {
				inScalar = true
				n++
			}
		}
		if n > limit {
			return n
		}
	}
	return n
}
