package dag

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"math"
)

// canon appends the canonical encoding of a spec or of its parts: every
// string and list is length-prefixed and every optional part is tagged
// present or absent, so the encoding is injective. Two specs encode alike
// exactly when they are equal as values, a nil list and an empty one
// counting as equal (the API server does not tell them apart either).
//
// With a sink, the encoding is written to it a block at a time instead of
// kept whole: SpecHash on 5,000 flows grew one buffer about 20 times.
type canon struct {
	b    []byte
	sink hash.Hash
}

// canonBlock is how many bytes a canon with a sink holds before writing them.
const canonBlock = 4096

// spill writes what the canon holds to its sink once a block has gathered.
func (c *canon) spill() {
	if c.sink != nil && len(c.b) >= canonBlock {
		c.sink.Write(c.b) // a hash.Hash's Write never fails
		c.b = c.b[:0]
	}
}

func (c *canon) int(v int64) { c.b = binary.AppendVarint(c.b, v) }

func (c *canon) str(s string) {
	c.int(int64(len(s)))
	c.b = append(c.b, s...)
}

// present tags an optional part: false encodes as -1, true as -2, values
// no length takes.
func (c *canon) present(ok bool) bool {
	if ok {
		c.int(-2)
	} else {
		c.int(-1)
	}
	return ok
}

func (c *canon) retry(r *Retry) {
	if !c.present(r != nil) {
		return
	}
	c.int(int64(r.Limit))
	c.int(int64(len(r.On)))
	for _, p := range r.On {
		c.str(string(p))
	}
	c.int(int64(r.Backoff.Duration))
	c.int(int64(math.Float64bits(r.Backoff.Factor)))
	c.int(int64(r.Backoff.Cap))
}

func (c *canon) flow(f *Flow) {
	c.str(f.Name)
	if d := f.DependsOn; c.present(d != nil) {
		c.int(int64(len(d.Targets)))
		for _, t := range d.Targets {
			c.str(t)
		}
		c.int(int64(len(d.TargetsWithStatus)))
		for _, t := range d.TargetsWithStatus {
			c.str(t.Name)
			c.str(t.Phase)
		}
		c.str(d.Depends)
		if c.present(d.Probe != nil) {
			c.probe(d.Probe)
		}
	}
	c.str(string(f.Patch))
	c.retry(f.Retry)
}

func (c *canon) probe(p *Probe) {
	c.int(int64(len(p.HTTPGet)))
	for _, e := range p.HTTPGet {
		c.str(e.Target)
		c.str(e.Task)
		c.str(e.Path)
		c.int(int64(e.Port))
		if c.present(e.Header != nil) {
			c.str(e.Header.Name)
			c.str(e.Header.Value)
		}
		c.int(int64(len(e.Headers)))
		for _, x := range e.Headers {
			c.str(x.Name)
			c.str(x.Value)
		}
	}
	c.int(int64(len(p.TCPSocket)))
	for _, e := range p.TCPSocket {
		c.str(e.Target)
		c.str(e.Task)
		c.int(int64(e.Port))
	}
	c.int(int64(len(p.TaskStatus)))
	for _, e := range p.TaskStatus {
		c.str(e.Target)
		c.str(e.Task)
		c.str(e.Phase)
		c.int(int64(e.Min))
	}
	c.int(int64(p.Period))
}

func (c *canon) flows(fs []Flow) {
	c.int(int64(len(fs)))
	for i := range fs {
		c.flow(&fs[i])
		c.spill()
	}
}

func (c *canon) spec(s *Spec) {
	c.flows(s.Flows)
	c.flows(s.Finally)
	c.str(string(s.JobRetainPolicy))
	c.int(int64(s.Parallelism))
	if c.present(s.FailFast != nil) {
		c.present(*s.FailFast)
	}
	c.retry(s.Retry)
}

// SpecHashBytes is how many bytes of the SHA-256 digest SpecHash keeps.
const SpecHashBytes = 16

// SpecHash returns the identifier Decide stores in Status.SpecHash: the
// SHA-256 digest of the spec's canonical encoding, truncated to
// SpecHashBytes and written in hex. It names a spec; it never decides
// whether two specs are equal (ValidateUpdate compares the specs
// themselves).
func SpecHash(spec Spec) string {
	c := canon{b: make([]byte, 0, 2*canonBlock), sink: sha256.New()}
	c.spec(&spec)
	c.sink.Write(c.b)
	var sum [sha256.Size]byte
	return hex.EncodeToString(c.sink.Sum(sum[:0])[:SpecHashBytes])
}

// flowsEqual reports whether two flow lists are equal as values: their
// canonical encodings, which are injective, are compared byte for byte.
func flowsEqual(a, b []Flow) bool {
	if len(a) != len(b) {
		return false
	}
	var ca, cb canon
	for i := range a {
		ca.b, cb.b = ca.b[:0], cb.b[:0]
		ca.flow(&a[i])
		cb.flow(&b[i])
		if !bytes.Equal(ca.b, cb.b) {
			return false
		}
	}
	return true
}

// specsEqual reports whether two specs are equal as values.
func specsEqual(a, b *Spec) bool {
	var ca, cb canon
	ca.spec(a)
	cb.spec(b)
	return bytes.Equal(ca.b, cb.b)
}
