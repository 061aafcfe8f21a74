package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestRun runs the example against a real API server: every pod that fits
// is bound with its devices written, binpack puts the two inference pods on
// the training pod's node, and the pod that asks more memory than a card has
// fits nowhere, with a reason per node.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out bytes.Buffer
	placed, err := run(ctx, &out)
	if err != nil {
		t.Fatalf("%v\noutput so far:\n%s", err, out.String())
	}
	got := map[string]Placement{}
	for _, p := range placed {
		got[p.Pod] = p
	}
	train := got["train"]
	if train.Node == "" || strings.Count(train.Devices, "NVIDIA") != 2 {
		t.Errorf("train: %+v", train)
	}
	for _, name := range []string{"infer-1", "infer-2"} {
		if p := got[name]; p.Node != train.Node || strings.Count(p.Devices, "NVIDIA") != 1 {
			t.Errorf("%s: %+v, want it binpacked onto %s", name, p, train.Node)
		}
	}
	if p := got["dcu-job"]; p.Node != "dcu-a" || !strings.Contains(p.Devices, "DCU") {
		t.Errorf("dcu-job: %+v", p)
	}
	if p := got["too-big"]; p.Node != "" || !strings.Contains(p.Failed["gpu-a"], "CardInsufficientMemory") {
		t.Errorf("too-big: %+v", p)
	}
	if !strings.Contains(out.String(), "too-big  fits nowhere") {
		t.Errorf("output:\n%s", out.String())
	}
}
