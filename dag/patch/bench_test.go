package patch_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/plancore/plancore/dag/patch"
)

// envDoc returns {"env":[...]} with n variables named from first on.
func envDoc(first, n int, value string) []byte {
	items := make([]map[string]string, n)
	for i := range items {
		items[i] = map[string]string{"name": fmt.Sprintf("V%d", first+i), "value": value}
	}
	b, _ := json.Marshal(map[string]any{"env": items})
	return b
}

// BenchmarkMergeKeyedList40000 merges a keyed list of 40,000 template
// items with a patch of 40,000 items, half of them matching (from the
// template's second half on) and half new: 60,000 items come out. A
// pairwise match is quadratic here.
func BenchmarkMergeKeyedList40000(b *testing.B) {
	tmpl, p := envDoc(0, 40000, "old"), envDoc(20000, 40000, "new")
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := patch.Merge(tmpl, p); err != nil {
			b.Fatal(err)
		}
	}
}

// nestedPatch returns a patch about 1 MB long, nested depth objects deep
// (within encoding/json's own limit of 10,000), each level padded.
func nestedPatch(depth, size int) []byte {
	pad := strings.Repeat("x", size/depth)
	var b strings.Builder
	for range depth {
		b.WriteString(`{"pad":"` + pad + `","spec":`)
	}
	b.WriteString(`{"env":[{"name":"A","value":"1"}]}`)
	b.WriteString(strings.Repeat("}", depth))
	return []byte(b.String())
}

// BenchmarkMergeNested1MB merges a 1 MB patch nested 9,000 deep into an
// empty template. B/op bounds the peak heap from above.
func BenchmarkMergeNested1MB(b *testing.B) {
	p := nestedPatch(9000, 1<<20)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := patch.Merge([]byte(`{}`), p); err != nil {
			b.Fatal(err)
		}
	}
}
