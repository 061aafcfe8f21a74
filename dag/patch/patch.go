// Package patch merges a flow's patch (dag.CreateJob.Patch) into a job
// template, on generic JSON, with the rules documented below. It is the
// optional executor helper: the dag core only carries the patch; an executor
// that materialises jobs of any kind (a Volcano vcjob, a batch/v1 Job, a
// custom resource) calls Merge on the template's JSON.
//
// # Usage
//
//	tmpl, _ := json.Marshal(cachedTemplate) // a copy: the cache is never touched
//	merged, err := patch.Merge(tmpl, create.Patch)
//	if err != nil { ... }                   // names the offending path
//	// unmarshal merged into a fresh object and create it
//
// # Rules
//
// Objects merge field by field; a scalar, or a value of another type,
// replaces; null removes the field. Lists named in the key table merge by
// their key: a patch item whose key matches a template item merges into it
// field by field, any other item is appended, in patch order. Every other
// list (command, args, policies, …) is replaced whole. The default table,
// DefaultKeys, keys tasks, containers, initContainers, env, volumes and
// volumeMounts by name and tolerations by key, at any depth; Merger takes
// another table. A patch item without its key is an error, since it could
// match nothing; nulls inside new fields and new items are dropped, as in
// JSON merge patch (RFC 7396); the items of a replaced list are taken as
// they are.
//
// These are the rules asked for in Volcano #4475 and open PR #4491, whose
// merge mutated the cached template (#4720): Merge reads its inputs and
// writes a new document.
//
// # Determinism
//
// Merge is a pure function: equal inputs give equal bytes. Object keys come
// out sorted (encoding/json's map order); numbers keep their text.
//
// # Compatibility
//
// Kubernetes' strategic merge patch keys the same lists by name for the
// built-in types but replaces tolerations whole and needs the Go type; this
// package needs neither, so it also serves vcjob templates, whose tasks list
// has no strategic-merge metadata.
package patch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// ErrNotObject is wrapped by the errors for a template or patch that is not
// one JSON object.
var ErrNotObject = errors.New("patch: not a JSON object")

// ErrMissingKey is wrapped by the error for a keyed-list patch item that
// lacks its key (or is not an object).
var ErrMissingKey = errors.New("patch: keyed list item without its key")

// DefaultKeys returns the spec's key table: list field name → key field.
// Each call returns a fresh map, so a caller may extend its copy.
func DefaultKeys() map[string]string {
	return map[string]string{
		"tasks":          "name",
		"containers":     "name",
		"initContainers": "name",
		"env":            "name",
		"volumes":        "name",
		"volumeMounts":   "name",
		"tolerations":    "key",
	}
}

// Merger merges with a key table. The zero Merger uses DefaultKeys.
type Merger struct {
	// Keys maps a list field's name to the field that identifies its items;
	// nil means DefaultKeys. A list whose name is absent is replaced whole.
	Keys map[string]string
}

// Merge merges patch into template with the default key table.
func Merge(template, patch []byte) ([]byte, error) { return Merger{}.Merge(template, patch) }

// Merge merges patch into template (see the package comment). Neither
// input is modified. An empty patch leaves the template unchanged (in
// canonical form).
func (m Merger) Merge(template, patch []byte) ([]byte, error) {
	keys := m.Keys
	if keys == nil {
		keys = DefaultKeys()
	}
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
	out, err := mergeObject(t, p, "", keys)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
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

// mergeObject returns t with p merged in; t (decoded afresh) may be reused.
// A nil t is an empty object.
func mergeObject(t, p map[string]any, path string, keys map[string]string) (map[string]any, error) {
	if t == nil {
		t = make(map[string]any, len(p))
	}
	for k, pv := range p {
		at := join(path, k)
		if pv == nil {
			delete(t, k)
			continue
		}
		tv, ok := t[k]
		var err error
		if t[k], err = mergeValue(tv, ok, pv, k, at, keys); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// mergeValue merges patch value pv (non-null) into template value tv of
// field name.
func mergeValue(tv any, present bool, pv any, name, at string, keys map[string]string) (any, error) {
	switch pv := pv.(type) {
	case map[string]any:
		to, _ := tv.(map[string]any) // another type, or absent: merge into {}
		return mergeObject(to, pv, at, keys)
	case []any:
		key, keyed := keys[name]
		tl, isList := tv.([]any)
		if !keyed {
			return pv, nil // replaced whole: a replaced list is data, not a patch
		}
		if !present || !isList {
			tl = nil
		}
		return mergeList(tl, pv, key, at, keys)
	}
	return pv, nil
}

// mergeList merges a keyed list: matching items field by field, new ones
// appended in patch order.
func mergeList(tl, pl []any, key, at string, keys map[string]string) ([]any, error) {
	out := make([]any, len(tl), len(tl)+len(pl))
	copy(out, tl)
	for i, pv := range pl {
		itemAt := at + "[" + strconv.Itoa(i) + "]"
		po, ok := pv.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%w: %s is %s, not an object with %q", ErrMissingKey, itemAt, kind(pv), key)
		}
		id, ok := po[key]
		if !ok || id == nil {
			return nil, fmt.Errorf("%w: %s has no %q", ErrMissingKey, itemAt, key)
		}
		match := -1
		for j, tv := range out {
			if to, ok := tv.(map[string]any); ok && sameScalar(to[key], id) {
				match = j
				break
			}
		}
		if match < 0 {
			item, err := mergeObject(nil, po, itemAt, keys)
			if err != nil {
				return nil, err
			}
			out = append(out, item)
			continue
		}
		item, err := mergeObject(out[match].(map[string]any), po, itemAt, keys)
		if err != nil {
			return nil, err
		}
		out[match] = item
	}
	return out, nil
}

// sameScalar compares two key values; keys are strings in practice, but
// numbers and booleans compare by value too.
func sameScalar(a, b any) bool {
	switch a := a.(type) {
	case string:
		b, ok := b.(string)
		return ok && a == b
	case json.Number:
		b, ok := b.(json.Number)
		return ok && a == b
	case bool:
		b, ok := b.(bool)
		return ok && a == b
	}
	return false
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}
