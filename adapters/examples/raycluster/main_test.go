package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plancore/plancore/adapters/kube"
	"github.com/plancore/plancore/reconcile"
)

// TestRun runs the example controller end to end against a real API server and
// checks what it reports after each step.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out bytes.Buffer
	var podEvents kube.PodObserver
	if err := run(ctx, &out, &podEvents); err != nil {
		t.Fatalf("%v\noutput so far:\n%s", err, out.String())
	}
	// An invalid RayCluster is a terminal error (controller-runtime does
	// not requeue it); the create pass leaves its events on the API server.
	want := "invalid RayCluster refused at [spec.workerGroupSpec]; requeued: false\n" +
		"created with 3 workers: 1 head, 3 workers\n" +
		"events:\n" +
		"  Normal HeadCreate: no head pod: creating one\n" +
		"  Normal ScaleUp: scaling up: 0 of 3 worker pods running\n" +
		"scaled to 5 workers: 1 head, 5 workers\n" +
		"deleted one worker behind the controller's back\n" +
		"replaced it: 1 head, 5 workers\n" +
		"pods started: status ready, 5 of 5 workers ready, desired CPU 6\n" +
		"  HeadPodReady=True (HeadPodRunningAndReady)\n" +
		"  RayClusterProvisioned=True (AllPodRunningAndReadyFirstTime)\n" +
		"  RayClusterSuspended=False (RayClusterSuspended)\n" +
		"  RayClusterSuspending=False (RayClusterSuspending)\n"
	if out.String() != want {
		t.Fatalf("output:\n%s\nwant:\n%s", out.String(), want)
	}
	// Seven pods were created (a head, three workers, two more, one
	// replacement): pod events settled their expectations, except any
	// that a reconcile's own pod list settled first.
	if n := podEvents.Observed(); n < 1 || n > 7 {
		t.Fatalf("pod events settled %d expectations, want 1 to 7", n)
	} else {
		t.Logf("pod events settled %d of the 7 creates' expectations", n)
	}
}

// The README's quick start is this example's Reconcile, verbatim.
func TestReadmeQuickStart(t *testing.T) {
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "## Quick start")
	if !ok {
		t.Fatal("the README has no Quick start section")
	}
	_, block, ok := strings.Cut(after, "```go\n")
	block, _, closed := strings.Cut(block, "```")
	if !ok || !closed || !strings.Contains(block, "func (r *Reconciler) Reconcile(") {
		t.Fatal("the Quick start section has no Go block with Reconcile")
	}
	if !strings.Contains(string(src), block) {
		t.Errorf("the README's quick start differs from examples/raycluster/main.go:\n%s", block)
	}
}

// A pass whose status differs only in LastUpdateTime writes nothing; any
// other difference is written. (Comparing LastUpdateTime too makes the
// first check fail; never writing makes the second fail.)
func TestSameStatus(t *testing.T) {
	t0, t1 := metav1.NewTime(time.Unix(0, 0)), metav1.NewTime(time.Unix(60, 0))
	current := reconcile.ClusterStatus{State: reconcile.StateReady, ReadyWorkerReplicas: 3, DesiredCPU: resource.MustParse("1"), LastUpdateTime: &t0}
	next := current
	next.LastUpdateTime, next.DesiredCPU = &t1, resource.MustParse("1000m")
	if !sameStatus(current, next) {
		t.Error("a status that differs only in LastUpdateTime (and a quantity's spelling) counts as changed")
	}
	next.ReadyWorkerReplicas = 2
	if sameStatus(current, next) {
		t.Error("a status with another ReadyWorkerReplicas counts as unchanged")
	}
}
