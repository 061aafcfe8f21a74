package dag_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/plancore/plancore/internal/hostiletest"

	"github.com/plancore/plancore/dag"
)

// hostileBudget and allocated are the shared budget (a ceiling under -race) and measure.
const hostileBudget = hostiletest.Ceiling

var allocated = hostiletest.Allocated

const hostileFlow = "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {name: jf, namespace: ns, uid: u}\nspec:\n  flows:\n"

// TestHostileJobFlow feeds documents built to exhaust DecodeJobFlow. Each is
// refused with an error naming its field and why, within hostileBudget.
func TestHostileJobFlow(t *testing.T) {
	var bomb bytes.Buffer // 90 KB: one anchored target, half the document, aliased in the rest
	bomb.WriteString(hostileFlow + "  - name: a\n    dependsOn:\n      targets: [&a " + strings.Repeat("x", 45<<10))
	for bomb.Len() < 90<<10 {
		bomb.WriteString(",*a")
	}
	bomb.WriteString("]\n")
	var big bytes.Buffer
	big.WriteString(hostileFlow)
	for i := 0; big.Len() <= dag.MaxJobFlowBytes; i++ {
		fmt.Fprintf(&big, "  - name: f%d\n", i)
	}
	var dups bytes.Buffer
	dups.WriteString("metadata:\n  name: jf\n  annotations:\n")
	for i := 0; dups.Len() < 1<<20; i++ {
		fmt.Fprintf(&dups, "    k%d: v\n    k%d: w\n", i, i)
	}
	tiny := func(head, item, end string) []byte { // as many items as 3 MiB holds
		var b bytes.Buffer
		b.WriteString(head)
		for b.Len()+2*len(item)+1+len(end) <= dag.MaxJobFlowBytes {
			b.WriteString(item + ",")
		}
		b.WriteString(item + end)
		return b.Bytes()
	}
	rows := []struct {
		name   string
		data   []byte
		fields []string // the first fields named
		detail string   // in the error's first 400 bytes
	}{
		// Breaking the alias measurement (scanner.size returning the
		// scalar's size for an alias) makes this fail: it took 20 s and
		// 3.8 GB before.
		{"alias bomb, 90 KB", bomb.Bytes(), []string{"jobFlow"}, "aliases expanded"},
		// Removing the MaxBytes check in wire.Decode makes this fail (an
		// 8 MB JobFlow decoded in 1.3 GB before).
		{"over the size limit", big.Bytes(), []string{"jobFlow"}, "Too long"},
		// Dropping the scanner's duplicates pass makes this fail (the last
		// value was kept silently).
		{"duplicate keys, 1 MB", dups.Bytes(), []string{"metadata.annotations.k0", "metadata.annotations.k1"}, "Duplicate"},
		// Dropping the second-document check makes this fail.
		{"second document", []byte(hostileFlow + "  - name: a\n---\nkind: Other\n"), []string{"jobFlow"}, "second YAML document"},
		// Reporting type errors without their list indices (the old way)
		// makes this fail.
		{"deep nesting", []byte(hostileFlow + "  - name: a\n    dependsOn:\n      targets: " + strings.Repeat("[", 9000) + strings.Repeat("]", 9000) + "\n"),
			[]string{"spec.flows[0].dependsOn.targets[0]"}, "must be a string"},
		// Dropping the count of values before the parse (countValues in
		// internal/wire) makes these fail: 1.5 million one-letter
		// targets cost 379 MB and over a second in the YAML parser before the
		// document was refused as too large as JSON, and 1.5 million
		// numbers in JSON were read in full to report their type errors.
		{"tiny values, 3 MiB of YAML", tiny(hostileFlow+"  - name: a\n    dependsOn:\n      targets: [", "a", "]\n"),
			[]string{"jobFlow"}, "more than 262144 values"},
		{"tiny values, 3 MiB of JSON", tiny(`{"spec":{"flows":[{"name":"a","dependsOn":{"targets":[`, "1", "]}}]}}"),
			[]string{"jobFlow"}, "more than 262144 values"},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			hostiletest.Refused(t, func() (err error) { _, err = dag.DecodeJobFlow(tc.data); return err }, tc.fields, tc.detail)
		})
	}
}

