package extender

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// argsParts are the parts of an ExtenderArgs body, each a slice of it.
type argsParts struct {
	pod, names json.RawMessage
	// items are the Node objects, nil when no Nodes were sent.
	items []itemPart
}

// itemPart is one Node object of the body: its bytes, and the object of
// the last calls it is byte for byte equal to, when sentIndex found it
// without scanning (nil otherwise: maybe equal all the same).
type itemPart struct {
	raw   json.RawMessage
	known *sentNode
}

// splitArgs finds the parts of an ExtenderArgs body in one pass without
// copying or decoding them, refusing a part as soon as it runs past its
// byte bound (the pod's MaxPodBytes, the names' MaxNodes names, each Node's
// MaxNodeBytes) and the Nodes list at its MaxNodes+1st object, before the
// rest is scanned. Keys match as encoding/json matches them, ignoring
// case; unknown keys are skipped. Only strings and brackets are checked
// here: each part's syntax is the decoder's. A Node object that known
// holds byte for byte is taken whole without being scanned (sentIndex.at).
func splitArgs(b []byte, l Limits, known sentIndex) (argsParts, error) {
	var out argsParts
	sc := scanner{b: b}
	err := sc.object(func(key string) error {
		var err error
		switch {
		case strings.EqualFold(key, "Pod"):
			out.pod, err = sc.value("the pod", l.MaxPodBytes)
		case strings.EqualFold(key, "NodeNames"):
			out.names, err = sc.value("the node names", l.namesBytes())
		case strings.EqualFold(key, "Nodes"):
			out.items, err = sc.nodes(l, known)
		default:
			_, err = sc.value(key, int64(len(b)))
		}
		return err
	})
	if err == nil && sc.skipSpace() < len(b) {
		err = fmt.Errorf("data after the one value at byte %d", sc.i)
	}
	return out, err
}

// scanner walks a JSON body by hand, value by value.
type scanner struct {
	b []byte
	i int
}

func (sc *scanner) skipSpace() int {
	for sc.i < len(sc.b) && strings.IndexByte(" \t\r\n", sc.b[sc.i]) >= 0 {
		sc.i++
	}
	return sc.i
}

// next consumes c, after white space.
func (sc *scanner) next(c byte) bool {
	if sc.skipSpace() < len(sc.b) && sc.b[sc.i] == c {
		sc.i++
		return true
	}
	return false
}

// null consumes a null literal, if there is one.
func (sc *scanner) null() bool {
	if sc.skipSpace(); strings.HasPrefix(string(sc.b[sc.i:min(sc.i+4, len(sc.b))]), "null") {
		sc.i += 4
		return true
	}
	return false
}

// object walks an object (or a null), calling field with each key to
// consume its value.
func (sc *scanner) object(field func(key string) error) error {
	if sc.null() {
		return nil
	}
	if !sc.next('{') {
		return fmt.Errorf("want an object at byte %d", sc.i)
	}
	for first := true; !sc.next('}'); first = false {
		if !first && !sc.next(',') {
			return fmt.Errorf("want ',' or '}' at byte %d", sc.i)
		}
		raw, err := sc.value("a key", 1<<10)
		if err != nil {
			return err
		}
		var key string
		if err := json.Unmarshal(raw, &key); err != nil {
			return fmt.Errorf("a key at byte %d: %w", sc.i, err)
		}
		if !sc.next(':') {
			return fmt.Errorf("want ':' at byte %d", sc.i)
		}
		if err := field(key); err != nil {
			return err
		}
	}
	return nil
}

// nodes walks a NodeList: its items, each within MaxNodeBytes, at most
// MaxNodes of them. A null list is none (nil); one without items is empty.
func (sc *scanner) nodes(l Limits, known sentIndex) ([]itemPart, error) {
	var items []itemPart
	if sc.null() {
		return nil, nil
	}
	items = []itemPart{}
	err := sc.object(func(key string) error {
		if !strings.EqualFold(key, "items") {
			_, err := sc.value("nodes."+key, int64(len(sc.b)))
			return err
		}
		if sc.null() {
			return nil
		}
		if !sc.next('[') {
			return fmt.Errorf("nodes.items: want a list at byte %d", sc.i)
		}
		for first := true; !sc.next(']'); first = false {
			if !first && !sc.next(',') {
				return fmt.Errorf("nodes.items: want ',' or ']' at byte %d", sc.i)
			}
			if len(items) == l.MaxNodes {
				return &partError{status: http.StatusRequestEntityTooLarge,
					msg: fmt.Sprintf("over %d candidate nodes, more than the cluster may have (Limits.MaxNodes %d)", l.MaxNodes, l.MaxNodes)}
			}
			sc.skipSpace()
			if n := known.at(sc.b[sc.i:]); n != nil {
				items = append(items, itemPart{raw: sc.b[sc.i : sc.i+len(n.raw)], known: n})
				sc.i += len(n.raw)
				continue
			}
			item, err := sc.value(fmt.Sprintf("nodes.items[%d]", len(items)), l.MaxNodeBytes)
			if err != nil {
				return err
			}
			items = append(items, itemPart{raw: item})
		}
		return nil
	})
	return items, err
}

// errTruncated is a body that ends inside a value.
var errTruncated = errors.New("the body ends inside a value")

// value consumes one value of at most maxBytes bytes and returns it: a
// string, an object or list (to its matching bracket, strings skipped), or
// a literal or number (to the next delimiter).
func (sc *scanner) value(what string, maxBytes int64) (json.RawMessage, error) {
	start := sc.skipSpace()
	depth := 0
	inString := false
	for ; sc.i < len(sc.b); sc.i++ {
		if int64(sc.i-start) > maxBytes {
			return nil, &partError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("%s: over the %d bytes it may take", what, maxBytes)}
		}
		c := sc.b[sc.i]
		if inString {
			// Jump to the next quote (most of a body is string bytes: the
			// registers' JSON), escaped when an odd run of backslashes
			// precedes it.
			j := bytes.IndexByte(sc.b[sc.i:], '"')
			if j < 0 {
				sc.i = len(sc.b)
				break
			}
			sc.i += j
			if int64(sc.i-start) > maxBytes {
				return nil, &partError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("%s: over the %d bytes it may take", what, maxBytes)}
			}
			backslashes := 0
			for k := sc.i - 1; sc.b[k] == '\\'; k-- {
				backslashes++
			}
			if backslashes%2 == 1 {
				continue
			}
			inString = false
			if depth == 0 {
				sc.i++
				return sc.b[start:sc.i], nil
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 { // the end of a literal inside the enclosing value
				return sc.b[start:sc.i], nil
			}
			depth--
			if depth == 0 {
				sc.i++
				return sc.b[start:sc.i], nil
			}
		case ',', ' ', '\t', '\r', '\n', ':':
			if depth == 0 {
				return sc.b[start:sc.i], nil
			}
		}
	}
	if int64(sc.i-start) > maxBytes {
		return nil, &partError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("%s: over the %d bytes it may take", what, maxBytes)}
	}
	if depth > 0 || inString {
		return nil, fmt.Errorf("%s: %w", what, errTruncated)
	}
	return sc.b[start:sc.i], nil
}
