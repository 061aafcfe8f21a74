package wire

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	yaml3 "sigs.k8s.io/yaml/goyaml.v3"
)

// seg is one step of a field path: a list index, or a key when index is
// -1.
type seg struct {
	key   string
	index int
}

// scanner walks a YAML node tree once. Its path is a stack of steps, turned
// into a *field.Path only for an error, so a clean document costs no path
// allocations.
type scanner struct {
	limit int64
	// maxValues bounds the nodes the document expands to (keys, list
	// items, objects and lists), each alias counted as the nodes it
	// stands for.
	maxValues int64
	// values counts the nodes so far, aliases expanded.
	values int64
	// sizes holds the expanded JSON size and node count of each anchored
	// node once measured, and a size of inProgress while it is being
	// measured: an alias to a node in progress is an alias inside its own
	// anchor.
	sizes map[*yaml3.Node]measure
	path  []seg
	errs  field.ErrorList
	// omitted counts the errors past MaxErrors.
	omitted int
	// aliased says whether the document has an alias, for the message.
	aliased bool
	// why is set when the walk stops: the document is refused.
	why string
}

// measure is what an anchored node stands for wherever it is aliased.
type measure struct{ bytes, values int64 }

const inProgress = -1

// size returns the length of n as JSON with every alias expanded, or false
// once the document is known to expand past the limit or past maxValues
// nodes (or to contain itself). Each node is visited once: an alias costs a
// map lookup.
func (s *scanner) size(n *yaml3.Node) (int64, bool) {
	if n.Kind == yaml3.AliasNode {
		s.aliased = true
		m, ok := s.sizes[n.Alias]
		switch {
		case !ok:
			// The parser resolves an alias only to an anchor defined
			// before it, which the walk has measured; measure it now if not.
			return s.size(n.Alias)
		case m.bytes == inProgress:
			s.why = fmt.Sprintf("the alias *%s on line %d sits inside the value it refers to", n.Value, n.Line)
			return 0, false
		}
		// The anchored value's own nodes were counted where it is
		// written; each alias adds them again.
		if s.values += m.values; s.values > s.maxValues {
			s.why = tooManyValues(int(s.maxValues), true)
			return 0, false
		}
		return m.bytes, true
	}
	valuesBefore := s.values
	if n.Kind != yaml3.DocumentNode {
		if s.values++; s.values > s.maxValues {
			s.why = tooManyValues(int(s.maxValues), s.aliased)
			return 0, false
		}
	}
	if n.Anchor != "" {
		s.sizes[n] = measure{bytes: inProgress}
	}
	var sz int64
	var ok bool
	switch n.Kind {
	case yaml3.ScalarNode:
		sz, ok = scalarSize(n), true
	case yaml3.SequenceNode:
		sz, ok = s.sequence(n)
	case yaml3.MappingNode:
		sz, ok = s.mapping(n)
	default: // a document
		for _, c := range n.Content {
			var csz int64
			if csz, ok = s.size(c); !ok {
				return 0, false
			}
			sz += csz
		}
		ok = true
	}
	if !ok {
		return 0, false
	}
	if sz > s.limit {
		s.why = fmt.Sprintf("as JSON it is more than %d bytes, more than the API server accepts in a request", s.limit)
		if s.aliased {
			s.why = fmt.Sprintf("as JSON, with its aliases expanded, it is more than %d bytes, more than the API server accepts in a request (an alias bomb?)", s.limit)
		}
		return 0, false
	}
	if n.Anchor != "" {
		s.sizes[n] = measure{bytes: sz, values: s.values - valuesBefore}
	}
	return sz, true
}

// scalarSize is the length of a scalar in JSON: a plain number, boolean or
// null as written (at least 4 bytes: null), anything else as a string,
// escapes included (encoding/json writes <, > and & as \u00XX too).
func scalarSize(n *yaml3.Node) int64 {
	v := n.Value
	if n.Style&(yaml3.DoubleQuotedStyle|yaml3.SingleQuotedStyle|yaml3.LiteralStyle|yaml3.FoldedStyle) == 0 {
		switch n.Tag {
		case "!!int", "!!float", "!!bool", "!!null":
			return max(int64(len(v)), 4)
		}
	}
	sz := int64(len(v)) + 2
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			sz += 5
		case c == '"' || c == '\\':
			sz++
		}
	}
	return sz
}

