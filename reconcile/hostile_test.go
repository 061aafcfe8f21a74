package reconcile_test

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/plancore/plancore/internal/invalidtest"
	"github.com/plancore/plancore/reconcile"
)

// hostileBudget is what decoding and planning one document of up to the API
// server's 3 MiB request limit may allocate.
const hostileBudget = 256 << 20

// allocated runs f and returns the bytes it allocated: the growth of
// runtime.MemStats.TotalAlloc, an upper bound of the heap f used that does
// not depend on timing or load (unlike a duration or a peak sampled by a
// goroutine). The tests using it are not parallel, so nothing else allocates.
func allocated(f func()) uint64 {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

const hostileHead = "apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: {name: rc, namespace: ns}\nspec:\n" +
	"  headGroupSpec:\n    rayStartParams: {}\n    template:\n      spec:\n        containers:\n" +
	"        - name: head\n          image: ray\n          args: "

// aliasBomb is a RayCluster of size bytes whose container args alias one
// anchored string, half the document long, in every remaining byte: a few
// thousand aliases that YAML libraries let through (they count nodes, not
// the bytes a node stands for) and that expand to hundreds of megabytes.
func aliasBomb(size int) []byte {
	var b bytes.Buffer
	b.WriteString(hostileHead)
	b.WriteString("[&a " + strings.Repeat("x", (size-b.Len())/2))
	for b.Len() < size-4 {
		b.WriteString(",*a")
	}
	b.WriteString("]\n")
	return b.Bytes()
}

// TestHostileRayCluster feeds documents built to exhaust the decoder. Each
// is refused with an error naming its field and why, allocating at most
// hostileBudget.
func TestHostileRayCluster(t *testing.T) {
	var dups bytes.Buffer
	dups.WriteString("apiVersion: ray.io/v1\nkind: RayCluster\nmetadata:\n  name: rc\n  annotations:\n")
	for i := 0; dups.Len() < 1<<20; i++ {
		fmt.Fprintf(&dups, "    k%d: v\n    k%d: w\n", i, i)
	}
	rows := []struct {
		name   string
		data   []byte
		fields []string // the first fields named
		detail string   // in the first error's text
	}{
		// Breaking the alias measurement in internal/wire (scanner.size
		// returning the scalar size for an alias) makes these two fail:
		// 74 KB allocated 2.3 GB before, 1 MB ran out of memory.
		{"alias bomb, 74 KB", aliasBomb(74 << 10), []string{"rayCluster"}, "aliases expanded"},
		{"alias bomb, 1 MB", aliasBomb(1 << 20), []string{"rayCluster"}, "aliases expanded"},
		// Dropping the scanner's duplicates pass makes this fail (the keys
		// were refused on rayCluster, without a path).
		{"duplicate keys, 1 MB", dups.Bytes(), []string{"metadata.annotations.k0", "metadata.annotations.k1"}, "Duplicate"},
		// Dropping the second-document check makes this fail (the second
		// document was ignored).
		{"second document", []byte("apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: {name: rc}\n---\nkind: Other\n"),
			[]string{"rayCluster"}, "second YAML document"},
		// Reporting type errors on the document (the old way) makes this
		// fail: the value is named by its path.
		{"deep nesting", []byte(hostileHead + "[]\n  rayVersion: " + strings.Repeat("[", 9000) + strings.Repeat("]", 9000) + "\n"),
			[]string{"spec.rayVersion"}, "must be a string"},
		{"deeper than the YAML parser goes", []byte(hostileHead + strings.Repeat("[", 20000) + "\n"), []string{"rayCluster"}, "max depth"},
		{"over the size limit", append([]byte(hostileHead+"[]\n"), bytes.Repeat([]byte{' '}, reconcile.MaxRayClusterBytes)...),
			[]string{"rayCluster"}, "Too long"},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			n := allocated(func() { _, _, err = reconcile.DecodeRayCluster(tc.data) })
			if n > hostileBudget {
				t.Errorf("allocated %d MB, budget %d MB", n>>20, hostileBudget>>20)
			}
			fields := invalidtest.Fields(t, err)
			if len(fields) < len(tc.fields) || strings.Join(fields[:len(tc.fields)], " ") != strings.Join(tc.fields, " ") {
				t.Fatalf("fields %.200v, want %v first", fields, tc.fields)
			}
			if msg := err.Error(); !strings.Contains(msg[:min(len(msg), 400)], tc.detail) {
				t.Errorf("error %.400s does not say %q", msg, tc.detail)
			}
		})
	}
}

// TestHostileRayClusterAccepted: a large legitimate document (4,000 worker
// groups sharing one template through an alias, as people use anchors)
// decodes and plans within the budget.
func TestHostileRayClusterAccepted(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: {name: rc, namespace: ns}\nspec:\n" +
		"  headGroupSpec:\n    rayStartParams: {}\n    template: &tpl\n      spec:\n        containers:\n" +
		"        - name: ray\n          image: rayproject/ray:2.41.0\n          resources: {requests: {cpu: '1', memory: 2Gi}}\n" +
		"  workerGroupSpecs:\n")
	for i := 0; b.Len() < 512<<10; i++ {
		fmt.Fprintf(&b, "  - groupName: g%d\n    replicas: 1\n    minReplicas: 0\n    maxReplicas: 2\n    rayStartParams: {}\n    template: *tpl\n", i)
	}
	var err error
	n := allocated(func() {
		var c reconcile.Cluster
		if c, _, err = reconcile.DecodeRayCluster(b.Bytes()); err == nil {
			_, err = reconcile.Decide(reconcile.Snapshot{Cluster: c, Now: t0}, opts())
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if n > hostileBudget {
		t.Errorf("allocated %d MB, budget %d MB", n>>20, hostileBudget>>20)
	}
}
