// Command tour is a guided walk through plancore's cores, run on the
// in-memory world of package fake. It is the README's first command:
//
//	go run ./examples/tour             # a one-screen overview and the chapters
//	go run ./examples/tour reconcile   # one chapter
//	go run ./examples/tour all         # every chapter, in order
//
// A chapter prints, before each step's output, the few lines of Go the step
// runs (copied from its source file, which the chapter names; a test checks
// that every line shown is in that file), and defines each term the first
// time it uses it. Each core adds its chapter in a file of its own
// (expectations.go, reconcile.go, ...) by calling register from an init
// function.
package main

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

type chapter struct {
	order int
	name  string // what you type: go run ./examples/tour <name>
	title string
	file  string // the chapter's source file, relative to the repository
	run   func(p *page) error
}

var chapters []chapter

// register adds a chapter; order fixes its place in the list. The caller's
// file is the chapter's source file.
func register(order int, name, title string, run func(p *page) error) {
	_, file, _, _ := runtime.Caller(1)
	chapters = append(chapters, chapter{order: order, name: name, title: title,
		file: "examples/tour/" + filepath.Base(file), run: run})
}

func sortedChapters() []chapter {
	sorted := slices.Clone(chapters)
	slices.SortStableFunc(sorted, func(a, b chapter) int { return cmp.Compare(a.order, b.order) })
	return sorted
}

// overview is the tour without arguments: what plancore is, in one screen,
// and the chapters.
func overview(w io.Writer) {
	fmt.Fprint(w, `plancore: decisions for Kubernetes controllers and schedulers, as pure functions.

A core takes a snapshot (plain Go values describing your cluster, the current
time included) and returns a plan: a sorted list of actions, each with a
reason. It does no I/O, so the same snapshot always gives the same plan and a
test needs no cluster. An executor (a small interface over Kubernetes, Redis,
or package fake, the in-memory world every chapter runs on) carries it out:

    plan, err := reconcile.Decide(snapshot, reconcile.Options{})
    report, err := reconcile.Apply(ctx, plan, executor)

Chapters (go run ./examples/tour <chapter>, or "all"):
`)
	listChapters(w)
}

func listChapters(w io.Writer) {
	for _, c := range sortedChapters() {
		fmt.Fprintf(w, "  %-13s %s\n", c.name, c.title)
	}
}

// runChapter runs one chapter on w: a heading naming its source file, then the
// chapter.
func runChapter(w io.Writer, c chapter) error {
	heading := fmt.Sprintf("%s: %s", c.name, c.title)
	fmt.Fprintf(w, "%s\n%s\n(source: %s; lines starting with » are the Go calls behind the output below them)\n\n",
		heading, strings.Repeat("=", len([]rune(heading))), c.file)
	if err := c.run(newPage(w)); err != nil {
		return fmt.Errorf("chapter %s: %w", c.name, err)
	}
	return nil
}

// run is the command: no argument prints the overview, a chapter's name runs
// it, "all" runs every chapter. An unknown chapter prints the list on stderr
// and returns 2, a failing chapter 1.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		overview(stdout)
		return 0
	}
	var todo []chapter
	for _, c := range sortedChapters() {
		if args[0] == "all" || args[0] == c.name {
			todo = append(todo, c)
		}
	}
	if len(todo) == 0 || len(args) > 1 {
		fmt.Fprintf(stderr, "tour: unknown chapter %q; the chapters are:\n", strings.Join(args, " "))
		listChapters(stderr)
		return 2
	}
	for i, c := range todo {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		if err := runChapter(stdout, c); err != nil {
			fmt.Fprintln(stderr, "tour:", err)
			return 1
		}
	}
	return 0
}

func main() {
	out := bufio.NewWriter(os.Stdout)
	code := run(os.Args[1:], out, os.Stderr)
	if err := out.Flush(); err != nil && code == 0 {
		code = 1
	}
	os.Exit(code)
}

// page is where a chapter writes: prose and output (it is an io.Writer), the
// Go calls behind a step (calls), and definitions (term).
type page struct {
	io.Writer
	defined map[string]bool
	shown   []string // every line calls printed, for the test
}

func newPage(w io.Writer) *page { return &page{Writer: w, defined: map[string]bool{}} }

// calls prints the Go lines a step runs, each after "» ". Every line must be
// a line (or part of one) of the chapter's source file.
func (p *page) calls(code string) {
	for _, line := range strings.Split(strings.TrimSpace(code), "\n") {
		line = strings.TrimSpace(line)
		p.shown = append(p.shown, line)
		fmt.Fprintf(p, "  » %s\n", line)
	}
}

// term defines word the first time a chapter uses it, from the glossary.
func (p *page) term(words ...string) {
	for _, word := range words {
		if p.defined[word] {
			continue
		}
		def, ok := glossary[word]
		if !ok {
			panic("tour: no glossary entry for " + word)
		}
		p.defined[word] = true
		fmt.Fprintf(p, "  (%s: %s)\n", word, def)
	}
}

// glossary defines the terms the chapters use. A chapter calls term before
// its first use of one; the test checks that no glossary word appears in a
// chapter before its definition.
var glossary = map[string]string{
	"informer":      "a client-side cache of API objects that a controller lists from; it sees changes late",
	"expectations":  "a record of the creates and deletes a controller has made but not yet seen in its informer",
	"reconcile":     "one pass of a controller: read the state, compare it with the spec, act",
	"requeue":       "asking to be run again after a delay (controller-runtime's Result.RequeueAfter)",
	"multi-host":    "a worker replica made of several pods (hosts) that live and die together",
	"DeleteAllOf":   "one API call deleting every pod matching a label selector",
	"JobFlow":       "Volcano's workflow object: flows (each a batch Job) and the flows each depends on",
	"heartbeat":     "a node's periodic report of its limit, its running jobs and its usage",
	"lease":         "a slot reserved on a node for one job until a deadline",
	"ACK":           "the node's answer that it accepted a dispatched job",
	"epoch":         "a number that grows with every new holder, so a stale holder's writes can be refused (a fencing token)",
	"TTL":           "time to live: how long a lock or a reservation counts before another may take it",
	"CAS":           "compare-and-swap: a write that succeeds only if the stored value is still the one read",
	"device plugin": "the kubelet plugin that hands a pod its GPUs when the pod starts",
	"Filter":        "the scheduler-extender call that says which nodes can take a pod",
	"Bind":          "the scheduler-extender call that assigns a pod to the chosen node",
	"binpack":       "prefer the fullest device or node that still fits, to keep others free",
	"replica set":   "in vcluster, how many nodes of each type a virtual cluster holds",
	"replenish":     "replace a virtual cluster's dead nodes with free ones of the same type",
}