func (s *scanner) sequence(n *yaml3.Node) (int64, bool) {
	sz := int64(1 + len(n.Content)) // brackets and commas
	for i, c := range n.Content {
		s.path = append(s.path, seg{index: i})
		csz, ok := s.size(c)
		s.path = s.path[:len(s.path)-1]
		if !ok {
			return 0, false
		}
		if sz += csz; sz > s.limit {
			return sz, true
		}
	}
	return sz, true
}

func (s *scanner) mapping(n *yaml3.Node) (int64, bool) {
	s.duplicates(n)
	sz := int64(1 + len(n.Content)) // braces, colons and commas
	for i := 0; i+1 < len(n.Content); i += 2 {
		ksz, ok := s.size(n.Content[i])
		if !ok {
			return 0, false
		}
		s.path = append(s.path, seg{key: keyOf(n.Content[i]), index: -1})
		vsz, ok := s.size(n.Content[i+1])
		s.path = s.path[:len(s.path)-1]
		if !ok {
			return 0, false
		}
		if sz += ksz + vsz; sz > s.limit {
			return sz, true
		}
	}
	return sz, true
}

// keyOf is a mapping key as the path names it: a scalar's text (through an
// alias), or "?" for a key that is itself a list or an object.
func keyOf(k *yaml3.Node) string {
	if k.Kind == yaml3.AliasNode && k.Alias != nil {
		k = k.Alias
	}
	if k.Kind == yaml3.ScalarNode {
		return k.Value
	}
	return "?"
}

// duplicates reports every key of n written before in n (the YAML
// specification forbids them; the libraries keep one silently). Merge keys
// (<<) may repeat.
func (s *scanner) duplicates(n *yaml3.Node) {
	keys := len(n.Content) / 2
	if keys < 2 {
		return
	}
	isDup := func(k *yaml3.Node) bool { return k.Kind == yaml3.ScalarNode && k.Tag != "!!merge" }
	if keys <= 8 {
		for i := 2; i < len(n.Content); i += 2 {
			if !isDup(n.Content[i]) {
				continue
			}
			for j := 0; j < i; j += 2 {
				if isDup(n.Content[j]) && n.Content[j].Value == n.Content[i].Value {
					s.duplicate(n.Content[i])
					break
				}
			}
		}
		return
	}
	seen := make(map[string]struct{}, keys)
	for i := 0; i < len(n.Content); i += 2 {
		k := n.Content[i]
		if !isDup(k) {
			continue
		}
		if _, ok := seen[k.Value]; ok {
			s.duplicate(k)
			continue
		}
		seen[k.Value] = struct{}{}
	}
}

func (s *scanner) duplicate(k *yaml3.Node) {
	if len(s.errs) >= MaxErrors {
		s.omitted++
		return
	}
	s.path = append(s.path, seg{key: k.Value, index: -1})
	s.errs = append(s.errs, field.Duplicate(s.fieldPath(), k.Value))
	s.path = s.path[:len(s.path)-1]
}

// fieldPath is the current path as a *field.Path.
func (s *scanner) fieldPath() *field.Path {
	return segPath(s.path)
}

func segPath(segs []seg) *field.Path {
	var p *field.Path
	for _, g := range segs {
		switch {
		case g.index >= 0 && p != nil:
			p = p.Index(g.index)
		case g.index >= 0:
			p = field.NewPath("").Index(g.index)
		case p == nil:
			p = field.NewPath(g.key)
		default:
			p = p.Child(g.key)
		}
	}
	return p
}

// fatal is the error that stops the scan.
func (s *scanner) fatal(root *field.Path) *field.Error {
	return field.Invalid(root, "", s.why)
}
