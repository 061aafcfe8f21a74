// Package doclinks checks the Go doc links of both modules: every [Name],
// [Type.Method] or [pkg.Name] in a doc comment that names an exported
// identifier of a plancore package must resolve, so a rename cannot leave a
// comment pointing at an identifier that no longer exists.
package doclinks

import (
	"go/ast"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
)

const modulePath = "github.com/plancore/plancore"

// pkgSyms are one package's exported names: "Name" and "Recv.Name" for
// methods and struct fields.
type pkgSyms map[string]bool

// TestDocLinksResolve parses every non-test Go file of both modules and
// checks each bracketed exported name in its comments against the package it
// names. Breaking it: write [NoSuchThing] in any doc comment.
func TestDocLinksResolve(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	pkgs := map[string]pkgSyms{}      // import path -> symbols
	files := map[string][]*ast.File{} // import path -> files
	imports := map[*ast.File]map[string]string{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		ip := modulePath
		if rel != "." {
			ip += "/" + filepath.ToSlash(rel)
		}
		if pkgs[ip] == nil {
			pkgs[ip] = pkgSyms{}
		}
		collect(pkgs[ip], f)
		files[ip] = append(files[ip], f)
		imports[f] = fileImports(f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for ip, fs := range files {
		for _, f := range fs {
			for _, cg := range f.Comments {
				for _, name := range bracketed(cg.Text()) {
					checked++
					if !resolves(name, ip, imports[f], pkgs) {
						t.Errorf("%s: doc link [%s] names nothing in %s", fset.Position(cg.Pos()), name, ip)
					}
				}
			}
		}
	}
	t.Logf("%d doc links checked in %d packages", checked, len(files))
}

// collect adds f's exported declarations to syms.
func collect(syms pkgSyms, f *ast.File) {
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			name := d.Name.Name
			if d.Recv != nil && len(d.Recv.List) > 0 {
				name = recvName(d.Recv.List[0].Type) + "." + name
			}
			syms[name] = true
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					syms[s.Name.Name] = true
					if st, ok := s.Type.(*ast.StructType); ok {
						for _, fld := range st.Fields.List {
							for _, n := range fld.Names {
								syms[s.Name.Name+"."+n.Name] = true
							}
						}
					}
					if it, ok := s.Type.(*ast.InterfaceType); ok {
						for _, m := range it.Methods.List {
							for _, n := range m.Names {
								syms[s.Name.Name+"."+n.Name] = true
							}
						}
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						syms[n.Name] = true
					}
				}
			}
		}
	}
}

func recvName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvName(t.X)
	case *ast.IndexExpr:
		return recvName(t.X)
	case *ast.IndexListExpr:
		return recvName(t.X)
	case *ast.Ident:
		return t.Name
	}
	return ""
}

// fileImports maps the names f's imports are known by to their paths.
func fileImports(f *ast.File) map[string]string {
	m := map[string]string{}
	for _, is := range f.Imports {
		p := strings.Trim(is.Path.Value, `"`)
		name := p[strings.LastIndex(p, "/")+1:]
		if is.Name != nil {
			name = is.Name.Name
		}
		m[name] = p
	}
	return m
}

// bracketed returns the doc links of text, as go/doc/comment parses them: a
// bracketed identifier or dotted name that starts a word.
func bracketed(text string) []string {
	var out []string
	var p comment.Parser
	p.LookupSym = func(recv, name string) bool { return true }
	p.LookupPackage = func(name string) (string, bool) { return name, true }
	var walk func(ts []comment.Text)
	walk = func(ts []comment.Text) {
		for _, t := range ts {
			switch l := t.(type) {
			case *comment.DocLink:
				name := l.Name
				if l.Recv != "" {
					name = l.Recv + "." + name
				}
				if l.ImportPath != "" {
					name = l.ImportPath + "." + name
				}
				out = append(out, name)
			case *comment.Link:
				walk(l.Text)
			case *comment.Italic, comment.Plain:
			}
		}
	}
	for _, b := range p.Parse(text).Content {
		switch b := b.(type) {
		case *comment.Paragraph:
			walk(b.Text)
		case *comment.List:
			for _, it := range b.Items {
				for _, c := range it.Content {
					if para, ok := c.(*comment.Paragraph); ok {
						walk(para.Text)
					}
				}
			}
		}
	}
	return out
}

// resolves reports whether a doc link found in package ip names an
// identifier. Links to packages outside both modules, and names that are not
// exported (a bracketed index such as [i]), are not checked.
func resolves(link, ip string, imports map[string]string, pkgs map[string]pkgSyms) bool {
	parts := strings.Split(link, ".")
	for _, part := range parts {
		if part == "" {
			return true // not an identifier: no link
		}
	}
	if !unicode.IsUpper(rune(parts[len(parts)-1][0])) && !(len(parts) > 1 && unicode.IsUpper(rune(parts[0][0]))) {
		return true
	}
	if syms := pkgs[ip]; syms[link] {
		return true
	}
	if len(parts) >= 2 {
		if path, ok := imports[parts[0]]; ok || pkgs[modulePath+"/"+parts[0]] != nil {
			if !ok {
				path = modulePath + "/" + parts[0]
			}
			if !strings.HasPrefix(path, modulePath) {
				return true
			}
			return pkgs[path][strings.Join(parts[1:], ".")]
		}
	}
	return false
}
