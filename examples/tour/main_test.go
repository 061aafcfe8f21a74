package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestTourRunsEveryChapter runs the whole tour twice: every chapter must succeed,
// print something, and print the same thing both times (the cores are
// deterministic and the fake world is seeded).
func TestTourRunsEveryChapter(t *testing.T) {
	if len(chapters) == 0 {
		t.Fatal("the tour has no chapters")
	}
	var first, second bytes.Buffer
	if err := tour(&first); err != nil {
		t.Fatalf("tour: %v\n%s", err, first.String())
	}
	if err := tour(&second); err != nil {
		t.Fatalf("second tour: %v", err)
	}
	if first.String() != second.String() {
		t.Errorf("tour output differs between two runs:\n--- first\n%s\n--- second\n%s", first.String(), second.String())
	}
	for _, c := range chapters {
		if !strings.Contains(first.String(), c.title) {
			t.Errorf("chapter %q missing from the output", c.title)
		}
	}
}