// TestHostileJobFlowAccepted: the largest JobFlows the value bound lets
// through decode and plan within the budget.
func TestHostileJobFlowAccepted(t *testing.T) {
	var b bytes.Buffer // 21,000 flows with five targets each: 252,000 values
	b.WriteString(hostileFlow)
	for i := range 21000 {
		fmt.Fprintf(&b, "  - name: f%d\n", i)
		if i >= 5 {
			fmt.Fprintf(&b, "    dependsOn: {targets: [f%d, f%d, f%d, f%d, f%d]}\n", i-1, i-2, i-3, i-4, i-5)
		}
	}
	var err error
	n := allocated(func() {
		var wf dag.Workflow
		if wf, err = dag.DecodeJobFlow(b.Bytes()); err == nil {
			_, err = dag.Decide(dag.Snapshot{Flow: wf, Now: t0}, dag.Default())
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	// A value bound under 252,000 makes this fail on the error above.
	if n > hostileBudget {
		t.Errorf("allocated %d MB, budget %d MB", n>>20, hostileBudget>>20)
	}
	t.Logf("%d bytes, %d MB", b.Len(), n>>20)
}

// fastest is the shortest of runs timings of f: the least disturbed by a
// loaded machine.
func fastest(runs int, f func()) time.Duration {
	best := time.Duration(1<<63 - 1)
	for range runs {
		start := time.Now()
		f()
		best = min(best, time.Since(start))
	}
	return best
}

// linear checks that f(n) costs about ten times f(n/10): a quadratic cost
// would be a hundred times (the old code's was over a thousand). A ratio,
// not a duration, so that -race and a loaded machine slow both sides alike;
// the fastest of three runs on each side, and a bound of 60×, so that a
// garbage collection or a busy neighbour during one run does not decide it
// (one run of the large side once measured 44× on a loaded machine).
func linear(t *testing.T, n int, f func(n int)) {
	t.Helper()
	small := fastest(3, func() { f(n / 10) })
	large := fastest(3, func() { f(n) })
	if large > 60*small+50*time.Millisecond {
		t.Errorf("n=%d took %v, n=%d took %v: more than linear", n/10, small, n, large)
	}
}

func flows(n int, target func(i int) string) dag.Workflow {
	fs := make([]dag.Flow, n)
	for i := range fs {
		fs[i] = dag.Flow{Name: fmt.Sprintf("f%d", i), DependsOn: &dag.DependsOn{Targets: []string{target(i)}}}
	}
	return dag.Workflow{Name: "jf", Namespace: "ns", UID: "u", Spec: dag.Spec{Flows: fs}}
}

// TestHostileSpecs: invalid specs a workflow author controls cost time and
// memory linear in flows plus edges.
func TestHostileSpecs(t *testing.T) {
	t.Run("one flow with 100,000 unknown targets", func(t *testing.T) {
		check := func(n int) {
			ts := make([]string, n)
			for i := range ts {
				ts[i] = fmt.Sprintf("ghost%d", i)
			}
			if err := dag.Check(wf(dag.Flow{Name: "a", DependsOn: &dag.DependsOn{Targets: ts}}), dag.Default()); err == nil {
				t.Fatal("unknown targets accepted")
			}
		}
		// Scanning a list of the unknown targets seen (the old way) makes
		// this fail: Check took 11 s.
		linear(t, 100000, check)
		if n := allocated(func() { check(100000) }); n > hostileBudget {
			t.Errorf("allocated %d MB", n>>20)
		}
	})
	t.Run("20,000 self-dependent flows", func(t *testing.T) {
		decide := func(n int) {
			if _, err := dag.Decide(dag.Snapshot{Flow: flows(n, func(i int) string { return fmt.Sprintf("f%d", i) }), Now: t0}, dag.Default()); err != nil {
				t.Fatal(err)
			}
		}
		// Marking each cycle's members in an array of every flow makes the
		// allocation fail (450 MB before); looking through every issue for
		// each waiting flow makes the ratio fail.
		if n := allocated(func() { decide(20000) }); n > 64<<20 {
			t.Errorf("allocated %d MB", n>>20)
		}
		linear(t, 20000, decide)
	})
	t.Run("one cycle through 20,000 flows", func(t *testing.T) {
		const n = 20000
		var p dag.Plan
		var err error
		mem := allocated(func() {
			p, err = dag.Decide(dag.Snapshot{Flow: flows(n, func(i int) string { return fmt.Sprintf("f%d", (i+1)%n) }), Now: t0}, dag.Default())
		})
		if err != nil {
			t.Fatal(err)
		}
		text := 0
		for _, b := range p.Blocked {
			for _, r := range b.Reasons {
				text += len(r.Message)
			}
		}
		// Copying the cycle's witness into every member's reason makes
		// this fail: 3.8 GB of reason text before.
		if text > 64*n || mem > hostileBudget {
			t.Errorf("%d bytes of reasons for %d flows, %d MB allocated", text, n, mem>>20)
		}
		cycles := 0
		for _, is := range p.Issues {
			if is.Kind == dag.IssueCycle {
				cycles++
				if len(is.Members) != n {
					t.Errorf("the cycle lists %d members, want %d", len(is.Members), n)
				}
			}
		}
		if cycles != 1 {
			t.Errorf("%d cycle issues, want the one", cycles)
		}
	})
}
