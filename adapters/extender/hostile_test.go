package extender_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	configv1 "k8s.io/kube-scheduler/config/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/plancore/plancore"
	"github.com/plancore/plancore/adapters/extender"
	"github.com/plancore/plancore/adapters/extender/extendertest"
	"github.com/plancore/plancore/gpu"
)

// memExtender is an extender over an in-memory cluster of nodes nodes of 8
// NVIDIA cards each, with no pods.
func memExtender(tb testing.TB, nodes int) (*extender.Scheduler, []string) {
	tb.Helper()
	m, names := nvidiaCluster(tb, nodes)
	ext, err := extender.New(extender.Config{Client: m, Bind: &gpu.Binder{Exec: noPods{}, Waiter: clockWait{}}})
	if err != nil {
		tb.Fatal(err)
	}
	return ext, names
}

// nvidiaCluster is an in-memory cluster of nodes named node-0000, ...,
// each registering eight 80 GiB NVIDIA cards, with no pods.
func nvidiaCluster(tb testing.TB, nodes int) (*memCluster, []string) {
	tb.Helper()
	m := &memCluster{}
	var names []string
	for i := range nodes {
		name := fmt.Sprintf("node-%04d", i)
		names = append(names, name)
		annos, err := gpu.EncodeNode(gpu.Node{Name: name, Devices: extendertest.NVIDIA(name, 8, 80*gib)}, gpu.DefaultRegistry())
		if err != nil {
			tb.Fatal(err)
		}
		m.nodes = append(m.nodes, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annos, ResourceVersion: "1"}})
	}
	return m, names
}

// noPods is a Bind executor of a cluster without pods: every Bind fails at
// its first step, reading the pod.
type noPods struct{ gpu.BindExecutor }

func (noPods) GetPod(_ context.Context, p gpu.PodRef) (*corev1.Pod, error) {
	return nil, fmt.Errorf("pod %s/%s not found", p.Namespace, p.Name)
}
func (noPods) Event(context.Context, gpu.PodRef, string, string, string) error { return nil }
func (noPods) ForgetAssumed(context.Context, gpu.PodRef) error                 { return nil }

type clockWait struct{ gpu.Waiter }

func (clockWait) Now() time.Time { return time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC) }

const apiServerLimit = 3 << 20

// repeat writes item(i) separated by commas until b holds size bytes.
func repeat(b *bytes.Buffer, size int, item func(i int) string) {
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(item(i))
	}
}

// podWith is the GPU pod's JSON with raw spliced in after `"metadata":{` or
// `"spec":{`.
func podWith(where, raw string) string {
	pod, _ := json.Marshal(gpuPod("hostile", 8000))
	s := string(pod)
	i := strings.Index(s, `"`+where+`":{`) + len(where) + 4
	return s[:i] + raw + "," + s[i:]
}

func names(size int, name func(i int) string) string {
	var b bytes.Buffer
	b.WriteString(`"NodeNames":[`)
	repeat(&b, size, func(i int) string { return `"` + name(i) + `"` })
	b.WriteString("]")
	return b.String()
}

func filterArgs(pod, rest string) []byte { return []byte(`{"Pod":` + pod + `,` + rest + `}`) }

