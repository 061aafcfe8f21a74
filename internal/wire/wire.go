// Package wire reads the objects people write (a RayCluster, a JobFlow): one
// YAML or JSON document, strictly, at a cost bounded by the document's size.
//
// kubectl turns YAML into JSON on the client and sends the JSON, so the API
// server only ever sees aliases already expanded. Aliases are accepted here
// too, but the document they expand to is bounded like the request the API
// server would have received: an alias bomb (one anchored value aliased
// thousands of times, which YAML libraries let through because they count
// aliased nodes, not the bytes they stand for) is refused before anything is
// expanded, in time linear in the document as written. So is a document of
// more values (keys, list items, objects and lists) than Options.MaxValues,
// as written or expanded: what reading costs grows with the values, tiny
// ones fit in millions within the byte bound, and they are counted in one
// pass over the bytes before anything is parsed (see countValues).
//
// Everything a person can get wrong is reported at once (the first
// MaxErrors problems, then how many more), each by its path with list
// indices (spec.workerGroupSpecs[1].replicas): unknown fields, duplicate
// keys, values of the wrong type, unreadable durations, timestamps and
// quantities, as kubectl's strict field validation does. A second YAML
// document is refused rather than silently dropped.
package wire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
	yaml3 "sigs.k8s.io/yaml/goyaml.v3"
)

// Options says how to read one kind of object.
type Options struct {
	// MaxBytes bounds the document as written and, for YAML, the JSON it
	// expands to once its aliases are resolved.
	MaxBytes int
	// MaxValues bounds the document's values (keys, list items, objects
	// and lists), as written and, for YAML, with its aliases expanded: what
	// reading it costs grows with them (see countValues).
	MaxValues int
	// Root names the whole document in errors about it ("rayCluster").
	Root string
	// Shapes maps a type that decodes itself (it implements
	// json.Unmarshaler) to the struct whose JSON fields it reads, so that
	// the keys and values inside it are still checked.
	Shapes map[reflect.Type]reflect.Type
	// APIVersion and Kind are the only apiVersion and kind the document
	// may name; with IdentityOptional either may also be absent.
	APIVersion, Kind string
	IdentityOptional bool
}

// Decode reads data, one YAML or JSON object, into out (a pointer to a
// struct). It returns every problem found, each naming its field path; out
// is written only when there is none. A document over MaxBytes, one whose
// aliases expand past MaxBytes, one that is not YAML or JSON, or one
// holding a second document is refused with a single error on Root, before
// anything else is read.
func Decode(data []byte, out any, o Options) field.ErrorList {
	root := field.NewPath(o.Root)
	if len(data) > o.MaxBytes {
		return field.ErrorList{field.TooLong(root, "", o.MaxBytes)}
	}
	var errs field.ErrorList
	js := data
	t := bytes.TrimLeft(data, " \t\r\n")
	isJSON := len(t) > 0 && t[0] == '{'
	if _, ok := countValues(data, isJSON, o.MaxValues); !ok {
		return field.ErrorList{field.Invalid(root, "", tooManyValues(o.MaxValues, false))}
	}
	if isJSON {
		var tree any
		strict, err := kjson.UnmarshalStrict(data, &tree, kjson.DisallowDuplicateFields)
		if err != nil {
			return field.ErrorList{field.Invalid(root, "", "not JSON: "+err.Error())}
		}
		for _, e := range strict[:min(len(strict), MaxErrors)] {
			errs = append(errs, duplicateError(e, root))
		}
		omitted := max(len(strict)-MaxErrors, 0)
		return decodeTree(tree, js, out, o, errs, omitted)
	}
	var fatal *field.Error
	var omitted int
	errs, omitted, fatal = scanYAML(data, o, root)
	if fatal != nil {
		return field.ErrorList{fatal}
	}
	// The scan found duplicates (by path) and bounded the expansion; the
	// conversion itself is sigs.k8s.io/yaml's, which kubectl and the API
	// server use, so scalars read the same way (YAML 1.1: yes is true).
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return field.ErrorList{field.Invalid(root, "", "not YAML: "+err.Error())}
	}
	var tree any
	if err := kjson.UnmarshalCaseSensitivePreserveInts(js, &tree); err != nil {
		return field.ErrorList{field.Invalid(root, "", "not YAML: "+err.Error())}
	}
	return decodeTree(tree, js, out, o, errs, omitted)
}

