package extender

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	configv1 "k8s.io/kube-scheduler/config/v1"

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
	// DefaultMaxNodeBytes bounds one Node object sent whole, 64 KiB: a
	// node's JSON is a few KiB, 20 to 40 KiB with a long image list and its
	// managed fields.
	DefaultMaxNodeBytes = 64 << 10
	// DefaultMaxNodeValues bounds the JSON values of one Node object sent
	// whole: a node of 100 images, 50 labels, 50 annotations and its managed
	// fields holds about 2,000.
	DefaultMaxNodeValues = 4_000
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
	// MaxNodeBytes and MaxNodeValues bound each Node object of a request
	// that sends them whole, as kube-scheduler does with nodeCacheCapable
	// false (DefaultMaxNodeBytes and DefaultMaxNodeValues when zero). Such
	// a request may be MaxNodes times as large: a cluster smaller than
	// MaxNodes should lower MaxNodes to tighten its bound.
	MaxNodeBytes  int64
	MaxNodeValues int
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
	}{{"maxNodes", int64(l.MaxNodes)}, {"maxPodBytes", l.MaxPodBytes}, {"maxPodValues", int64(l.MaxPodValues)}, {"maxNodeBytes", l.MaxNodeBytes}, {"maxNodeValues", int64(l.MaxNodeValues)}, {"maxConcurrentDecodes", int64(l.MaxConcurrentDecodes)}} {
		if f.v < 0 {
			errs = append(errs, field.Invalid(p.Child(f.name), f.v, "must not be negative (zero means the default)"))
		}
	}
	// Bounds beyond these would overflow the request bounds built from them
	// (on 64-bit int; MaxNodes × MaxNodeBytes must stay far from 2^63).
	if l.MaxNodes > 1<<30/maxNodeNameBytes {
		errs = append(errs, field.Invalid(p.Child("maxNodes"), l.MaxNodes, fmt.Sprintf("must be at most %d", 1<<30/maxNodeNameBytes)))
	}
	if l.MaxPodBytes > 1<<30 {
		errs = append(errs, field.Invalid(p.Child("maxPodBytes"), l.MaxPodBytes, "must be at most 1 GiB"))
	}
	if l.MaxPodValues > 1<<30 {
		errs = append(errs, field.Invalid(p.Child("maxPodValues"), l.MaxPodValues, "must be at most 2^30"))
	}
	if l.MaxNodeBytes > 1<<30 {
		errs = append(errs, field.Invalid(p.Child("maxNodeBytes"), l.MaxNodeBytes, "must be at most 1 GiB"))
	}
	if l.MaxNodeValues > 1<<30 {
		errs = append(errs, field.Invalid(p.Child("maxNodeValues"), l.MaxNodeValues, "must be at most 2^30"))
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
	if l.MaxNodeBytes == 0 {
		l.MaxNodeBytes = DefaultMaxNodeBytes
	}
	if l.MaxNodeValues == 0 {
		l.MaxNodeValues = DefaultMaxNodeValues
	}
	if l.MaxConcurrentDecodes == 0 {
		l.MaxConcurrentDecodes = DefaultMaxConcurrentDecodes
	}
	return l
}

// FilterRequestBytes is the largest Filter or Prioritize body of either
// form: the pod, the candidates and the envelope, where the candidates are
// MaxNodes node names (nodeCacheCapable true, 1.2 MiB by default) or
// MaxNodes Node objects of MaxNodeBytes (nodeCacheCapable false, 312 MiB
// by default), whichever is larger. The Scheduler accepts the bound of the
// form its Config.KubeScheduler names (names when it names none). Each part is then held to its own
// bounds before it is decoded (the pod to MaxPodBytes and MaxPodValues,
// the names to MaxNodes names, each Node to MaxNodeBytes and
// MaxNodeValues), so no part spends another's allowance.
func (l Limits) FilterRequestBytes() int64 {
	l = l.withDefaults()
	return l.MaxPodBytes + max(l.namesBytes(), l.nodesBytes()) + envelopeBytes
}

// filterBodyBytes is the body bound of the form kube-scheduler's
// configuration sends: node names (nodeCacheCapable true, as HAMi's own
// configuration sets it, 4.2 MiB by default) when the entry says so or is
// not given, Node objects (312 MiB by default) only when the entry says
// nodeCacheCapable false; each part is then held to its own bounds.
func (l Limits) filterBodyBytes(e *configv1.Extender) int64 {
	l = l.withDefaults()
	if e == nil || e.NodeCacheCapable {
		return l.MaxPodBytes + l.namesBytes() + envelopeBytes
	}
	return l.MaxPodBytes + l.nodesBytes() + envelopeBytes
}

// FilterRequestValues is the most JSON values a Filter or Prioritize body
// can hold once each part is within its bounds: the pod's, the
// candidates' (one per node name, or MaxNodeValues per Node object and one
// per item) and the envelope's.
func (l Limits) FilterRequestValues() int {
	l = l.withDefaults()
	return l.MaxPodValues + max(l.MaxNodes, l.nodesValues()) + envelopeValues
}

// namesBytes bounds a NodeNames list; nodesBytes and nodesValues a Nodes
// list; each on a Limits with its defaults set.
func (l Limits) namesBytes() int64 { return int64(l.MaxNodes)*maxNodeNameBytes + 2 }
func (l Limits) nodesBytes() int64 { return int64(l.MaxNodes)*(l.MaxNodeBytes+1) + envelopeBytes }
func (l Limits) nodesValues() int  { return l.MaxNodes*(l.MaxNodeValues+1) + envelopeValues }

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