// hostileBodies are request bodies of about size bytes built to cost the
// extender the most per byte.
func hostileBodies(size int) map[string][]byte {
	sized := func(prefix string, item func(i int) string, suffix string) string {
		var b bytes.Buffer
		b.WriteString(prefix)
		repeat(&b, size-len(suffix)-1024, item)
		b.WriteString(suffix)
		return b.String()
	}
	plainPod := podWith("metadata", `"labels":{}`)
	few := names(0, nil)
	out := map[string][]byte{
		"unknown names": filterArgs(plainPod, names(size-1024, func(i int) string { return fmt.Sprintf("x-%011d", i) })),
		"known names":   filterArgs(plainPod, names(size-1024, func(i int) string { return fmt.Sprintf("node-%04d", i%1000) })),
		"empty containers": filterArgs(podWith("spec",
			sized(`"initContainers":[`, func(int) string { return "{}" }, "]")), few),
		"empty volumes": filterArgs(podWith("spec",
			sized(`"volumes":[`, func(int) string { return "{}" }, "]")), few),
		"annotation keys": filterArgs(podWith("metadata",
			sized(`"annotations":{`, func(i int) string { return fmt.Sprintf(`"%x":""`, i) }, "}")), few),
		"policy entries": filterArgs(podWith("metadata",
			sized(`"annotations":{"`+gpu.AnnoGPUPolicy+`":"`, func(int) string { return "x" }, `"}`)), few),
		"uuid entries": filterArgs(podWith("metadata",
			sized(`"annotations":{"`+gpu.AnnoUseGPUUUID+`":"`, func(int) string { return "x" }, `"}`)), few),
		"bad limits": filterArgs(podWith("spec",
			sized(`"initContainers":[`, func(int) string { return `{"resources":{"limits":{"nvidia.com/gpu":"-1"}}}` }, "]")), few),
		"resource names": filterArgs(podWith("spec",
			sized(`"initContainers":[{"resources":{"limits":{`, func(i int) string { return fmt.Sprintf(`"r%x":"1"`, i) }, "}}}]")), few),
		"nesting": []byte(strings.Repeat("[", size)),
		// Nodes sent whole (nodeCacheCapable false): more than MaxNodes
		// objects, one object over MaxNodeBytes, and as many objects as
		// fit, each of as many annotations as MaxNodeValues allows.
		"empty nodes": filterArgs(plainPod, sized(`"Nodes":{"items":[`, func(int) string { return "{}" }, "]}")),
		"node annotation keys": filterArgs(plainPod, sized(`"Nodes":{"items":[{"metadata":{"name":"n","annotations":{`,
			func(i int) string { return fmt.Sprintf(`"%x":""`, i) }, "}}}]}")),
		"nodes of annotation keys": filterArgs(plainPod, sized(`"Nodes":{"items":[`, func(i int) string {
			var b strings.Builder
			fmt.Fprintf(&b, `{"metadata":{"name":"n%d","annotations":{`, i)
			for k := range extender.DefaultMaxNodeValues/2 - 10 {
				if k > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `"%x":""`, k)
			}
			b.WriteString("}}}")
			return b.String()
		}, "]}")),
	}
	return out
}

// boundedBodies are the costliest bodies the default Limits let through:
// as many values as they allow, annotations as large as the API server
// stores, every node of the cluster named.
func boundedBodies(clusterNodes []string) map[string][]byte {
	values := extender.DefaultMaxPodValues - 200
	list := func(item string, n int) string { return strings.TrimSuffix(strings.Repeat(item+",", n), ",") }
	all := names(0, nil)
	if len(clusterNodes) > 0 {
		all = `"NodeNames":["` + strings.Join(clusterNodes, `","`) + `"]`
	}
	const annoBytes = 250 << 10
	return map[string][]byte{
		"empty containers":    filterArgs(podWith("spec", `"initContainers":[`+list("{}", values)+`]`), all),
		"null containers":     filterArgs(podWith("spec", `"initContainers":[`+list("null", values)+`]`), all),
		"empty volumes":       filterArgs(podWith("spec", `"volumes":[`+list("{}", values)+`]`), all),
		"empty env":           filterArgs(podWith("spec", `"initContainers":[{"env":[`+list("{}", values)+`]}]`), all),
		"bad limits":          filterArgs(podWith("spec", `"initContainers":[`+list(`{"resources":{"limits":{"nvidia.com/gpu":"-1"}}}`, values/7)+`]`), all),
		"policy annotation":   filterArgs(podWith("metadata", `"annotations":{"`+gpu.AnnoGPUPolicy+`":"`+list("x", annoBytes/2)+`"}`), all),
		"uuid annotation":     filterArgs(podWith("metadata", `"annotations":{"`+gpu.AnnoUseGPUUUID+`":"`+list("x", annoBytes/2)+`"}`), all),
		"weights annotation":  filterArgs(podWith("metadata", `"annotations":{"`+gpu.AnnoScoringWeights+`":"`+list("x", annoBytes/2)+`"}`), all),
		"model annotation":    filterArgs(podWith("metadata", `"annotations":{"`+gpu.AnnoUseGPUType+`":"`+list("x", annoBytes/2)+`"}`), all),
		"uuids at the bound":  filterArgs(podWith("metadata", `"annotations":{"`+gpu.AnnoUseGPUUUID+`":"`+list("GPU-0123456789abcdef", gpu.MaxUUIDEntries)+`"}`), all),
		"models at the bound": filterArgs(podWith("metadata", `"annotations":{"`+gpu.AnnoUseGPUType+`":"`+list("A100-SXM4-80GB-0123456789", gpu.MaxPolicyEntries)+`"}`), all),
	}
}

func bindBodies(size int) map[string][]byte {
	return map[string][]byte{
		"long pod name": []byte(`{"PodName":"` + strings.Repeat("a", size-64) + `","PodNamespace":"x","PodUID":"u","Node":"node-0001"}`),
		"long node":     []byte(`{"PodName":"p","PodNamespace":"x","PodUID":"u","Node":"` + strings.Repeat("a", size-64) + `"}`),
	}
}