// decodeTree checks the generic tree against out's type and, when nothing
// is wrong, decodes js into out.
// errs holds the problems found so far and omitted counts those past
// MaxErrors.
func decodeTree(tree any, js []byte, out any, o Options, errs field.ErrorList, omitted int) field.ErrorList {
	root := field.NewPath(o.Root)
	if _, ok := tree.(map[string]any); !ok {
		return append(errs, field.Invalid(root, badValue(tree), "must be an object"))
	}
	c := checker{shapes: o.Shapes, errs: errs, omitted: omitted}
	c.check(tree, reflect.TypeOf(out).Elem())
	errs = append(c.errs, identity(tree.(map[string]any), o)...)
	if c.omitted > 0 {
		errs = append(errs, field.Invalid(root, "", fmt.Sprintf("%d more problems are not listed: only the first %d are", c.omitted, MaxErrors)))
	}
	if len(errs) > 0 {
		return errs
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(js, out); err != nil {
		// The check above refuses everything the decoder would; this is a
		// safety net, still an error on the document rather than a panic.
		return field.ErrorList{field.Invalid(root, "", err.Error())}
	}
	return nil
}

// identity checks the document's apiVersion and kind (a value of the wrong
// type is the checker's to report).
func identity(obj map[string]any, o Options) field.ErrorList {
	var errs field.ErrorList
	for _, id := range [...]struct{ key, want string }{{"apiVersion", o.APIVersion}, {"kind", o.Kind}} {
		v, present := obj[id.key]
		s, isString := v.(string)
		if id.want == "" || (present && !isString) || (!present && o.IdentityOptional) || s == id.want {
			continue
		}
		errs = append(errs, field.NotSupported(field.NewPath(id.key), s, []string{id.want}))
	}
	return errs
}

// duplicateError turns sigs.k8s.io/json's strict error for a duplicate key
// (with its dotted path) into a field error on that path.
func duplicateError(err error, root *field.Path) *field.Error {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "duplicate field "); ok {
		if p, err := strconv.Unquote(rest); err == nil {
			return field.Duplicate(dottedPath(p), "")
		}
	}
	return field.Invalid(root, "", msg)
}

// dottedPath parses a dotted JSON path with [i] indices
// ("spec.workerGroupSpecs[0].x").
func dottedPath(dotted string) *field.Path {
	var p *field.Path
	name := func(s string) {
		if p == nil {
			p = field.NewPath(s)
		} else {
			p = p.Child(s)
		}
	}
	start := 0
	for i := 0; i <= len(dotted); i++ {
		if i < len(dotted) && dotted[i] != '.' && dotted[i] != '[' {
			continue
		}
		if i > start {
			name(dotted[start:i])
		}
		for i < len(dotted) && dotted[i] == '[' {
			end := i + 1
			for end < len(dotted) && dotted[end] != ']' {
				end++
			}
			n, err := strconv.Atoi(dotted[i+1 : end])
			if err != nil || end == len(dotted) {
				name(dotted[i:])
				return p
			}
			if p == nil {
				p = field.NewPath("")
			}
			p = p.Index(n)
			i = end + 1
		}
		start = i + 1
	}
	return p
}

// scanYAML parses the YAML into nodes (aliases unexpanded), refuses a second
// document, and walks the nodes once: it measures the JSON the document
// expands to, each anchored value measured once, and stops as soon as that
// passes MaxBytes; it reports every duplicate key by its path.
func scanYAML(data []byte, o Options, root *field.Path) (field.ErrorList, int, *field.Error) {
	dec := yaml3.NewDecoder(bytes.NewReader(data))
	var doc yaml3.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, 0, nil // empty: refused as "must be an object" later
		}
		return nil, 0, field.Invalid(root, "", "not YAML: "+err.Error())
	}
	for {
		var next yaml3.Node
		err := dec.Decode(&next)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, 0, field.Invalid(root, "", "not YAML: "+err.Error())
		}
		// A bare "---" at the end (nothing written after it) is no
		// document; kubectl skips it too.
		if len(next.Content) == 1 && next.Content[0].Kind == yaml3.ScalarNode && next.Content[0].Tag == "!!null" && next.Content[0].Value == "" {
			continue
		}
		return nil, 0, field.Invalid(root, "", fmt.Sprintf("a second YAML document starts at line %d: give one object per document", next.Line))
	}
	s := scanner{limit: int64(o.MaxBytes), maxValues: int64(o.MaxValues), sizes: map[*yaml3.Node]measure{}}
	if _, ok := s.size(&doc); !ok {
		return nil, 0, s.fatal(root)
	}
	return s.errs, s.omitted, nil
}
