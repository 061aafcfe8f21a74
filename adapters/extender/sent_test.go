package extender_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/plancore/plancore/adapters/extender"
	"github.com/plancore/plancore/adapters/extender/extendertest"
	"github.com/plancore/plancore/gpu"
)

// TestPropSentReuse: an extender that has served earlier bodies of whole
// Nodes answers each Filter and Prioritize exactly as a fresh extender
// does, whatever it saw before: the same names with other devices, other
// orders, a name sent twice, objects shorter than the reuse key, and long
// names whose objects share their first 128 bytes. Reusing an object on
// its first bytes alone (sentIndex.at without the whole comparison) makes
// it fail, as does taking a known object where only its start matches.
func TestPropSentReuse(t *testing.T) {
	long := strings.Repeat("n", 140)
	var pool [][]byte // whole Node objects as kube-scheduler writes them
	for _, name := range []string{"a", "b", long + "1", long + "2"} {
		for _, v := range []struct{ cards, gib int }{{8, 80}, {2, 80}, {8, 4}} {
			b, err := json.Marshal(templateNode(t, name, extendertest.NVIDIA(name, v.cards, int32(v.gib)*gib)))
			if err != nil {
				t.Fatal(err)
			}
			pool = append(pool, b)
		}
	}
	pool = append(pool, []byte(`{"metadata":{"name":"s"}}`)) // shorter than the key: unregistered
	fresh := func() http.Handler {
		ext, err := extender.New(extender.Config{Client: &memCluster{}, Bind: &gpu.Binder{Exec: noPods{}, Waiter: clockWait{}}})
		if err != nil {
			t.Fatal(err)
		}
		return ext.Handler()
	}
	rapid.Check(t, func(t *rapid.T) {
		warm := fresh()
		for range rapid.IntRange(1, 5).Draw(t, "calls") {
			idx := rapid.SliceOfN(rapid.IntRange(0, len(pool)-1), 0, 6).Draw(t, "nodes")
			sep := rapid.SampledFrom([]string{",", " , ", ",\n"}).Draw(t, "sep")
			path := rapid.SampledFrom([]string{"/filter", "/prioritize"}).Draw(t, "path")
			pod, err := json.Marshal(gpuPod("p", rapid.SampledFrom([]int{8000, 40000}).Draw(t, "mem")))
			if err != nil {
				t.Fatal(err)
			}
			var body bytes.Buffer
			fmt.Fprintf(&body, `{"Pod":%s,"Nodes":{"items":[`, pod)
			for i, k := range idx {
				if i > 0 {
					body.WriteString(sep)
				}
				body.Write(pool[k])
			}
			body.WriteString("]}}")
			got, want := serve(warm, path, body.Bytes()), serve(fresh(), path, body.Bytes())
			if got != want {
				t.Fatalf("%s over %v: answered\n%.2000s\nwhere a fresh extender answers\n%.2000s", path, idx, got, want)
			}
		}
	})
}

// serve is the status and body h answers a POST of body to path.
func serve(h http.Handler, path string, body []byte) string {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
	return fmt.Sprint(rec.Code, " ", rec.Body.String())
}