type measured struct {
	d      time.Duration
	alloc  uint64
	status int
	reply  string
}

// measure serves one request in this goroutine and reports its time and the
// bytes it allocated (runtime.MemStats.TotalAlloc: deterministic for a
// given body, and an upper bound of the heap it grew by).
func measure(h http.Handler, path string, body []byte) measured {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
	d := time.Since(start)
	runtime.ReadMemStats(&after)
	return measured{d: d, alloc: after.TotalAlloc - before.TotalAlloc, status: rec.Code, reply: rec.Body.String()}
}

// Budgets of one hostile request: 1 s (several times that under the race
// detector, which slows decoding about tenfold) and 256 MB allocated.
const allocBudget = 256 << 20

func timeBudget() time.Duration {
	if raceEnabled {
		return 10 * time.Second
	}
	return time.Second
}

// refusal is the reason a reply refuses its request, or "" when it does not.
func refusal(m measured) string {
	if m.status != http.StatusOK {
		return m.reply
	}
	var res struct{ Error string }
	if strings.HasPrefix(m.reply, "{") && json.Unmarshal([]byte(m.reply), &res) == nil {
		return res.Error
	}
	return ""
}

// TestHostileBodies sends every endpoint bodies up to the API server's
// 3 MiB request limit built to cost the most per byte (names by the
// hundred thousand, a pod of a million empty containers or volumes, an
// annotation of a million policies, ...) and bodies beyond the Limits: each
// is handled within the time and allocation budgets, or refused with a
// reason naming why. Before the Limits, a pod of empty containers cost
// 2 GB and 7 s, a policy chain 5 GB, and 3 MiB of names 0.4 GB.
func TestHostileBodies(t *testing.T) {
	ext, clusterNodes := memExtender(t, 1000)
	h := ext.Handler()
	namesOver := extender.DefaultMaxNodes*256 + 3
	type tc struct {
		path, name string
		body       []byte
		refused    string // a word the refusal must hold, "" when it may be served
	}
	var cases []tc
	for _, path := range []string{"/filter", "/prioritize"} {
		for name, body := range hostileBodies(apiServerLimit) {
			cases = append(cases, tc{path: path, name: name, body: body})
		}
		for name, body := range boundedBodies(clusterNodes) {
			cases = append(cases, tc{path: path, name: "bounded " + name, body: body})
		}
		cases = append(cases,
			tc{path, "names over their bound", filterArgs(podWith("metadata", `"labels":{}`), names(namesOver, func(i int) string { return fmt.Sprintf("x-%0250d", i) })), "bytes"},
			tc{path, "names over the cluster", filterArgs(podWith("metadata", `"labels":{}`), names(1200*16, func(i int) string { return fmt.Sprintf("x-%011d", i) })), "candidate nodes"},
			tc{path, "more nodes than MaxNodes", hostileBodies(apiServerLimit)["empty nodes"], "candidate nodes"},
			tc{path, "a node over MaxNodeBytes", hostileBodies(apiServerLimit)["node annotation keys"], "bytes"},
			tc{path, "null containers", filterArgs(podWith("spec", `"initContainers":[`+strings.Repeat("null,", 600_000)+`null]`), names(0, nil)), "JSON values"},
		)
	}
	for name, body := range bindBodies(apiServerLimit) {
		cases = append(cases, tc{"/bind", name, body, "bytes"})
	}
	for _, c := range cases {
		t.Run(c.path+" "+c.name, func(t *testing.T) {
			m := measure(h, c.path, c.body)
			why := refusal(m)
			t.Logf("%d bytes: %v, %d MB allocated, status %d, refusal %.100q", len(c.body), m.d.Round(time.Millisecond), m.alloc>>20, m.status, why)
			if m.d > timeBudget() || m.alloc > allocBudget {
				t.Errorf("%v and %d MB, over the budgets of %v and %d MB", m.d, m.alloc>>20, timeBudget(), allocBudget>>20)
			}
			if c.refused != "" && !strings.Contains(why, c.refused) {
				t.Errorf("refusal %.200q, want one naming %q", why, c.refused)
			}
			if len(why) > 64<<10 {
				t.Errorf("a refusal of %d bytes", len(why))
			}
		})
	}
}

