package patch_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/plancore/plancore/dag/patch"
)

// oneOfDoc draws an object held by field ctx, with at most most members
// of each of its one-of groups, and nested volumes, env, containers, probes
// and valueFrom objects down to depth.
func oneOfDoc(t *rapid.T, rules patch.Rules, ctx string, depth, most int, nulls bool) map[string]any {
	o := map[string]any{}
	for _, g := range rules.OneOf[ctx] {
		if len(g) > 4 {
			g = g[:4]
		}
		n := rapid.IntRange(0, most).Draw(t, "members")
		for _, f := range rapid.SliceOfNDistinct(rapid.SampledFrom(g), n, n, rapid.ID[string]).Draw(t, "member") {
			switch rapid.IntRange(0, 3).Draw(t, "memberValue") {
			case 0:
				o[f] = "s"
			case 1:
				if nulls {
					o[f] = nil
					continue
				}
				fallthrough
			default:
				o[f] = map[string]any{"x": json.Number(fmt.Sprint(rapid.IntRange(0, 3).Draw(t, "x")))}
			}
		}
	}
	if depth == 0 {
		return o
	}
	for _, f := range rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"volumes", "env", "containers", "livenessProbe", "valueFrom", "preStop"}), 0, 3, rapid.ID[string]).Draw(t, "children") {
		if groupTaken(rules, o, ctx, f) {
			continue
		}
		if _, keyed := rules.Keys[f]; !keyed {
			o[f] = oneOfDoc(t, rules, f, depth-1, most, nulls)
			continue
		}
		var items []any
		seen := map[string]bool{}
		for range rapid.IntRange(0, 3).Draw(t, "items") {
			name := rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "name")
			if seen[name] {
				continue
			}
			seen[name] = true
			item := oneOfDoc(t, rules, f, depth-1, most, nulls)
			item["name"] = name
			items = append(items, item)
		}
		o[f] = items
	}
	return o
}

// groupTaken reports whether f is in a one-of group of ctx of which o
// already holds a member.
func groupTaken(rules patch.Rules, o map[string]any, ctx, f string) bool {
	for _, g := range rules.OneOf[ctx] {
		if slices.Contains(g, f) && slices.ContainsFunc(g, func(m string) bool { _, ok := o[m]; return ok }) {
			return true
		}
	}
	return false
}

// oneOfViolation returns the path of an object holding two members of one
// of its groups, or "".
func oneOfViolation(rules patch.Rules, v any, ctx, at string) string {
	switch v := v.(type) {
	case []any:
		for i, it := range v {
			if p := oneOfViolation(rules, it, ctx, fmt.Sprintf("%s[%d]", at, i)); p != "" {
				return p
			}
		}
	case map[string]any:
		for _, g := range rules.OneOf[ctx] {
			n := 0
			for _, f := range g {
				if x, ok := v[f]; ok && x != nil {
					n++
				}
			}
			if n > 1 {
				return at
			}
		}
		for k, x := range v {
			if p := oneOfViolation(rules, x, k, at+"."+k); p != "" {
				return p
			}
		}
	}
	return ""
}

// TestMergeNeverTwoOneOfMembers: a template with at most one member of each
// one-of group stays so after any patch, and a patch setting two members is
// refused with ErrOneOf. Fails if oneOf stops deleting the other members.
func TestMergeNeverTwoOneOfMembers(t *testing.T) {
	rules := patch.DefaultRules()
	rapid.Check(t, func(t *rapid.T) {
		tmpl := oneOfDoc(t, rules, "", 3, 1, false)
		p := oneOfDoc(t, rules, "", 3, 2, true)
		tb, _ := json.Marshal(tmpl)
		pb, _ := json.Marshal(p)
		out, err := patch.Merge(tb, pb)
		if twice := oneOfViolation(rules, p, "", ""); twice != "" {
			if !errors.Is(err, patch.ErrOneOf) {
				t.Fatalf("patch %s sets two members at %q, but Merge gave %s, %v", pb, twice, out, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Merge(%s, %s): %v", tb, pb, err)
		}
		if at := oneOfViolation(rules, canon(t, out), "", ""); at != "" {
			t.Fatalf("two members of a one-of group at %q in %s\ntemplate %s\npatch %s", at, out, tb, pb)
		}
	})
}
