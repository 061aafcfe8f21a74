package patch_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/plancore/plancore/dag/patch"
)

// canon decodes JSON for comparison, numbers as text.
func canon(t interface{ Fatalf(string, ...any) }, b []byte) any {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("invalid JSON %s: %v", b, err)
	}
	return v
}

func TestMerge(t *testing.T) {
	pod := `{"spec":{"containers":[{"name":"main","image":"app:1","command":["run"],"env":[{"name":"A","value":"1"},{"name":"B","value":"2"}]},
		{"name":"side","image":"log:1"}],"tolerations":[{"key":"gpu","operator":"Exists"},{"key":"spot","value":"yes"}],"nodeSelector":{"zone":"a","disk":"ssd"}}}`
	for _, tc := range []struct {
		name, template, patch, want string
		rules                       patch.Rules
	}{
		{"a scalar replaces", `{"a":1,"b":"x"}`, `{"b":"y"}`, `{"a":1,"b":"y"}`, patch.Rules{}},
		{"null removes", `{"a":1,"b":{"c":2}}`, `{"b":null,"z":null}`, `{"a":1}`, patch.Rules{}},
		{"objects merge field by field", `{"m":{"a":1,"b":{"c":2,"d":3}}}`, `{"m":{"b":{"d":4,"e":5}}}`, `{"m":{"a":1,"b":{"c":2,"d":4,"e":5}}}`, patch.Rules{}},
		{"a new object drops its nulls", `{}`, `{"m":{"a":null,"b":{"c":null,"d":1}}}`, `{"m":{"b":{"d":1}}}`, patch.Rules{}},
		{"a value of another type replaces", `{"a":{"b":1},"c":[1],"d":"s"}`, `{"a":"x","c":{"k":null,"v":1},"d":[1,2]}`, `{"a":"x","c":{"v":1},"d":[1,2]}`, patch.Rules{}},
		{"containers merge by name, env inside too, command replaced whole", pod,
			`{"spec":{"containers":[{"name":"main","command":["run","--fast"],"env":[{"name":"B","value":"3"},{"name":"C","value":"4"}]},{"name":"new","image":"x:1"}]}}`,
			`{"spec":{"containers":[{"name":"main","image":"app:1","command":["run","--fast"],"env":[{"name":"A","value":"1"},{"name":"B","value":"3"},{"name":"C","value":"4"}]},
			{"name":"side","image":"log:1"},{"name":"new","image":"x:1"}],"tolerations":[{"key":"gpu","operator":"Exists"},{"key":"spot","value":"yes"}],"nodeSelector":{"zone":"a","disk":"ssd"}}}`, patch.Rules{}},
		// Keying tolerations by key, operator and effect together (the old
		// way) makes the next two fail: a patch of a key was appended as a
		// second toleration of that key, matching every effect.
		{"tolerations merge by key; null removes a field of an item", pod,
			`{"spec":{"tolerations":[{"key":"spot","value":null,"tolerationSeconds":5},{"key":"spot","effect":"NoSchedule"},{"operator":"Exists"}],"nodeSelector":{"disk":null}}}`,
			`{"spec":{"containers":[{"name":"main","image":"app:1","command":["run"],"env":[{"name":"A","value":"1"},{"name":"B","value":"2"}]},{"name":"side","image":"log:1"}],
			"tolerations":[{"key":"gpu","operator":"Exists"},{"key":"spot","tolerationSeconds":5,"effect":"NoSchedule"},{"operator":"Exists"}],"nodeSelector":{"zone":"a"}}}`, patch.Rules{}},
		{"a toleration's key is updated whatever its operator and effect",
			`{"tolerations":[{"key":"gpu","operator":"Equal","value":"a100","effect":"NoSchedule"},{"key":"spot","operator":"Exists"}]}`,
			`{"tolerations":[{"key":"gpu","value":"h100"}]}`,
			`{"tolerations":[{"key":"gpu","operator":"Equal","value":"h100","effect":"NoSchedule"},{"key":"spot","operator":"Exists"}]}`, patch.Rules{}},
		// Counting an empty key as a key (dropping EmptyIsMissing) makes
		// this fail.
		{"tolerations without a key (or an empty one) merge by operator and effect",
			`{"tolerations":[{"operator":"Exists","effect":"NoExecute"},{"key":"gpu","operator":"Exists"}]}`,
			`{"tolerations":[{"key":"","operator":"Exists","effect":"NoExecute","tolerationSeconds":60},{"operator":"Exists"}]}`,
			`{"tolerations":[{"key":"","operator":"Exists","effect":"NoExecute","tolerationSeconds":60},{"key":"gpu","operator":"Exists"},{"operator":"Exists"}]}`, patch.Rules{}},
		{"vcjob tasks by name, down to containers and volume mounts",
			`{"spec":{"minAvailable":3,"tasks":[{"name":"ps","replicas":1,"template":{"spec":{"containers":[{"name":"c","volumeMounts":[{"name":"data","mountPath":"/d"}]}]}}},{"name":"worker","replicas":2}]}}`,
			`{"spec":{"tasks":[{"name":"worker","replicas":8},{"name":"ps","template":{"spec":{"containers":[{"name":"c","volumeMounts":[{"mountPath":"/d","readOnly":true},{"name":"cache","mountPath":"/c"}]}],"volumes":[{"name":"cache","emptyDir":{}}]}}}]}}`,
			`{"spec":{"minAvailable":3,"tasks":[{"name":"ps","replicas":1,"template":{"spec":{"containers":[{"name":"c","volumeMounts":[{"name":"data","mountPath":"/d","readOnly":true},{"name":"cache","mountPath":"/c"}]}],
			"volumes":[{"name":"cache","emptyDir":{}}]}}},{"name":"worker","replicas":8}]}}`, patch.Rules{}},
		{"a keyed list over a non-list builds the list", `{"env":"x","initContainers":null}`, `{"env":[{"name":"A","x":null}],"initContainers":[{"name":"i"}]}`,
			`{"env":[{"name":"A"}],"initContainers":[{"name":"i"}]}`, patch.Rules{}},
		{"a duplicate patch key merges into the item it appended", `{"env":[]}`, `{"env":[{"name":"A","value":"1"},{"name":"A","x":"2"}]}`, `{"env":[{"name":"A","value":"1","x":"2"}]}`, patch.Rules{}},
		{"an unkeyed list of objects is replaced, nulls and all", `{"envFrom":[{"prefix":"A"}]}`, `{"envFrom":[{"prefix":"B","secretRef":null}]}`, `{"envFrom":[{"prefix":"B","secretRef":null}]}`, patch.Rules{}},
		{"a custom table keys by a number", `{"ports":[{"containerPort":80,"name":"http"}],"containers":[{"name":"a","x":1}]}`,
			`{"ports":[{"containerPort":80,"protocol":"TCP"},{"containerPort":443}],"containers":[{"name":"b"}]}`,
			`{"ports":[{"containerPort":80,"name":"http","protocol":"TCP"},{"containerPort":443}],"containers":[{"name":"b"}]}`, patch.Rules{Keys: map[string][]patch.Key{"ports": {{Fields: []string{"containerPort"}}}}}},
		{"numbers keep their text", `{"a":1.0000000000000001,"b":12345678901234567890}`, `{"c":1e400}`, `{"a":1.0000000000000001,"b":12345678901234567890,"c":1e400}`, patch.Rules{}},
		{"an empty patch is the identity", `{"b":[3,1],"a":{"z":null}}`, ``, `{"a":{"z":null},"b":[3,1]}`, patch.Rules{}},
		{"an empty object patch is the identity", `{"b":[3,1]}`, ` {} `, `{"b":[3,1]}`, patch.Rules{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, p := []byte(tc.template), []byte(tc.patch)
			got, err := patch.Merger{Rules: tc.rules}.Merge(tmpl, p)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(canon(t, []byte(tc.want)), canon(t, got)); d != "" {
				t.Errorf("merged (-want +got):\n%s\n%s", d, got)
			}
			if string(tmpl) != tc.template || string(p) != tc.patch {
				t.Error("an input was modified")
			}
			if tc.rules.Keys == nil {
				again, err := patch.Merge(tmpl, p)
				if err != nil || !bytes.Equal(again, got) {
					t.Errorf("patch.Merge = %s, %v; want the zero Merger's %s", again, err, got)
				}
			}
		})
	}
}