// TestHugeFilterWithoutLock: a Filter naming more nodes than the cluster
// has, and one far beyond the body bound (63 MB, 4 million names), are
// refused while the scheduler's mutex is held: they are decoded and checked
// before it is taken, and never wait for it. Fails when the check runs
// under the mutex (the request waits for the lock and never answers).
func TestHugeFilterWithoutLock(t *testing.T) {
	ext, _ := memExtender(t, 1000)
	h := ext.Handler()
	pod := podWith("metadata", `"labels":{}`)
	bodies := map[string][]byte{
		"4,000 names, 1,000 nodes": filterArgs(pod, names(4000*16, func(i int) string { return fmt.Sprintf("x-%011d", i) })),
		"4 million names, 63 MB":   filterArgs(pod, names(63_000_000, func(i int) string { return fmt.Sprintf("x-%011d", i) })),
	}
	release := extender.HoldLock(ext)
	defer release()
	for name, body := range bodies {
		for _, path := range []string{"/filter", "/prioritize"} {
			done := make(chan measured, 1)
			go func() { done <- measure(h, path, body) }()
			select {
			case m := <-done:
				t.Logf("%s %s: %v, %d MB allocated, %.100q", path, name, m.d.Round(time.Millisecond), m.alloc>>20, refusal(m))
				if refusal(m) == "" || m.d > timeBudget() || m.alloc > allocBudget {
					t.Errorf("%s %s: %v, %d MB allocated, answered %d %.200q; want refused within the budgets", path, name, m.d, m.alloc>>20, m.status, m.reply)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("%s %s: no answer while the scheduler's mutex is held", path, name)
			}
		}
	}
}

// TestDecodeTurns: with MaxConcurrentDecodes 1, a request arriving while
// another is being decoded waits for its turn; if its context ends first it
// is answered 503 naming why; when the turn comes it is served. Fails
// without the turns (the second request decodes at once).
func TestDecodeTurns(t *testing.T) {
	m := &memCluster{}
	ext, err := extender.New(extender.Config{Client: m, Bind: &gpu.Binder{Exec: noPods{}, Waiter: clockWait{}}, Limits: extender.Limits{MaxConcurrentDecodes: 1}})
	if err != nil {
		t.Fatal(err)
	}
	h := ext.Handler()
	serve := func(ctx context.Context, body io.Reader) <-chan *httptest.ResponseRecorder {
		out := make(chan *httptest.ResponseRecorder, 1)
		go func() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/bind", body).WithContext(ctx))
			out <- rec
		}()
		return out
	}
	bind := `{"PodName":"p","PodNamespace":"ns","PodUID":"u","Node":"n"}`
	// The first request holds the only turn while its body trickles in.
	pr, pw := io.Pipe()
	first := serve(context.Background(), pr)
	if _, err := pw.Write([]byte(bind[:10])); err != nil {
		t.Fatal(err)
	}
	// A second one waits, and is answered 503 when its context ends.
	ctx, cancel := context.WithCancel(context.Background())
	second := serve(ctx, strings.NewReader(bind))
	waitFor(t, func() bool { return extender.DecodeWaiters(ext) == 1 })
	cancel()
	if rec := <-second; rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "busy") {
		t.Fatalf("a request whose context ended waiting: %d %q, want 503 naming why", rec.Code, rec.Body.String())
	}
	// A third one waits, and is served once the first is done.
	third := serve(context.Background(), strings.NewReader(bind))
	waitFor(t, func() bool { return extender.DecodeWaiters(ext) == 1 })
	if _, err := pw.Write([]byte(bind[10:])); err != nil {
		t.Fatal(err)
	}
	_ = pw.Close()
	for _, c := range []<-chan *httptest.ResponseRecorder{first, third} {
		if rec := <-c; rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "not found") {
			t.Fatalf("answer %d %q, want the Bind's own error", rec.Code, rec.Body.String())
		}
	}
	if n := extender.DecodeWaiters(ext); n != 0 {
		t.Fatalf("%d still waiting", n)
	}
}

