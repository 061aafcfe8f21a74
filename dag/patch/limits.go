package patch

import (
	"errors"
	"fmt"
)

// MaxBytes bounds the size of a patch. A flow's patch is stored in the
// workflow object, which etcd limits to about 1.5 MiB with all its flows; a
// patch of a whole pod template with its containers is a few KiB.
const MaxBytes = 256 << 10

// MaxDepth bounds the nesting of a patch (objects and lists). The deepest
// field of a vcjob's pod template (an affinity term's match expression
// values) is about 15 levels down.
const MaxDepth = 64

// ErrTooLarge is wrapped by Validate's error for a patch over MaxBytes or
// nested deeper than MaxDepth.
var ErrTooLarge = errors.New("patch: too large")

// Validate checks a patch on its own, with DefaultRules: at most MaxBytes
// and MaxDepth, one JSON object, every keyed-list item with its key, no two
// members of a one-of group, known directives. It is the merge of the patch
// into an empty template, after a linear scan for the bounds.
func Validate(patch []byte) error {
	if len(patch) > MaxBytes {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, len(patch), MaxBytes)
	}
	if d := depth(patch); d > MaxDepth {
		return fmt.Errorf("%w: nested %d deep, at most %d", ErrTooLarge, d, MaxDepth)
	}
	p, err := object(patch, "patch")
	if err != nil {
		return err
	}
	_, err = defaultCompiled.object(nil, p, "", nil)
	return err
}

// depth returns the deepest nesting of objects and lists in JSON text,
// outside strings; it stops counting at MaxDepth+1.
func depth(b []byte) int {
	d, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString:
			inString = c != '"'
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			d++
			if d > deepest {
				deepest = d
				if deepest > MaxDepth {
					return deepest
				}
			}
		case c == '}' || c == ']':
			d--
		}
	}
	return deepest
}
