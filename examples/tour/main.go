// Command tour prints a narrated walk through each plancore core, run on the
// in-memory world of package fake. It is the README's main job:
//
//	go run ./examples/tour
//
// Each core adds its chapter in a file of its own (expectations.go,
// reconcile.go, ...) by calling register from an init function, so chapters
// never collide; they run in the order of their number.
package main

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

type chapter struct {
	order int
	title string
	run   func(w io.Writer) error
}

var chapters []chapter

// register adds a chapter; order fixes its place in the tour.
func register(order int, title string, run func(w io.Writer) error) {
	chapters = append(chapters, chapter{order: order, title: title, run: run})
}

// tour writes every chapter to w and stops at the first that fails.
func tour(w io.Writer) error {
	sorted := slices.Clone(chapters)
	slices.SortStableFunc(sorted, func(a, b chapter) int { return cmp.Compare(a.order, b.order) })
	fmt.Fprintln(w, "plancore tour: every core, planning against the in-memory world (package fake)")
	for i, c := range sorted {
		heading := fmt.Sprintf("Chapter %d. %s", i+1, c.title)
		fmt.Fprintf(w, "\n%s\n%s\n", heading, strings.Repeat("=", len(heading)))
		if err := c.run(w); err != nil {
			return fmt.Errorf("chapter %q: %w", c.title, err)
		}
	}
	return nil
}

func main() {
	out := bufio.NewWriter(os.Stdout)
	err := tour(out)
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tour:", err)
		os.Exit(1)
	}
}
