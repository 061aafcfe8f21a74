package capacity_test

import (
	"context"
	"testing"

	"github.com/plancore/plancore/capacity"
	"github.com/plancore/plancore/fake/sim"
	"github.com/plancore/plancore/internal/golden"
)

// goldenInput is one transcript's input: either a run of the simulation
// replaying recorded draws, or one Decide call.
type goldenInput struct {
	// Sim replays Draws (the first is the step count, the rest the
	// choices, as sim.Replay reads them) through the simulation of a store
	// built with Options, then quiesces it.
	Sim *struct {
		Options capacity.Options `json:"options"`
		Draws   []int            `json:"draws"`
	} `json:"sim"`
	// Decide is a selection among Input's nodes under Options.
	Decide *struct {
		Input   capacity.Input   `json:"input"`
		Options capacity.Options `json:"options"`
	} `json:"decide"`
}

// TestGoldenTranscripts replays testdata/*.txt (go test -run Golden
// -update rewrites their outputs): the known counter-examples replayed
// through the simulation under the seed's and plancore's accounting, and a
// selection with every exclusion reason.
func TestGoldenTranscripts(t *testing.T) {
	golden.Run(t, "testdata", func(t *testing.T, input []byte) string {
		in := golden.Decode[goldenInput](t, input)
		switch {
		case in.Sim != nil && in.Decide == nil:
			s, err := sim.RunDraws(context.Background(), sim.CapacitySimConfig{Options: in.Sim.Options}, memFactory, in.Sim.Draws)
			return s.String() + "\nresult: " + errString(err) + "\n"
		case in.Decide != nil && in.Sim == nil:
			sel, err := capacity.Decide(in.Decide.Input, in.Decide.Options)
			if err != nil {
				return err.Error()
			}
			return sel.String()
		}
		t.Fatal("the input needs exactly one of sim and decide")
		return ""
	})
}

func errString(err error) string {
	if err == nil {
		return "safe and exact at quiescence"
	}
	return err.Error()
}
