package gpu_test

import (
	"fmt"
	"strings"

	"github.com/plancore/plancore/gpu"
)

// transcriptStep is one action of a Bind and the result the executor
// reported, a line of a golden transcript.
type transcriptStep struct {
	At     string
	Action gpu.Action
	Result gpu.Result
}

// formatTranscript renders steps one per line: "<action> => <result>",
// prefixed with the step's At label when set.
func formatTranscript(steps []transcriptStep) string {
	var b strings.Builder
	for _, s := range steps {
		if s.At != "" {
			fmt.Fprintf(&b, "%s ", s.At)
		}
		fmt.Fprintf(&b, "%s => %s\n", s.Action, s.Result)
	}
	return b.String()
}
