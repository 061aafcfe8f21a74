package wire

import "fmt"

// MaxErrors bounds the problems one error lists: a document of a few
// megabytes can hold a hundred thousand wrong values, and a field error
// with its path costs about a kilobyte. The rest are counted, not built,
// and one last error on the document says how many were left out.
const MaxErrors = 1000

// The cost of reading a document grows with its values (keys, list items,
// objects and lists), not its bytes: a YAML parser keeps a node of about
// 150 bytes for each, and the conversion to JSON, the tree the checker
// walks and the typed result each keep their own copy, about 800 bytes a
// value in all. A document of tiny values ([a,a,a,...], two bytes a value)
// fits 1.5 million of them in the API server's 3 MiB request limit, which
// is more than a gigabyte to read. Decode therefore counts the values
// before anything is parsed, in one pass over the bytes that allocates
// nothing, and refuses a document above Options.MaxValues.
//
// For JSON the count is exact: one value for the document, one for each
// key (a colon outside strings), one for each item after the first of a
// list or an object (a comma outside strings) and one for the first item
// of a non-empty list or object.
//
// YAML has plain scalars, block collections without brackets, and quotes
// that only open at the start of a scalar, so its count is an estimate
// from the indicators that introduce a value: a comma, an opening bracket
// or brace, a colon or a question mark followed by a space or a line end
// (a key), a dash followed by one (a list item), and a colon right after a
// closing quote ("a":1). They are counted wherever they stand, in quoted
// strings and comments too, so that no quoting trick hides values from
// the count; a legitimate document writes few of them inside strings. The
// estimate counts a key and its value once and a list item once, so a
// document has at most twice as many nodes as the estimate (plus one):
// whatever passes, the YAML parser builds at most 2*MaxValues+2 nodes, and
// the walk over them counts the values exactly, aliases expanded, before
// the document is converted to JSON (see scanner.size).
func countValues(data []byte, isJSON bool, limit int) (int, bool) {
	if isJSON {
		return countJSON(data, limit)
	}
	return countYAML(data, limit)
}

func countJSON(data []byte, limit int) (int, bool) {
	n := 1
	inString := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case ',', ':':
			n++
		case '[', '{':
			if firstItem(data[i+1:]) {
				n++
			}
		default:
			continue
		}
		if n > limit {
			return n, false
		}
	}
	return n, true
}

// firstItem says whether an opening bracket is followed by an item rather
// than its closing bracket.
func firstItem(rest []byte) bool {
	for _, c := range rest {
		switch c {
		case ' ', '\t', '\r', '\n':
		case ']', '}':
			return false
		default:
			return true
		}
	}
	return false
}

func countYAML(data []byte, limit int) (int, bool) {
	n := 1
	for i, c := range data {
		switch c {
		case ',', '[', '{':
		case ':':
			if !spaceAfter(data, i) && (i == 0 || (data[i-1] != '"' && data[i-1] != '\'')) {
				continue
			}
		case '-', '?':
			if !spaceAfter(data, i) {
				continue
			}
		default:
			continue
		}
		if n++; n > limit {
			return n, false
		}
	}
	return n, true
}

// spaceAfter says whether data[i] is followed by white space or ends the
// document.
func spaceAfter(data []byte, i int) bool {
	if i+1 == len(data) {
		return true
	}
	switch data[i+1] {
	case ' ', '\t', '\r', '\n':
		return true
	}
	return false
}

// tooManyValues is the error for a document with more than limit values.
func tooManyValues(limit int, expanded bool) string {
	if expanded {
		return fmt.Sprintf("with its aliases expanded it has more than %d values (keys, list items, objects and lists), more than any object the API server can store", limit)
	}
	return fmt.Sprintf("it has more than %d values (keys, list items, objects and lists), more than any object the API server can store", limit)
}
