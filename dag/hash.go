package dag

import (
	"math"
	"strconv"
)

// specHasher hashes the canonical spec: flows, dependencies, patches,
// finally, retry, parallelism and failFast, each length-prefixed so that no
// two different specs share an encoding.
// It is FNV-1a (64 bit) over words and bytes, inlined so hashing allocates
// nothing.
type specHasher struct{ s uint64 }

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func (h *specHasher) reset() { h.s = fnvOffset }

func (h *specHasher) byte(c byte) { h.s = (h.s ^ uint64(c)) * fnvPrime }

func (h *specHasher) int(v int64) { h.word(uint64(v)) }

// word mixes 8 bytes at once (FNV-1a over words), four times fewer steps
// than bytes for the long runs of names a spec holds.
func (h *specHasher) word(w uint64) { h.s = (h.s ^ w) * fnvPrime }

func (h *specHasher) str(s string) {
	h.word(uint64(len(s)))
	i := 0
	for ; i+8 <= len(s); i += 8 {
		h.word(uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56)
	}
	for ; i < len(s); i++ {
		h.byte(s[i])
	}
}

func (h *specHasher) retry(r *Retry) {
	if r == nil {
		h.int(-1)
		return
	}
	h.int(int64(r.Limit))
	h.int(int64(len(r.On)))
	for _, p := range r.On {
		h.str(string(p))
	}
	h.int(int64(r.Backoff.Duration))
	h.int(int64(math.Float64bits(r.Backoff.Factor)))
	h.int(int64(r.Backoff.Cap))
}

func (h *specHasher) flow(f *Flow) {
	h.str(f.Name)
	if d := f.DependsOn; d == nil {
		h.int(-1)
	} else {
		h.int(int64(len(d.Targets)))
		for _, t := range d.Targets {
			h.str(t)
		}
		h.int(int64(len(d.TargetsWithStatus)))
		for _, t := range d.TargetsWithStatus {
			h.str(t.Name)
			h.str(t.Phase)
		}
		h.str(d.Depends)
		if d.Probe != nil {
			// -2 is no length, so a spec with a probe never encodes like
			// one without; specs without one keep their hash.
			h.int(-2)
			h.probe(d.Probe)
		}
	}
	h.str(string(f.Patch))
	h.retry(f.Retry)
}

func (h *specHasher) probe(p *Probe) {
	h.int(int64(len(p.HTTPGet)))
	for _, e := range p.HTTPGet {
		h.str(e.Target)
		h.str(e.Task)
		h.str(e.Path)
		h.int(int64(e.Port))
		h.int(int64(len(e.Headers)))
		for _, x := range e.Headers {
			h.str(x.Name)
			h.str(x.Value)
		}
	}
	h.int(int64(len(p.TCPSocket)))
	for _, e := range p.TCPSocket {
		h.str(e.Target)
		h.str(e.Task)
		h.int(int64(e.Port))
	}
	h.int(int64(len(p.TaskStatus)))
	for _, e := range p.TaskStatus {
		h.str(e.Target)
		h.str(e.Task)
		h.str(e.Phase)
		h.int(int64(e.Min))
	}
	h.int(int64(p.Period))
}

func (h *specHasher) sum() uint64 { return h.s }

// SpecHash returns the hash Decide stores in Status.SpecHash.
func SpecHash(spec Spec) string {
	var h specHasher
	h.begin(&spec)
	for i := range spec.Flows {
		h.flow(&spec.Flows[i])
	}
	h.int(int64(len(spec.Finally)))
	for i := range spec.Finally {
		h.flow(&spec.Finally[i])
	}
	return h.end(&spec)
}

// begin starts a spec's hash; the flows follow, main flows, then the
// number of finally flows, then finally flows; end finishes it. Decide hashes
// the flows while buildGraph reads them, so each name is read once.
func (h *specHasher) begin(spec *Spec) {
	h.reset()
	h.int(int64(len(spec.Flows)))
}

func (h *specHasher) end(spec *Spec) string {
	h.retry(spec.Retry)
	h.int(int64(spec.Parallelism))
	switch {
	case spec.FailFast == nil:
		h.int(-1)
	case *spec.FailFast:
		h.int(1)
	default:
		h.int(0)
	}
	return strconv.FormatUint(h.sum(), 16)
}
