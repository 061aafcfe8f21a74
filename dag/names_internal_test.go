package dag

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
	"pgregory.net/rapid"
)

// TestPropNameRulesMatchApimachinery holds the byte scans equal to
// apimachinery's rules on names drawn near their edges (lengths around 63,
// every character class at both ends).
// Breaking it: letting isDNS1123Label accept a trailing '-' fails it
// within a few hundred checks.
func TestPropNameRulesMatchApimachinery(t *testing.T) {
	chars := rapid.SampledFrom([]byte("az09AZ-_./ \x00é"))
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.SampledFrom([]int{0, 1, 2, 3, 62, 63, 64}).Draw(t, "len")
		b := make([]byte, n)
		fill := chars.Draw(t, "fill")
		if rapid.Bool().Draw(t, "plain") {
			fill = 'a'
		}
		for i := range b {
			b[i] = fill
		}
		for range rapid.IntRange(0, 3).Draw(t, "edits") {
			if n > 0 {
				b[rapid.IntRange(0, n-1).Draw(t, "at")] = chars.Draw(t, "c")
			}
		}
		s := string(b)
		if got, want := isDNS1123Label(s), len(validation.IsDNS1123Label(s)) == 0; got != want {
			t.Fatalf("isDNS1123Label(%q) = %v, apimachinery %v", s, got, want)
		}
		if got, want := isLabelValue(s), len(validation.IsValidLabelValue(s)) == 0; got != want {
			t.Fatalf("isLabelValue(%q) = %v, apimachinery %v", s, got, want)
		}
	})
}
