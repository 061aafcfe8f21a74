package wire

import (
	"testing"

	yaml3 "sigs.k8s.io/yaml/goyaml.v3"
)

// nodes is the number of nodes the YAML parser builds for data (an alias
// is one), the document node left out: what countValues estimates.
func nodes(t *testing.T, data string) int {
	t.Helper()
	var doc yaml3.Node
	if err := yaml3.Unmarshal([]byte(data), &doc); err != nil {
		t.Fatalf("%q: %v", data, err)
	}
	var count func(n *yaml3.Node) int
	count = func(n *yaml3.Node) int {
		c := 1
		for _, k := range n.Content {
			c += count(k)
		}
		return c
	}
	return count(&doc) - 1
}

// TestCountJSON: for JSON the count is the parser's node count exactly.
func TestCountJSON(t *testing.T) {
	for _, data := range []string{
		`{}`, `{"a":1}`, `{"a":[]}`, `{"a":[1,2,3]}`, `{ "a" : [ ] , "b" : { } }`,
		`{"a":{"b":{"c":[[],[1],{"d":null}]}}}`, `{"a,b:[{":"\"]},:"}`, `{"a":"\\\\"}`,
	} {
		n, ok := countJSON([]byte(data), 1000)
		// Counting the first item of an empty list, or a comma inside a
		// string, makes this fail.
		if want := nodes(t, data); !ok || n != want {
			t.Errorf("%s: counted %d, the parser builds %d", data, n, want)
		}
	}
	if n, ok := countJSON([]byte(`{"a":[1,2,3]}`), 5); ok || n != 6 {
		t.Errorf("limit 5: %d, %v; want 6, false", n, ok)
	}
}

// TestCountYAML: the YAML estimate is at least half the parser's nodes,
// less one, whatever the style, so that what passes the count costs at
// most 2*MaxValues+2 nodes to parse; and it stays near the real count for
// ordinary documents.
func TestCountYAML(t *testing.T) {
	for _, tc := range []struct {
		data     string
		estimate int
	}{
		{"a: b\n", 2},
		{"a:\n  b:\n    c: d\n", 4},
		{"a:\nb:\nc:\n", 4},
		{"- - - - x\n", 5},
		{"a: [x, y, z]\n", 5},
		{"a: [x: 1, y: 2]\n", 6},
		{"a: {x, y, z}\n", 5},
		{"a: [[[[]]]]\n", 6},
		{"a: &x [p, q]\nb: [*x, *x, *x]\n", 8},
		{"? a\n: b\n", 3},
		{`a: {"x":1,"y":2}` + "\n", 6},
		{"a: 'it''s: a, b - c'\n", 5}, // indicators inside quotes count too
		{"a: |\n  x: y\n  - z\n", 4},
		{"a: http://h:80/x-y\n", 2},
	} {
		n, ok := countYAML([]byte(tc.data), 1000)
		// Dropping the weight of a key's colon, or counting a dash that
		// starts a word, makes this fail.
		if !ok || n != tc.estimate {
			t.Errorf("%q: estimate %d, want %d", tc.data, n, tc.estimate)
		}
		// Not counting a kind of indicator (the dash of a list item, the
		// brace of a flow mapping) makes this fail.
		if got := nodes(t, tc.data); got > 2*n+2 {
			t.Errorf("%q: the parser builds %d nodes, more than twice the estimate %d plus two", tc.data, got, n)
		}
	}
}
