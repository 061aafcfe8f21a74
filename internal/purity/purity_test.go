package purity

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const modulePath = "github.com/plancore/plancore"

// corePackages are the packages that must stay pure. A package that does not exist
// yet is skipped; its issue creates it.
var corePackages = []string{"reconcile", "dag", "capacity", "lock", "vcluster", "gpu", "expectations", "internal/wire", "internal/strtab"}

// shellFiles lists, per core package, the only files allowed to touch the outside
// world: the ones that hold Apply, store shells and thread-safe wrappers. They may
// read the clock, sleep, draw jitter and import golang.org/x/sync; they still may
// not import anything else outside the allowed set. Each entry says why.
var shellFiles = map[string]string{}

// registerShellFile adds one exemption; each core keeps its own list in its own
// file of this package so the lists never collide.
func registerShellFile(path, why string) {
	if why == "" {
		panic("purity: exemption for " + path + " needs a reason")
	}
	shellFiles[path] = why
}

// bannedCalls are package-level identifiers that read the clock, sleep, print or
// draw from a global random source.
var bannedCalls = map[string]map[string]bool{
	"time": {"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true,
		"AfterFunc": true, "Tick": true, "NewTimer": true, "NewTicker": true},
	"fmt":                {"Print": true, "Printf": true, "Println": true},
	"k8s.io/utils/clock": {"RealClock": true},
}

// randConstructors are the only math/rand(/v2) functions a core may call: they
// build a generator from an explicit seed, which is deterministic.
var randConstructors = map[string]bool{
	"New": true, "NewSource": true, "NewPCG": true, "NewChaCha8": true, "NewZipf": true,
}

// bannedImports may not appear in any core file, shell or not.
var bannedImports = map[string]bool{
	"os": true, "os/exec": true, "os/signal": true, "log": true, "log/slog": true,
	"net": true, "net/http": true, "syscall": true, "unsafe": true, "io/ioutil": true,
	"crypto/rand": true, "io/fs": true,
}

func allowedImport(path string, shell bool) bool {
	if bannedImports[path] {
		return false
	}
	switch {
	case !strings.Contains(strings.Split(path, "/")[0], "."):
		return true // standard library
	case path == "k8s.io/api" || strings.HasPrefix(path, "k8s.io/api/"),
		path == "k8s.io/apimachinery" || strings.HasPrefix(path, "k8s.io/apimachinery/"):
		return true
	case path == modulePath:
		return true // the shared InvalidError
	case path == "sigs.k8s.io/json" || path == "sigs.k8s.io/yaml" || path == "sigs.k8s.io/yaml/goyaml.v3":
		// Pure codecs (no I/O, no clock) that apimachinery's own decoders are
		// built on: strict decoding that names unknown and duplicate fields;
		// goyaml.v3 (vendored by sigs.k8s.io/yaml) for its node tree, which
		// shows aliases unexpanded.
		return true
	case path == "k8s.io/utils/clock":
		// Only the interfaces: a core may name clock.Clock in a shell's field, but
		// reading it is still a banned call outside shell files (see bannedCalls).
		return true
	case shell && (path == "golang.org/x/sync" || strings.HasPrefix(path, "golang.org/x/sync/")):
		return true
	}
	for _, p := range corePackages {
		if path == modulePath+"/"+p || strings.HasPrefix(path, modulePath+"/"+p+"/") {
			return true
		}
	}
	return false
}

// checkFile returns every purity violation in one parsed file.
func checkFile(fset *token.FileSet, f *ast.File, shell bool) []string {
	var problems []string
	report := func(pos token.Pos, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("%s: %s", fset.Position(pos), fmt.Sprintf(format, args...)))
	}
	// local name -> import path, for resolving selector expressions.
	names := map[string]string{}
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			report(imp.Pos(), "unreadable import %s", imp.Path.Value)
			continue
		}
		if !allowedImport(path, shell) {
			report(imp.Pos(), "imports %q: core packages may import only the standard library, k8s.io/api, k8s.io/apimachinery and other cores", path)
		}
		local := path[strings.LastIndex(path, "/")+1:]
		if path == "math/rand/v2" {
			local = "rand"
		}
		if imp.Name != nil {
			local = imp.Name.Name
		}
		names[local] = path
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			if !shell {
				report(n.Pos(), "starts a goroutine: cores are synchronous")
			}
		case *ast.SelectorExpr:
			pkgIdent, ok := n.X.(*ast.Ident)
			if !ok || pkgIdent.Obj != nil {
				return true // a field or method, not a package-qualified name
			}
			path, ok := names[pkgIdent.Name]
			if !ok || shell {
				return true
			}
			name := n.Sel.Name
			switch {
			case bannedCalls[path][name]:
				report(n.Pos(), "uses %s.%s: cores take time and output from their caller", path, name)
			case (path == "math/rand" || path == "math/rand/v2") && ast.IsExported(name) && !randConstructors[name] && !isRandType(name):
				report(n.Pos(), "uses %s.%s: cores draw randomness only from a seeded generator", path, name)
			}
		}
		return true
	})
	return problems
}

