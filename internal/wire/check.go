package wire

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// checker walks a decoded JSON tree (objects, lists, strings, int64,
// float64, booleans, nil) beside the Go type it is to be decoded into and
// reports, by path, every key the type does not declare and every value
// the decoder would refuse. It reports what encoding/json would stop at,
// all of it, in words rather than Go type names.
type checker struct {
	shapes map[reflect.Type]reflect.Type
	path   []seg
	errs   field.ErrorList
	// omitted counts the errors past MaxErrors: counted, not built.
	omitted int
	keys    [][]string // one key buffer per depth, reused
}

var (
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
)

// leafWords says, for the types that read themselves, what a value must be.
var leafWords = map[reflect.Type]string{
	reflect.TypeFor[metav1.Time]():        "must be a timestamp such as 2006-01-02T15:04:05Z (RFC 3339)",
	reflect.TypeFor[metav1.MicroTime]():   "must be a timestamp such as 2006-01-02T15:04:05.000000Z (RFC 3339)",
	reflect.TypeFor[metav1.Duration]():    "must be a duration such as 90s or 1m30s",
	reflect.TypeFor[resource.Quantity]():  "must be a quantity such as 500m, 2Gi or 1.5",
	reflect.TypeFor[intstr.IntOrString](): "must be an integer or a string",
}

func (c *checker) fail(v any, detail string) {
	if c.full() {
		return
	}
	c.errs = append(c.errs, field.Invalid(segPath(c.path), badValue(v), detail))
}

// full says whether MaxErrors errors are listed, counting one more that
// is not.
func (c *checker) full() bool {
	if len(c.errs) < MaxErrors {
		return false
	}
	c.omitted++
	return true
}

// badValue is what an error shows of a wrong value: a scalar itself (long
// strings cut), or the kind of a list or an object.
func badValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		if len(x) > 64 {
			return x[:64] + "..."
		}
	case nil:
		return "null"
	}
	return v
}

func (c *checker) check(v any, t reflect.Type) {
	if v == nil {
		return // null leaves a field unset, as encoding/json does
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if sh, ok := c.shapes[t]; ok {
		t = sh
	} else if t == rawMessageType {
		return
	} else if reflect.PointerTo(t).Implements(unmarshalerType) {
		c.leaf(v, t)
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		c.object(v, t)
	case reflect.Map:
		c.mapOf(v, t)
	case reflect.Slice, reflect.Array:
		c.list(v, t)
	case reflect.String:
		if _, ok := v.(string); !ok {
			c.fail(v, "must be a string")
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			c.fail(v, "must be a boolean (true or false)")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		c.integer(v, t, -1<<(t.Bits()-1), 1<<(t.Bits()-1)-1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		c.integer(v, t, 0, math.MaxInt64)
	case reflect.Float32, reflect.Float64:
		switch v.(type) {
		case int64, float64:
		default:
			c.fail(v, "must be a number")
		}
	}
}

func (c *checker) integer(v any, t reflect.Type, lo, hi int64) {
	n, ok := v.(int64)
	if !ok {
		c.fail(v, "must be an integer")
		return
	}
	if n < lo || n > hi {
		c.fail(v, fmt.Sprintf("must be an integer from %d to %d", lo, hi))
	}
}

// leaf checks a value of a type that reads itself by letting it read the
// value.
func (c *checker) leaf(v any, t reflect.Type) {
	b, err := json.Marshal(v)
	if err == nil {
		err = reflect.New(t).Interface().(json.Unmarshaler).UnmarshalJSON(b)
	}
	if err == nil {
		return
	}
	words, ok := leafWords[t]
	if !ok {
		words = "is not valid: " + err.Error()
	}
	c.fail(v, words)
}

func (c *checker) list(v any, t reflect.Type) {
	if t.Elem().Kind() == reflect.Uint8 {
		if _, ok := v.(string); !ok {
			c.fail(v, "must be a base64 string")
		}
		return
	}
	xs, ok := v.([]any)
	if !ok {
		c.fail(v, "must be a list")
		return
	}
	for i, e := range xs {
		c.path = append(c.path, seg{index: i})
		c.check(e, t.Elem())
		c.path = c.path[:len(c.path)-1]
	}
}

// sortedKeys returns m's keys in order, in a buffer reused at this depth.
func (c *checker) sortedKeys(m map[string]any) []string {
	d := len(c.path)
	for len(c.keys) <= d {
		c.keys = append(c.keys, nil)
	}
	ks := c.keys[d][:0]
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	c.keys[d] = ks
	return ks
}

func (c *checker) mapOf(v any, t reflect.Type) {
	m, ok := v.(map[string]any)
	if !ok {
		c.fail(v, "must be an object")
		return
	}
	for _, k := range c.sortedKeys(m) {
		c.path = append(c.path, seg{key: k, index: -1})
		c.check(m[k], t.Elem())
		c.path = c.path[:len(c.path)-1]
	}
}

func (c *checker) object(v any, t reflect.Type) {
	m, ok := v.(map[string]any)
	if !ok {
		c.fail(v, "must be an object")
		return
	}
	fields := jsonFields(t)
	for _, k := range c.sortedKeys(m) {
		c.path = append(c.path, seg{key: k, index: -1})
		if ft, ok := fields[k]; ok {
			c.check(m[k], ft)
		} else if !c.full() {
			c.errs = append(c.errs, field.Forbidden(segPath(c.path), "unknown field"))
		}
		c.path = c.path[:len(c.path)-1]
	}
}

var fieldCache sync.Map // reflect.Type -> map[string]reflect.Type

// jsonFields maps a struct's JSON field names to their types as
// encoding/json sees them: embedded structs' fields are promoted, a field
// of the outer struct winning over a promoted one of the same name.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	out := map[string]reflect.Type{}
	var promoted []map[string]reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" && opts == "" {
			continue
		}
		ft := f.Type
		if name == "" && f.Anonymous {
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				promoted = append(promoted, jsonFields(ft))
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	for _, p := range promoted {
		for k, v := range p {
			if _, ok := out[k]; !ok {
				out[k] = v
			}
		}
	}
	fieldCache.Store(t, out)
	return out
}