// TestLimits: zero fields are the documented defaults, and every invalid
// field is named at once.
func TestLimits(t *testing.T) {
	// The candidates' term is the larger of MaxNodes names and MaxNodes
	// Node objects (with their commas and the list's envelope).
	if got, want := (extender.Limits{}).FilterRequestBytes(), int64(3<<20+5000*(64<<10+1)+4<<10+4<<10); got != want {
		t.Errorf("default FilterRequestBytes = %d, want %d", got, want)
	}
	if got, want := (extender.Limits{MaxNodes: 10, MaxPodBytes: 1000, MaxNodeBytes: 100}).FilterRequestBytes(), int64(1000+10*101+4<<10+4<<10); got != want {
		t.Errorf("FilterRequestBytes with small nodes = %d, want %d", got, want)
	}
	if got, want := (extender.Limits{}).FilterRequestValues(), 50_000+5000*4001+64+64; got != want {
		t.Errorf("default FilterRequestValues = %d, want %d", got, want)
	}
	_, err := extender.New(extender.Config{Client: &memCluster{}, Bind: &gpu.Binder{Exec: noPods{}, Waiter: clockWait{}},
		Limits: extender.Limits{MaxNodes: -1, MaxPodBytes: -1, MaxPodValues: 1 << 31, MaxNodeBytes: -1, MaxNodeValues: 1 << 31, MaxConcurrentDecodes: -1}})
	var inv *plancore.InvalidError
	if !errors.Is(err, extender.ErrInvalidConfig) || !errors.As(err, &inv) {
		t.Fatalf("New = %v, want an *plancore.InvalidError wrapping ErrInvalidConfig", err)
	}
	want := []string{"limits.maxNodes", "limits.maxPodBytes", "limits.maxNodeBytes", "limits.maxConcurrentDecodes", "limits.maxPodValues", "limits.maxNodeValues"}
	if !slices.Equal(inv.Fields(), want) {
		t.Errorf("fields %v, want %v", inv.Fields(), want)
	}
}

// TestCountValues: values are counted where they start, keys included,
// nothing inside strings.
func TestCountValues(t *testing.T) {
	for in, want := range map[string]int{
		``: 0, `{}`: 1, `[1,2,3]`: 4, `{"a":"b"}`: 3, `{"a":[null,true,-1.5e3]}`: 6,
		`"a\"b,c:[{"`: 1, `"\\"` + `,1`: 2, ` [ 1 , 2 ] `: 3,
	} {
		if got := extender.CountValues([]byte(in), 100); got != want {
			t.Errorf("CountValues(%s) = %d, want %d", in, got, want)
		}
	}
	if got := extender.CountValues([]byte(strings.Repeat("1,", 1000)), 10); got != 11 {
		t.Errorf("CountValues stops at %d, want 11", got)
	}
}

// TestUnseenNodes: a call may name a few nodes the extender's cache has not
// seen yet (kube-scheduler's informer can be ahead of it): they fail as not
// found and the others are fitted. Fails when every call naming more nodes
// than the cache holds is refused.
func TestUnseenNodes(t *testing.T) {
	ext, nodes := memExtender(t, 1000)
	for i := range 50 {
		nodes = append(nodes, fmt.Sprintf("new-%d", i))
	}
	res := ext.Filter(context.Background(), extenderv1.ExtenderArgs{Pod: gpuPod("p", 8000), NodeNames: &nodes})
	if res.Error != "" || len(*res.NodeNames) != 1 || !strings.Contains(res.FailedNodes["new-49"], "not found") {
		t.Fatalf("Filter naming 50 unseen nodes: %v, %v, %q", res.Error, res.NodeNames, res.FailedNodes["new-49"])
	}
}

// TestBodyBoundFitsTheConfiguration: with kube-scheduler's entry saying
// nodeCacheCapable true, or with none, a Filter body is bounded for names
// only, so a 63 MB body is refused before it is read whole; an entry saying
// nodeCacheCapable false allows Node objects. Breaking it: bound every body
// for Node objects whatever the configuration.
func TestBodyBoundFitsTheConfiguration(t *testing.T) {
	body := filterArgs(`{"metadata":{"name":"p","namespace":"default"}}`, `"NodeNames":[`+strings.Repeat(`"node-0000",`, 63<<20/12)+`"x"]`)
	newExt := func(e *configv1.Extender) *extender.Scheduler {
		ext, err := extender.New(extender.Config{Client: &memCluster{}, Bind: &gpu.Binder{Exec: noPods{}, Waiter: clockWait{}}, KubeScheduler: e})
		if err != nil {
			t.Fatal(err)
		}
		return ext
	}
	names := newExt(&configv1.Extender{URLPrefix: "http://x", FilterVerb: "filter", NodeCacheCapable: true})
	m := measure(names.Handler(), "/filter", body)
	if m.status != http.StatusRequestEntityTooLarge || m.alloc > 16<<20 {
		t.Errorf("names-only configuration: status %d, %d MB allocated; want 413 within 16 MB", m.status, m.alloc>>20)
	}
	if m := measure(newExt(nil).Handler(), "/filter", body); m.status != http.StatusRequestEntityTooLarge || m.alloc > 16<<20 ||
		!strings.Contains(m.reply, "Config.KubeScheduler") {
		t.Errorf("no configuration: status %d, %d MB allocated, %.200s; want 413 within 16 MB naming the setting", m.status, m.alloc>>20, m.reply)
	}
}