// isRandType reports whether name is a type of math/rand(/v2), which a core may
// mention (e.g. a *rand.Rand built from a seed).
func isRandType(name string) bool {
	switch name {
	case "Rand", "Source", "Source64", "PCG", "ChaCha8", "Zipf":
		return true
	}
	return false
}

// repoRoot finds the module root from this package's directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("purity: go.mod not found above the test directory")
		}
		dir = parent
	}
}

func TestCorePackagesArePure(t *testing.T) {
	root := repoRoot(t)
	fset := token.NewFileSet()
	seenPackages, seenShell := 0, map[string]bool{}
	for _, pkg := range corePackages {
		dir := filepath.Join(root, pkg)
		if _, err := os.Stat(dir); os.IsNotExist(err) {
			continue
		}
		seenPackages++
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "testdata" {
					return filepath.SkipDir
				}
				// <core>test (reconcile/reconciletest, ...) is the core's
				// property-testing kit, imported only by tests: it may import
				// rapid, as net/http/httptest may do what net/http does not.
				if path == filepath.Join(dir, filepath.Base(pkg)+"test") {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			_, shell := shellFiles[rel]
			if shell {
				seenShell[rel] = true
			}
			// Object resolution stays on: it tells a local variable named like
			// an import (time := ...) from the package itself.
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			for _, p := range checkFile(fset, f, shell) {
				t.Error(p)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("walking %s: %v", pkg, err)
		}
	}
	if seenPackages == 0 {
		t.Fatal("purity: no core package found; the guard is checking nothing")
	}
	// A stale exemption would silently widen the hole when a file of that name
	// comes back, so every listed file must exist.
	for _, path := range slices.Sorted(mapsKeys(shellFiles)) {
		if !seenShell[path] {
			t.Errorf("purity: exempt file %s does not exist; remove it from the list", path)
		}
	}
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestGuardCatchesViolations proves the checker can fail: each snippet must be
// reported, and the clean one must not.
func TestGuardCatchesViolations(t *testing.T) {
	cases := []struct {
		name, src string
		shell     bool
		want      int
	}{
		{"clock", `package p; import "time"; func f() time.Time { return time.Now() }`, false, 1},
		{"clock by value", `package p; import "time"; var now = time.Now`, false, 1},
		{"since", `package p; import "time"; func f(t time.Time) time.Duration { return time.Since(t) }`, false, 1},
		{"sleep", `package p; import "time"; func f() { time.Sleep(1) }`, false, 1},
		{"renamed time", `package p; import clk "time"; func f() { _ = clk.Now() }`, false, 1},
		{"global rand", `package p; import "math/rand"; func f() int { return rand.Intn(3) }`, false, 1},
		{"global rand v2", `package p; import "math/rand/v2"; func f() int { return rand.IntN(3) }`, false, 1},
		{"seeded rand ok", `package p; import "math/rand/v2"; func f() *rand.Rand { return rand.New(rand.NewPCG(1, 2)) }`, false, 0},
		{"os", `package p; import "os"; func f() { os.Exit(1) }`, false, 1},
		{"print", `package p; import "fmt"; func f() { fmt.Println("x") }`, false, 1},
		{"fprintf ok", `package p; import ("fmt"; "io"); func f(w io.Writer) { fmt.Fprintf(w, "x") }`, false, 0},
		{"goroutine", `package p; func f() { go f() }`, false, 1},
		{"foreign import", `package p; import _ "github.com/redis/go-redis/v9"`, false, 1},
		{"x/sync outside shell", `package p; import _ "golang.org/x/sync/errgroup"`, false, 1},
		{"x/sync in shell ok", `package p; import _ "golang.org/x/sync/errgroup"`, true, 0},
		{"clock in shell ok", `package p; import "time"; func f() { time.Sleep(1) }`, true, 0},
		{"os banned even in shell", `package p; import "os"; var _ = os.Args`, true, 1},
		{"local var named time ok", `package p; type c struct{}; func (c) Now() int { return 0 }; func f() int { time := c{}; return time.Now() }`, false, 0},
		{"k8s ok", `package p; import _ "k8s.io/api/core/v1"; import _ "k8s.io/apimachinery/pkg/labels"`, false, 0},
		{"other core ok", `package p; import _ "github.com/plancore/plancore/expectations"`, false, 0},
		{"root package ok", `package p; import _ "github.com/plancore/plancore"`, false, 0},
		{"clock interfaces ok", `package p; import "k8s.io/utils/clock"; var c clock.Clock`, false, 0},
		{"real clock outside a shell", `package p; import "k8s.io/utils/clock"; var c clock.Clock = clock.RealClock{}`, false, 1},
		{"fake not allowed", `package p; import _ "github.com/plancore/plancore/fake"`, false, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "snippet.go", tc.src, 0)
			if err != nil {
				t.Fatal(err)
			}
			got := checkFile(fset, f, tc.shell)
			if len(got) != tc.want {
				t.Errorf("got %d problems, want %d: %q", len(got), tc.want, got)
			}
		})
	}
}