func TestMergeErrors(t *testing.T) {
	for _, tc := range []struct {
		name, template, patch string
		want                  error
		msg                   string
	}{
		{"template is an array", `[1]`, `{}`, patch.ErrNotObject, "template is an array"},
		{"template is not JSON", `{`, `{}`, patch.ErrNotObject, "template"},
		{"patch is null", `{}`, `null`, patch.ErrNotObject, "patch is null"},
		{"patch has trailing data", `{}`, `{} {}`, patch.ErrNotObject, "data after the object"},
		{"patch has trailing garbage", `{}`, `{}]`, patch.ErrNotObject, "data after the object"},
		{"keyed item without its key", `{}`, `{"spec":{"containers":[{"name":"a"},{"image":"x"}]}}`, patch.ErrMissingKey, `spec.containers[1] has no "name"`},
		{"keyed item with a null key", `{}`, `{"volumeMounts":[{"name":"a","mountPath":null}]}`, patch.ErrMissingKey, `volumeMounts[0] has no "mountPath"`},
		{"keyed item that is no object", `{}`, `{"tasks":[{"name":"a","template":{"spec":{"env":["X=1"]}}}]}`, patch.ErrMissingKey, `tasks[0].template.spec.env[0] is a string`},
	} {
		_, err := patch.Merge([]byte(tc.template), []byte(tc.patch))
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: err = %v, want %v containing %q", tc.name, err, tc.want, tc.msg)
		}
	}
}

