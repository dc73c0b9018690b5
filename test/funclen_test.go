package test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"
)

// maxFunctionLines is the longest a production function may be, from its
// func keyword to its closing brace (the house rule: a function longer
// than this does more than one job).
const maxFunctionLines = 100

// TestFunctionLength holds every non-test function and method of the
// module to maxFunctionLines.
func TestFunctionLength(t *testing.T) {
	fset := token.NewFileSet()
	for _, p := range listPackages(t) {
		for _, name := range p.sources {
			path := filepath.Join(p.dir, name)
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatalf("parse %s: %v", path, err)
			}
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				start, end := fset.Position(fd.Pos()), fset.Position(fd.End())
				if n := end.Line - start.Line + 1; n > maxFunctionLines {
					t.Errorf("%s:%d: %s is %d lines, over %d", filepath.Join(p.path, name), start.Line, fd.Name.Name, n, maxFunctionLines)
				}
			}
		}
	}
}
