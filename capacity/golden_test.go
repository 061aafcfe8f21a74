package capacity_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plancore/plancore/capacity"
	"github.com/plancore/plancore/fake/sim"
)

var update = flag.Bool("update", false, "rewrite the golden transcripts in testdata")

// TestGoldenTranscripts renders fixed scenarios and compares them byte for
// byte with testdata/*.txt (go test -run Golden -update rewrites them): the
// known counter-examples replayed through the simulation under the seed's
// and plancore's accounting, and a selection with every exclusion reason.
func TestGoldenTranscripts(t *testing.T) {
	ctx := context.Background()
	scenarios := map[string]func() string{}
	for _, ce := range sim.KnownBadCounterExamples {
		for _, o := range []capacity.Options{ce.Options, {}} {
			name := strings.NewReplacer(" ", "-", ":", "", ",", "", "'", "").Replace(ce.Name) + "." + o.Accounting.String()
			if o.Unfenced {
				name += "-unfenced"
			}
			o := o
			draws := ce.Draws
			scenarios[name] = func() string {
				sim, err := sim.RunDraws(ctx, sim.CapacitySimConfig{Options: o}, memFactory, draws)
				return sim.String() + "\nresult: " + errString(err) + "\n"
			}
		}
	}
	scenarios["select-every-reason"] = func() string {
		sel, err := capacity.Decide(capacity.Input{Nodes: everyReason(), Now: t0, SpreadKey: "job-1"}, capacity.Options{})
		if err != nil {
			return err.Error()
		}
		return sel.String()
	}
	for name, render := range scenarios {
		t.Run(name, func(t *testing.T) {
			got := render()
			if again := render(); again != got {
				t.Fatalf("rendering is not deterministic:\n%s\n---\n%s", got, again)
			}
			path := filepath.Join("testdata", name+".txt")
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("transcript differs from %s (-update to accept):\n--- got\n%s\n--- want\n%s", path, got, want)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return "safe and exact at quiescence"
	}
	return err.Error()
}

func everyReason() []capacity.NodeLoad {
	low := capacity.Usage{CPU: 10, Memory: 10}
	return []capacity.NodeLoad{
		fresh("ok-1", 4, 1, 0, 0, low),
		fresh("ok-2", 4, 1, 0, 0, low),
		fresh("ok-3", 8, 1, 1, 0, capacity.Usage{CPU: 60, Memory: 20}),
		fresh("bad{id}", 4, 0, 0, 0, low),
		fresh("zero-max", -1, 0, 0, 0, low),
		{ID: "silent", Max: 4},
		fresh("full", 4, 2, 1, 1, low),
		fresh("hot-cpu", 4, 0, 0, 0, capacity.Usage{CPU: 97, Memory: 10}),
		fresh("hot-gpu", 4, 0, 0, 0, capacity.Usage{CPU: 10, Memory: 10, GPU: 99, HasGPU: true}),
		fresh("hot-mem", 4, 0, 0, 0, capacity.Usage{CPU: 10, Memory: 91}),
		fresh("unknown", 4, 0, 0, 0, capacity.Usage{CPU: -1, Memory: 10}),
		fresh("ok-1", 4, 0, 0, 0, low),
	}
}
