package patch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ErrNotObject is wrapped by the errors for a template or patch that is not
// one JSON object.
var ErrNotObject = errors.New("patch: not a JSON object")

// ErrMissingKey is wrapped by the error for a keyed-list patch item that
// lacks its key (or is not an object).
var ErrMissingKey = errors.New("patch: keyed list item without its key")

// ErrOneOf is wrapped by the error for a patch object that sets two members
// of one one-of group (a volume with two sources, a probe with two
// handlers): the merged object could only be invalid.
var ErrOneOf = errors.New("patch: two members of a one-of group")

// ErrDirective is wrapped by the error for a "$patch" directive other than
// "replace" (or "delete", in a keyed-list item).
var ErrDirective = errors.New("patch: unknown $patch directive")

// directive is the field that carries a merge directive in a patch object.
const directive = "$patch"

// Merger merges with Rules. A Merger whose Rules are the zero value uses
// DefaultRules.
type Merger struct {
	Rules Rules
}

// Merge merges patch into template with DefaultRules.
func Merge(template, patch []byte) ([]byte, error) { return Merger{}.Merge(template, patch) }

// Merge merges patch into template (see the package comment). Neither
// input is modified. An empty patch leaves the template unchanged (in
// canonical form).
func (m Merger) Merge(template, patch []byte) ([]byte, error) {
	c := m.compile()
	t, err := object(template, "template")
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(patch)) == 0 {
		return json.Marshal(t)
	}
	p, err := object(patch, "patch")
	if err != nil {
		return nil, err
	}
	out, err := c.object(t, p, "", nil)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// compiled is Rules with each context's one-of members in a set.
type compiled struct {
	Rules
	member map[string]map[string]bool // context → field → in a group
}

var defaultCompiled = compile(DefaultRules())

func (m Merger) compile() *compiled {
	if m.Rules.empty() {
		return defaultCompiled
	}
	return compile(m.Rules)
}

func compile(r Rules) *compiled {
	c := &compiled{Rules: r, member: map[string]map[string]bool{}}
	for ctx, groups := range r.OneOf {
		set := map[string]bool{}
		for _, g := range groups {
			for _, f := range g {
				set[f] = true
			}
		}
		c.member[ctx] = set
	}
	return c
}

// object decodes one JSON object, numbers kept as text.
func object(b []byte, what string) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrNotObject, what, err)
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: %s: data after the object", ErrNotObject, what)
	}
	o, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: %s is %s", ErrNotObject, what, kind(v))
	}
	return o, nil
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	}
	return "an object"
}

// path is where the merge is, rendered only for an error, so that a deep
// patch costs no path strings.
type path struct {
	up    *path
	field string
	index int // ≥ 0 for a list item
}

func (p *path) child(name string) *path { return &path{up: p, field: name, index: -1} }
func (p *path) item(i int) *path        { return &path{up: p, index: i} }

func (p *path) String() string {
	var parts []*path
	for q := p; q != nil; q = q.up {
		parts = append(parts, q)
	}
	var b strings.Builder
	for i := len(parts) - 1; i >= 0; i-- {
		q := parts[i]
		switch {
		case q.index >= 0:
			b.WriteString("[" + strconv.Itoa(q.index) + "]")
		case b.Len() > 0:
			b.WriteString("." + q.field)
		default:
			b.WriteString(q.field)
		}
	}
	return b.String()
}

