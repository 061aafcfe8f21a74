package expectations_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/plancore/plancore/expectations"
)

var update = flag.Bool("update", false, "rewrite the golden transcripts in testdata")

// transcript drives a State and writes down every call and every result, for
// the golden files in testdata.
type transcript struct {
	t   *testing.T
	s   *expectations.State
	b   strings.Builder
	now time.Time
}

func newTranscript(t *testing.T, title string, o expectations.Options) *transcript {
	s, err := expectations.New(o)
	if err != nil {
		t.Fatal(err)
	}
	tr := &transcript{t: t, s: s, now: t0}
	fmt.Fprintf(&tr.b, "# %s\n# options %+v\n", title, o)
	return tr
}

func (tr *transcript) at(d time.Duration) *transcript {
	tr.now = t0.Add(d)
	return tr
}

func (tr *transcript) record(r expectations.Record) expectations.Ref {
	if r.Owner == (expectations.Owner{}) {
		r.Owner = rc
	}
	ref, err := tr.s.Record(tr.now, r)
	fmt.Fprintf(&tr.b, "t+%v record %s group=%q pod=%q token=%q seen=%t err=%v\n", tr.now.Sub(t0), r.Action, r.Group, r.Pod, r.Token, r.Seen, err)
	return ref
}

func (tr *transcript) conclude(ref expectations.Ref, err error, name string, uid types.UID) {
	a := expectations.Create
	if ref.Pod != "" && ref.Token == "" && name == "" {
		a = expectations.Delete
	}
	res := expectations.Classify(a, err, false)
	found, cerr := tr.s.Conclude(tr.now, ref, res, name, uid)
	fmt.Fprintf(&tr.b, "t+%v conclude %s%s as %s (api error: %v) name=%q found=%t err=%v\n", tr.now.Sub(t0), ref.Pod, bracket(ref.Token), res, err, name, found, cerr)
}

func bracket(token string) string {
	if token == "" {
		return ""
	}
	return "[" + token + "]"
}

func (tr *transcript) check(group string, view *expectations.View, desc string) {
	r, err := tr.s.Satisfied(tr.now, rc, group, view)
	if err != nil {
		tr.t.Fatal(err)
	}
	fmt.Fprintf(&tr.b, "t+%v satisfied? view: %s  (len %d)\n%s", tr.now.Sub(t0), desc, tr.s.Len(), r)
}

func (tr *transcript) golden(name string) {
	tr.t.Helper()
	path := filepath.Join("testdata", name+".txt")
	got := tr.b.String()
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			tr.t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			tr.t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tr.t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		tr.t.Fatalf("%s differs (-want +got); run go test -update if the change is intended:\n%s", path, diff)
	}
}

func TestGoldenTranscripts(t *testing.T) {
	pods := func(specs ...string) (*expectations.View, string) {
		return podsView(specs...), "[" + strings.Join(specs, " ") + "]"
	}
	timeout := apierrors.NewServerTimeout(podsGR, "create", 1)

	t.Run("partial_failure", func(t *testing.T) {
		tr := newTranscript(t, "partial failure", expectations.Options{})
		t1 := tr.record(expectations.Record{Group: "gpu", Action: expectations.Create, Token: "t1"})
		t2 := tr.record(expectations.Record{Group: "gpu", Action: expectations.Create, Token: "t2"})
		tr.at(time.Second).conclude(t1, nil, "rc-gpu-worker-x7k2p", "uid-x7k2p")
		tr.conclude(t2, errQuota, "", "")
		v, d := pods()
		tr.at(2*time.Second).check("gpu", v, d)
		v, d = pods("rc-gpu-worker-x7k2p@uid-x7k2p")
		tr.at(9*time.Second).check("gpu", v, d)
		tr.golden("partial_failure")
	})
	t.Run("ambiguous_create", func(t *testing.T) {
		tr := newTranscript(t, "an ambiguous create found by its stamped token", expectations.Options{})
		ref := tr.record(expectations.Record{Group: "gpu", Action: expectations.Create, Token: "t3"})
		tr.at(10*time.Second).conclude(ref, timeout, "", "")
		v, d := pods()
		tr.at(20*time.Second).check("gpu", v, d)
		v, d = pods("rc-gpu-worker-q8z2m#t3")
		tr.at(30*time.Second).check("gpu", v, d)
		tr.golden("ambiguous_create")
	})
	t.Run("stuck_terminating", func(t *testing.T) {
		for _, c := range []struct {
			name string
			o    expectations.Options
		}{{"stuck_terminating_default", expectations.Options{}}, {"stuck_terminating_counted", expectations.Options{CountsTerminating: true}}, {"stuck_terminating_kuberay", expectations.KubeRay()}} {
			tr := newTranscript(t, "a pod stuck terminating ("+c.name+")", c.o)
			ref := tr.record(expectations.Record{Group: "small", Action: expectations.Delete, Pod: "w-3", Seen: true})
			tr.conclude(ref, nil, "", "")
			v, d := pods("w-3~", "w-4")
			tr.at(time.Minute).check("small", v, d)
			tr.at(5*time.Minute).check("small", v, d)
			tr.at(10*time.Minute).check("small", v, d)
			v, d = pods("w-4")
			tr.at(11*time.Minute).check("small", v, d)
			tr.golden(c.name)
		}
	})
	t.Run("stale_cache_kuberay", func(t *testing.T) {
		// A stale cache answers "no pods" on the second pass.
		// With real expectations the second pass creates nothing.
		tr := newTranscript(t, "a stale cache on the KubeRay profile", expectations.KubeRay())
		for _, p := range []struct{ group, pod string }{{"", "rc-head"}, {"small", "rc-small-a"}, {"small", "rc-small-b"}, {"small", "rc-small-c"}} {
			ref := tr.record(expectations.Record{Group: p.group, Action: expectations.Create, Token: "tok-" + p.pod})
			tr.conclude(ref, nil, p.pod, "")
		}
		v, d := pods()
		tr.at(time.Second).check("", v, d)
		tr.check("small", v, d)
		tr.at(30*time.Second).check("small", v, d)
		tr.golden("stale_cache_kuberay")
	})
	t.Run("openkruise_block", func(t *testing.T) {
		tr := newTranscript(t, "OpenKruise profile: blocked after the timeout until observed", expectations.OpenKruise())
		tr.record(expectations.Record{Group: "", Action: expectations.Create, Pod: "p-1"})
		v, d := pods()
		tr.at(5*time.Minute).check("", v, d)
		tr.at(70*time.Hour).check("", v, d)
		v, d = pods("p-1")
		tr.check("", v, d)
		tr.golden("openkruise_block")
	})
}

// podsView is pods() without the test's *testing.T.
func podsView(specs ...string) *expectations.View { return pods(specs...) }
