package reconcile_test

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/plancore/plancore/internal/hostiletest"

	"github.com/plancore/plancore/internal/invalidtest"
	"github.com/plancore/plancore/reconcile"
)

// hostileBudget and allocated are the shared budget (a ceiling under -race) and measure.
const hostileBudget = hostiletest.Ceiling

var allocated = hostiletest.Allocated

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

// tinyValues is a document of size bytes whose head container's args are
// one list of item, item, ...: as many values as the bytes allow.
func tinyValues(json bool, item string, size int) []byte {
	var b bytes.Buffer
	end := "]\n"
	if json {
		b.WriteString(`{"apiVersion":"ray.io/v1","kind":"RayCluster","spec":{"headGroupSpec":{"template":{"spec":{"containers":[{"name":"h","args":[`)
		end = "]}]}}}}}"
	} else {
		b.WriteString(hostileHead + "[")
	}
	for b.Len()+2*len(item)+1+len(end) <= size {
		b.WriteString(item + ",")
	}
	b.WriteString(item + end)
	return b.Bytes()
}

// aliasedValues is a document whose head container's args are one
// anchored list of 500 one-letter strings, plain one-letter strings, and
// copies aliases of the list (500*copies values once expanded). With
// enough plain values the aliases stand for less than nine values in ten:
// the YAML library sigs.k8s.io/yaml converts with refuses a document whose
// values are almost all aliased, but not this one.
func aliasedValues(copies, plain int) []byte {
	var b bytes.Buffer
	b.WriteString(hostileHead + "[&a [" + strings.Repeat("a,", 499) + "a]")
	b.WriteString(strings.Repeat(",b", plain))
	b.WriteString(strings.Repeat(",*a", copies))
	b.WriteString("]\n")
	return b.Bytes()
}

// sharedTemplate is a RayCluster of n worker groups sharing the head's pod
// template through an alias, as people use anchors: 30 values a group once
// expanded.
func sharedTemplate(n int) []byte {
	var b bytes.Buffer
	b.WriteString("apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: {name: rc, namespace: ns}\nspec:\n" +
		"  headGroupSpec:\n    rayStartParams: {}\n    template: &tpl\n      spec:\n        containers:\n" +
		"        - name: ray\n          image: rayproject/ray:2.41.0\n          resources: {requests: {cpu: '1', memory: 2Gi}}\n" +
		"  workerGroupSpecs:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - groupName: g%d\n    replicas: 1\n    minReplicas: 0\n    maxReplicas: 2\n    rayStartParams: {}\n    template: *tpl\n", i)
	}
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
	const tooMany = "more than 262144 values"
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
		// Dropping the count of values before the parse (countValues in
		// internal/wire) makes these two fail: 1.5 million one-letter
		// values cost 379 MB and 1.1 s in the YAML parser before the
		// document was refused as too large as JSON (now 2 ms, nothing
		// allocated), and 1.5 million numbers in JSON were read in full
		// (144 MB) to report their type errors.
		{"tiny values, 3 MiB of YAML", tinyValues(false, "a", reconcile.MaxRayClusterBytes), []string{"rayCluster"}, tooMany},
		{"tiny values, 3 MiB of JSON", tinyValues(true, "1", reconcile.MaxRayClusterBytes), []string{"rayCluster"}, tooMany},
		// Dropping the count of expanded values in the scanner makes this
		// fail: 730,000 values from 170 KB of YAML, 2.9 MB as JSON (within
		// the byte bound), were expanded and read (132 MB).
		{"tiny values through aliases", aliasedValues(1300, 80000), []string{"rayCluster"}, "with its aliases expanded it has " + tooMany},
		// 9,000 worker groups sharing one template (1 MiB of YAML) expand
		// to 269,000 values, 2 MB of JSON: more than the API server can
		// store (1.5 MiB), and reading (189 MB) and planning them took
		// 244 MB,
		// most of it spent where encoding/json grows slices (a list of
		// one container is given room for four, 1.5 KB a group) and in
		// the three trees a YAML document passes through, none of it
		// cheap to avoid; the value bound refuses it instead.
		// TestHostileRayClusterAccepted reads the most it lets through.
		{"9,000 worker groups sharing one template", sharedTemplate(9000), []string{"rayCluster"}, "with its aliases expanded it has " + tooMany},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			hostiletest.Refused(t, func() (err error) { _, _, err = reconcile.DecodeRayCluster(tc.data); return err }, tc.fields, tc.detail)
		})
	}
}

// TestHostileRayClusterErrors: a document whose every value is wrong names
// the first wire.MaxErrors problems and says how many more it left out.
func TestHostileRayClusterErrors(t *testing.T) {
	data := tinyValues(true, "1", 500<<10) // 256,000 numbers where strings belong
	var err error
	n := allocated(func() { _, _, err = reconcile.DecodeRayCluster(data) })
	// Building every error (dropping checker.full) makes this fail: it
	// named all 256,000 values.
	if n > hostileBudget {
		t.Errorf("allocated %d MB, budget %d MB", n>>20, hostileBudget>>20)
	}
	fields := invalidtest.Fields(t, err)
	if len(fields) != 1001 || fields[0] != "spec.headGroupSpec.template.spec.containers[0].args[0]" || fields[1000] != "rayCluster" {
		t.Fatalf("%d fields, first %v, last %v", len(fields), fields[0], fields[len(fields)-1])
	}
	if msg := err.Error(); !strings.Contains(msg, "more problems are not listed") {
		t.Errorf("error ...%s does not say that problems were left out", msg[len(msg)-200:])
	}
}

// TestHostileRayClusterAccepted: large legitimate documents decode and plan
// within the budget, up to the value bound.
func TestHostileRayClusterAccepted(t *testing.T) {
	group, err := os.ReadFile("testdata/decode/worker-group-full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var full bytes.Buffer // 3 MiB: 720 groups, 230,000 values (13.7 bytes a value)
	full.WriteString("apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: {name: rc, namespace: ns}\nspec:\n" +
		"  headGroupSpec:\n    rayStartParams: {}\n    template:\n      spec:\n        containers:\n" +
		"        - name: ray\n          image: rayproject/ray:2.41.0\n  workerGroupSpecs:\n")
	for i := 0; full.Len()+len(group)+16 < reconcile.MaxRayClusterBytes; i++ {
		full.Write(bytes.ReplaceAll(group, []byte("GROUP"), fmt.Appendf(nil, "%d", i)))
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		// A value bound under 230,000 makes this fail: a realistic
		// document at the API server's request limit is refused.
		{"worker groups with full pod templates, 3 MiB", full.Bytes()},
		// 8,700 groups sharing a template: 261,000 values once expanded,
		// the most the value bound lets through.
		{"8,700 worker groups sharing one template", sharedTemplate(8700)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			n := allocated(func() {
				var c reconcile.Cluster
				if c, _, err = reconcile.DecodeRayCluster(tc.data); err == nil {
					_, err = reconcile.Decide(reconcile.Snapshot{Cluster: c, Now: t0}, opts())
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			// Under -race the same work allocates 1.5 to 1.7 times as much
			// (289 and 396 MB here); the plain run checks the budget itself.
			budget := uint64(hostiletest.Budget) // scaled below for -race, once
			if raceDetector {
				budget = budget * 7 / 4
			}
			if n > budget {
				t.Errorf("allocated %d MB, budget %d MB", n>>20, budget>>20)
			}
		})
	}
}