// object returns t with p merged in; t (decoded afresh) may be reused, and
// a nil t is an empty object. ctx is the name of the field holding the
// object, which selects its one-of groups.
func (c *compiled) object(t, p map[string]any, ctx string, at *path) (map[string]any, error) {
	if d, ok := p[directive]; ok && d != "replace" {
		return nil, fmt.Errorf("%w: %s sets %s to %v", ErrDirective, describe(at), directive, d)
	}
	if t == nil {
		t = make(map[string]any, len(p))
	}
	if err := c.oneOf(t, p, ctx, at); err != nil {
		return nil, err
	}
	members := c.member[ctx]
	for k, pv := range p {
		if k == directive {
			continue
		}
		if pv == nil {
			delete(t, k)
			continue
		}
		tv, ok := t[k]
		if c.Replace[k] || members[k] {
			tv, ok = nil, false
		}
		var err error
		if t[k], err = c.value(tv, ok, pv, k, at.child(k)); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// oneOf removes from t the members of each group other than the one p
// sets; p setting two is an error.
func (c *compiled) oneOf(t, p map[string]any, ctx string, at *path) error {
	for _, g := range c.OneOf[ctx] {
		set := ""
		for _, f := range g {
			if v, ok := p[f]; ok && v != nil {
				if set != "" {
					return fmt.Errorf("%w: %s sets both %q and %q", ErrOneOf, describe(at), set, f)
				}
				set = f
			}
		}
		if set == "" {
			continue
		}
		for _, f := range g {
			if f != set {
				delete(t, f)
			}
		}
	}
	return nil
}

func describe(at *path) string {
	if at == nil {
		return "the patch"
	}
	return at.String()
}

// value merges patch value pv (non-null) into template value tv of field
// name.
func (c *compiled) value(tv any, present bool, pv any, name string, at *path) (any, error) {
	switch pv := pv.(type) {
	case map[string]any:
		to, _ := tv.(map[string]any) // another type, or absent: merge into {}
		if pv[directive] == "replace" {
			to = nil
		}
		return c.object(to, pv, name, at)
	case []any:
		keys, keyed := c.Keys[name]
		if !keyed {
			return pv, nil // replaced whole: a replaced list is data, not a patch
		}
		tl, _ := tv.([]any)
		if !present {
			tl = nil
		}
		return c.list(tl, pv, name, keys, at)
	}
	return pv, nil
}

// removed marks a keyed-list item deleted by a "$patch": "delete" item.
type removed struct{}

// list merges a keyed list: matching items field by field, new ones
// appended in patch order, through an index of the template's keys.
func (c *compiled) list(tl, pl []any, name string, keys []Key, at *path) ([]any, error) {
	out := make([]any, 0, len(tl)+len(pl))
	if !replacesList(pl) {
		out = append(out, tl...)
	}
	index := make(map[string]int, len(out)+len(pl))
	for i, it := range out {
		if o, ok := it.(map[string]any); ok {
			if id, ok := keyOf(o, keys); ok {
				if _, dup := index[id]; !dup {
					index[id] = i // the first of duplicates, as a linear search finds it
				}
			}
		}
	}
	deleted := false
	for i, pv := range pl {
		po, ok := pv.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%w: %s is %s, not an object with %s", ErrMissingKey, at.item(i), kind(pv), keyNames(keys))
		}
		if isListReplace(po) {
			continue
		}
		id, ok := keyOf(po, keys)
		if !ok {
			return nil, fmt.Errorf("%w: %s has no %s", ErrMissingKey, at.item(i), keyNames(keys))
		}
		j, found := index[id]
		var base map[string]any
		switch d := po[directive]; d {
		case nil:
			if found {
				base = out[j].(map[string]any)
			}
		case "replace":
		case "delete":
			if found {
				out[j] = removed{}
				delete(index, id)
				deleted = true
			}
			continue
		default:
			return nil, fmt.Errorf("%w: %s.%s is %v", ErrDirective, at.item(i), directive, d)
		}
		item, err := c.object(base, po, name, at.item(i))
		if err != nil {
			return nil, err
		}
		if found {
			out[j] = item
			continue
		}
		index[id] = len(out)
		out = append(out, item)
	}
	if deleted {
		kept := out[:0]
		for _, it := range out {
			if _, gone := it.(removed); !gone {
				kept = append(kept, it)
			}
		}
		out = kept
	}
	return out, nil
}

// replacesList reports whether a keyed-list patch holds {"$patch":
// "replace"}: the list is replaced by its other items.
func replacesList(pl []any) bool {
	for _, pv := range pl {
		if o, ok := pv.(map[string]any); ok && isListReplace(o) {
			return true
		}
	}
	return false
}

func isListReplace(o map[string]any) bool { return len(o) == 1 && o[directive] == "replace" }

// keyOf returns the identity of item o under the first key that applies.
// Values are typed and length-prefixed, so distinct tuples never share an
// identity.
func keyOf(o map[string]any, keys []Key) (string, bool) {
	for ki, k := range keys {
		var b strings.Builder
		b.WriteString(strconv.Itoa(ki))
		ok := true
		for _, f := range k.Fields {
			var tag byte
			var s string
			switch v := o[f].(type) {
			case string:
				tag, s, ok = 's', v, v != "" || !k.EmptyIsMissing
			case json.Number:
				tag, s = 'n', string(v)
			case bool:
				tag, s = 'b', strconv.FormatBool(v)
			case nil:
				d, has := k.Defaults[f]
				tag, s, ok = 's', d, has
			default:
				ok = false
			}
			if !ok {
				break
			}
			b.WriteByte(tag)
			b.WriteString(strconv.Itoa(len(s)))
			b.WriteByte(':')
			b.WriteString(s)
		}
		if ok {
			return b.String(), true
		}
	}
	return "", false
}

// keyNames describes the fields a keyed item needs: `"name" or "mountPath"`.
func keyNames(keys []Key) string {
	var alts []string
	for _, k := range keys {
		var req []string
		for _, f := range k.Fields {
			if _, ok := k.Defaults[f]; !ok {
				req = append(req, strconv.Quote(f))
			}
		}
		alts = append(alts, strings.Join(req, " and "))
	}
	return strings.Join(alts, " or ")
}
