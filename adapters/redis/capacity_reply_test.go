package redis

import (
	"strconv"
	"strings"
	"testing"
)

// TestParseInts reads the reserve scripts' one-string replies, and refuses
// every other shape with an error naming the reply.
func TestParseInts(t *testing.T) {
	for _, tc := range []struct {
		reply string
		want  int
		ok    bool
	}{
		{"1 7 1795824000123 3 0", 5, true},
		{"3 18446744073709551 0 16 1795824000999", 5, true},
		{"1 7 1795824000123 3", 5, false},     // a value short
		{"1 7 1795824000123 3 0 0", 5, false}, // a value over
		{"1  7 1795824000123 3 0", 5, false},  // an empty field
		{"1 7 1.795824e12 3 0", 5, false},     // '%.14g' gone wrong
		{"", 1, false},
		{"OK", 1, false},
	} {
		got, err := parseInts(tc.reply, nil, tc.want)
		if (err == nil) != tc.ok {
			t.Errorf("parseInts(%q, %d) = %v, %v; want ok %v", tc.reply, tc.want, got, err, tc.ok)
			continue
		}
		if err != nil && !strings.Contains(err.Error(), strconv.Quote(tc.reply)) && !strings.Contains(err.Error(), "values") {
			t.Errorf("parseInts(%q): error %q names neither the reply nor the count", tc.reply, err)
		}
		if tc.ok && strings.Join(strings.Fields(tc.reply), " ") != joinInts(got) {
			t.Errorf("parseInts(%q) = %v", tc.reply, got)
		}
	}
}

// FuzzParseInts: any reply either parses into exactly want integers that
// print back as the reply, or is an error; never a panic, never a short
// result.
func FuzzParseInts(f *testing.F) {
	for _, s := range []string{"1 7 1795824000123 3 0", "0", "", " ", "1 -2", "9223372036854775808", "1\x002"} {
		f.Add(s, 5)
	}
	f.Fuzz(func(t *testing.T, reply string, want int) {
		got, err := parseInts(reply, nil, want)
		if err != nil {
			return
		}
		if len(got) != want {
			t.Fatalf("parseInts(%q, %d) = %d values", reply, want, len(got))
		}
		if joinInts(got) != reply {
			// Only canonical decimals print back; others (a leading '+'
			// or zeros) are still the numbers they spell.
			for i, f := range strings.Split(reply, " ") {
				if n, err := strconv.ParseInt(f, 10, 64); err != nil || n != got[i] {
					t.Fatalf("parseInts(%q) = %v: value %d is not %q", reply, got, i, f)
				}
			}
		}
	})
}

func joinInts(v []int64) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.FormatInt(n, 10)
	}
	return strings.Join(s, " ")
}