// jsonGen draws small JSON objects over a vocabulary that includes keyed
// list names, so the properties reach every rule. With uniqueKeys, keyed
// lists hold distinct keys, as an API server keeps them.
func jsonGen(depth int, uniqueKeys bool) *rapid.Generator[any] {
	fields := []string{"a", "b", "env", "containers", "tolerations", "command"}
	return rapid.Custom(func(t *rapid.T) any {
		var value func(name string, d int) any
		object := func(d int) map[string]any {
			o := map[string]any{}
			for _, f := range rapid.SliceOfNDistinct(rapid.SampledFrom(fields), 0, 3, rapid.ID[string]).Draw(t, "fields") {
				o[f] = value(f, d)
			}
			return o
		}
		value = func(name string, d int) any {
			keyField := map[string]string{"env": "name", "containers": "name", "tolerations": "key"}[name]
			if keyField != "" && d > 0 && rapid.Bool().Draw(t, "keyed") {
				items := []any{}
				seen := map[string]bool{}
				for range rapid.IntRange(0, 3).Draw(t, "items") {
					k := rapid.SampledFrom([]string{"x", "y", "z"}).Draw(t, "key")
					if uniqueKeys && seen[k] {
						continue
					}
					seen[k] = true
					item := object(d - 1)
					item[keyField] = k
					items = append(items, item)
				}
				return items
			}
			switch rapid.IntRange(0, 4).Draw(t, "kind") {
			case 0:
				return nil
			case 1:
				return json.Number(fmt.Sprint(rapid.IntRange(0, 9).Draw(t, "n")))
			case 2:
				return rapid.SampledFrom([]string{"p", "q"}).Draw(t, "s")
			case 3:
				if d > 0 {
					return object(d - 1)
				}
			}
			if keyField != "" && uniqueKeys {
				return "s" // a patch's keyed list is always keyed
			}
			return []any{json.Number("1"), "x"}
		}
		return object(depth)
	})
}

