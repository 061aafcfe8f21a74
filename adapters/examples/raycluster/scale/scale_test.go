package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestSmallRun runs both operators through the harness at a small N, burst
// included, and checks that every cluster became ready and that the figures
// are what such a run must give. KubeRay's operator comes from
// .ci/kuberay-operator.sh's cache (CI builds it first); without it the test
// fails saying how to build it.
func TestSmallRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	cfg := Config{Clusters: 5, Workers: 3, QPS: 20, Namespaces: 2, KubeletDelay: 200 * time.Millisecond,
		Operators: []string{"plancore", "kuberay"}, Timeout: 2 * time.Minute, Burst: true, BurstWorkers: 30,
		KubeRayVersion: "v1.5.0", OperatorQPS: 100, OperatorBurst: 200, PlancoreReconciles: 4, PlancoreInFlight: 8,
		KubeRayReconciles: 1, Progress: &progress, ProgressEvery: time.Second}
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, progress.String())
	}
	table := res.Markdown()
	t.Log(table)
	if len(res.Rows) != 2 {
		t.Fatalf("%d rows, want one per operator", len(res.Rows))
	}
	pods := cfg.Clusters * (1 + cfg.Workers)
	for _, row := range res.Rows {
		// Nothing deletes a pod, so each operator creates each pod once.
		if got := row.Requests["create pods"]; got != pods {
			t.Errorf("%s created %d pods, want %d", row.Operator, got, pods)
		}
		// Counting on until the operator is quiet adds its late status
		// writes and events, never a pod.
		if q := row.RequestsUntilQuiet; q["create pods"] != pods || total(q) < total(row.Requests) {
			t.Errorf("%s: until quiet %d requests, %d pod creates; until ready %d", row.Operator, total(q), q["create pods"], total(row.Requests))
		}
		if row.AllReady <= cfg.KubeletDelay || row.AllReady > cfg.Timeout {
			t.Errorf("%s: every cluster ready after %v, want between the kubelet delay and the timeout", row.Operator, row.AllReady)
		}
		if row.FirstPodP50 <= 0 || row.FirstPodP99 < row.FirstPodP50 {
			t.Errorf("%s: create-to-first-pod p50 %v, p99 %v", row.Operator, row.FirstPodP50, row.FirstPodP99)
		}
		if row.CPUSeconds <= 0 || row.PeakHeapMiB <= 0 || row.PeakRSSMiB < row.PeakHeapMiB {
			t.Errorf("%s: CPU %.2f s, peak heap %.1f MiB, peak RSS %.1f MiB", row.Operator, row.CPUSeconds, row.PeakHeapMiB, row.PeakRSSMiB)
		}
		if row.Requests["watch pods"] < 1 || row.Requests["watch rayclusters"] < 1 {
			t.Errorf("%s: no watch of pods or rayclusters counted: %v", row.Operator, row.Requests)
		}
		b := row.Burst
		// The burst adds BurstWorkers-Workers pods to cluster 0 and one to cluster 1.
		if got, want := b.Requests["create pods"], cfg.BurstWorkers-cfg.Workers+1; got != want {
			t.Errorf("%s created %d pods in the burst, want %d", row.Operator, got, want)
		}
		if b.AllExist <= 0 || b.AllReady < b.AllExist || b.ChangedWait <= 0 || b.ChangedWait > cfg.Timeout {
			t.Errorf("%s: burst pods exist after %v, ready after %v; the changed cluster waited %v", row.Operator, b.AllExist, b.AllReady, b.ChangedWait)
		}
		if !strings.Contains(table, "| "+row.Operator+" | ") {
			t.Errorf("the table has no row for %s", row.Operator)
		}
	}
	if !strings.Contains(progress.String(), "clusters") {
		t.Errorf("no progress line was written:\n%s", progress.String())
	}
}
