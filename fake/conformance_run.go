package fake

import (
	"context"
	"fmt"
)

// check is one clause of a conformance suite over a harness of type H: run
// returns what it found wrong, nil when the clause holds.
type check[H any] struct {
	name string
	run  func(ctx context.Context, h H) []string
}

// runChecks gives each check a fresh harness from newHarness and returns
// every violation found, a failing constructor included, in check order.
func runChecks[H any](ctx context.Context, checks []check[H], newHarness func(context.Context) (H, error)) []Violation {
	var out []Violation
	for _, c := range checks {
		h, err := newHarness(ctx)
		if err != nil {
			out = append(out, Violation{Check: c.name, Detail: fmt.Sprintf("constructor failed: %v", err)})
			continue
		}
		for _, d := range c.run(ctx, h) {
			out = append(out, Violation{Check: c.name, Detail: d})
		}
	}
	return out
}