// TestMergeProperties checks on random documents that merging is
// idempotent (a patch applied twice is applied once), that an empty patch
// is the identity, that every top-level patch field ends where the rules
// put it, and that neither input changes.
func TestMergeProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tb, _ := json.Marshal(jsonGen(3, true).Draw(t, "template"))
		pv := jsonGen(3, true).Draw(t, "patch").(map[string]any)
		pb, _ := json.Marshal(pv)
		tcopy, pcopy := bytes.Clone(tb), bytes.Clone(pb)
		once, err := patch.Merge(tb, pb)
		if err != nil {
			t.Fatalf("Merge(%s, %s): %v", tb, pb, err)
		}
		if !bytes.Equal(tb, tcopy) || !bytes.Equal(pb, pcopy) {
			t.Fatal("an input was modified")
		}
		twice, err := patch.Merge(once, pb)
		if err != nil || !bytes.Equal(once, twice) {
			t.Fatalf("not idempotent: %s then %s (%v), patch %s", once, twice, err, pb)
		}
		if same, err := patch.Merge(tb, []byte(`{}`)); err != nil || !cmp.Equal(canon(t, same), canon(t, tb)) {
			t.Fatalf("{} changed %s into %s (%v)", tb, same, err)
		}
		out := canon(t, once).(map[string]any)
		tmpl := canon(t, tb).(map[string]any)
		for k, v := range pv {
			got, present := out[k]
			switch v := v.(type) {
			case nil:
				if present {
					t.Fatalf("%s: null did not remove it: %s", k, once)
				}
			case []any:
				if k == "a" || k == "b" || k == "command" {
					if !cmp.Equal(got, v) {
						t.Fatalf("%s: unkeyed list not replaced whole: %s", k, once)
					}
					continue
				}
				// Keyed: every patch key is present once, template items keep
				// their order ahead of new ones.
				gl, _ := got.([]any)
				key := map[string]string{"env": "name", "containers": "name", "tolerations": "key"}[k]
				ids := map[any]int{}
				for _, it := range gl {
					if o, ok := it.(map[string]any); ok { // a template may hold anything
						ids[o[key]]++
					}
				}
				for _, it := range v {
					if id := it.(map[string]any)[key]; ids[id] != 1 {
						t.Fatalf("%s: key %v appears %d times in %s", k, id, ids[id], once)
					}
				}
				if tl, ok := tmpl[k].([]any); ok && len(gl) < len(tl) {
					t.Fatalf("%s: template items lost: %s", k, once)
				}
			case map[string]any:
				if _, ok := got.(map[string]any); !ok {
					t.Fatalf("%s: object patch gave %v", k, got)
				}
			default:
				if !cmp.Equal(got, v) {
					t.Fatalf("%s: scalar not replaced: %v, want %v", k, got, v)
				}
			}
		}
	})
}

// FuzzMerge checks that Merge never panics and that what it returns is one
// JSON object that an empty patch leaves alone.
func FuzzMerge(f *testing.F) {
	f.Add([]byte(`{"spec":{"containers":[{"name":"a","env":[{"name":"X"}]}]}}`), []byte(`{"spec":{"containers":[{"name":"a","env":[{"name":"Y","value":"1"}]},{"name":"b"}]}}`))
	f.Add([]byte(`{"tolerations":[{"key":"k"}]}`), []byte(`{"tolerations":[{"key":"k","value":null}],"x":null}`))
	f.Add([]byte(`{}`), []byte(`{"env":[{}]}`))
	f.Fuzz(func(t *testing.T, tmpl, p []byte) {
		out, err := patch.Merge(tmpl, p)
		if err != nil {
			if !errors.Is(err, patch.ErrNotObject) && !errors.Is(err, patch.ErrMissingKey) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		again, err := patch.Merge(out, nil)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("output %s is not a canonical object: %s, %v", out, again, err)
		}
	})
}
