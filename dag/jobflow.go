package dag

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/plancore/plancore"
)

// JobFlow API identity: the group/version and kind DecodeJobFlow accepts
// and EncodeJobFlow writes.
const (
	JobFlowAPIVersion = "flow.volcano.sh/v1alpha1"
	JobFlowKind       = "JobFlow"
)

// jobFlowObject is a JobFlow object on the wire.
type jobFlowObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              Spec   `json:"spec,omitempty"`
	Status            Status `json:"status,omitempty"`
}

// DecodeJobFlow reads one whole JobFlow object, YAML or JSON, into a
// Workflow: its name, namespace and uid, its spec and its status. It is
// strict where encoding/json is lenient: a field the types do not declare,
// or one spelled in another case, is refused with its path
// (spec.flows[0].dependsOn.target), as is an apiVersion or kind other than
// JobFlow's (either may be absent). The error is a *plancore.InvalidError
// wrapping ErrInvalidInput listing every unknown field. A flow's patch is
// kept compact, so decoding what EncodeJobFlow wrote gives the same
// Workflow.
func DecodeJobFlow(data []byte) (Workflow, error) {
	js, err := yaml.ToJSON(data)
	if err != nil {
		return Workflow{}, plancore.Invalid(ErrInvalidInput, field.ErrorList{field.Invalid(nil, nil, err.Error())})
	}
	var tree any
	if err := json.Unmarshal(js, &tree); err != nil {
		return Workflow{}, plancore.Invalid(ErrInvalidInput, field.ErrorList{field.Invalid(nil, nil, err.Error())})
	}
	if _, ok := tree.(map[string]any); !ok {
		return Workflow{}, plancore.Invalid(ErrInvalidInput, field.ErrorList{field.Invalid(nil, nil, "a JobFlow is an object")})
	}
	var errs field.ErrorList
	unknownFields(tree, reflect.TypeFor[jobFlowObject](), nil, &errs)
	var obj jobFlowObject
	if err := json.Unmarshal(js, &obj); err != nil {
		var te *json.UnmarshalTypeError
		var path *field.Path
		if errors.As(err, &te) && te.Field != "" {
			path = field.NewPath(te.Field)
		}
		errs = append(errs, field.Invalid(path, nil, err.Error()))
	}
	if v := obj.APIVersion; v != "" && v != JobFlowAPIVersion {
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), v, []string{JobFlowAPIVersion}))
	}
	if k := obj.Kind; k != "" && k != JobFlowKind {
		errs = append(errs, field.NotSupported(field.NewPath("kind"), k, []string{JobFlowKind}))
	}
	if len(errs) > 0 {
		return Workflow{}, plancore.Invalid(ErrInvalidInput, errs)
	}
	compactPatches(obj.Spec.Flows)
	compactPatches(obj.Spec.Finally)
	return Workflow{Name: obj.Name, Namespace: obj.Namespace, UID: obj.UID, Spec: obj.Spec, Status: obj.Status}, nil
}

// EncodeJobFlow writes a Workflow as a JobFlow object in JSON.
func EncodeJobFlow(wf Workflow) ([]byte, error) {
	return json.Marshal(jobFlowObject{
		TypeMeta:   metav1.TypeMeta{APIVersion: JobFlowAPIVersion, Kind: JobFlowKind},
		ObjectMeta: metav1.ObjectMeta{Name: wf.Name, Namespace: wf.Namespace, UID: wf.UID},
		Spec:       wf.Spec,
		Status:     wf.Status,
	})
}

func compactPatches(fs []Flow) {
	for i := range fs {
		if p := fs[i].Patch; len(p) > 0 {
			var b bytes.Buffer
			if json.Compact(&b, p) == nil {
				fs[i].Patch = b.Bytes()
			}
		}
	}
}

var (
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
)

// unknownFields walks a decoded JSON tree beside the Go type it decodes
// into and reports every object key the type does not declare, with its
// path. Types that decode themselves (metav1.Time, json.RawMessage) are
// not entered.
// thisPackage is dag's import path, read from one of its types.
var thisPackage = reflect.TypeFor[Backoff]().PkgPath()

func unknownFields(v any, t reflect.Type, path *field.Path, errs *field.ErrorList) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	// A type that decodes itself is opaque, except this package's own spec
	// types, which decode only to write durations as strings and keep their
	// json-tagged fields, so their keys are still checked here.
	if t == rawMessageType || (reflect.PointerTo(t).Implements(unmarshalerType) && t.PkgPath() != thisPackage) {
		return
	}
	switch x := v.(type) {
	case map[string]any:
		switch t.Kind() {
		case reflect.Map:
			for _, k := range slices.Sorted(mapsKeys(x)) {
				unknownFields(x[k], t.Elem(), path.Key(k), errs)
			}
		case reflect.Struct:
			fields := jsonFields(t)
			for _, k := range slices.Sorted(mapsKeys(x)) {
				ft, ok := fields[k]
				if !ok {
					*errs = append(*errs, field.Forbidden(childPath(path, k), "unknown field"))
					continue
				}
				unknownFields(x[k], ft, childPath(path, k), errs)
			}
		}
	case []any:
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			for i, e := range x {
				unknownFields(e, t.Elem(), path.Index(i), errs)
			}
		}
	}
}

func childPath(p *field.Path, k string) *field.Path {
	if p == nil {
		return field.NewPath(k)
	}
	return p.Child(k)
}

func mapsKeys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// jsonFields maps a struct's JSON field names to their types, entering
// embedded and inline fields as encoding/json does.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" && opts == "" {
			continue
		}
		ft := f.Type
		if name == "" && (f.Anonymous || strings.Contains(opts, "inline")) {
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range jsonFields(ft) {
					if _, ok := out[k]; !ok {
						out[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = ft
	}
	return out
}
