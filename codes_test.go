package gateway_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chatgw/gateway/errcat"
)

// TestHandlersEmitOnlyCatalogedCodes walks every Go file of the module and fails
// when an error code is written as a string literal (errcat.New("x", ...),
// errcat.Error{Code: "x"}, errcat.Code("x")) that the catalog does not list.
// Codes written through errcat's constants are checked by errcat's own tests.
func TestHandlersEmitOnlyCatalogedCodes(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			for _, lit := range codeLiterals(n) {
				code, _ := strconv.Unquote(lit.Value)
				if !errcat.Known(errcat.Code(code)) {
					t.Errorf("%s: error code %q is not in the catalog", fset.Position(lit.Pos()), code)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// codeLiterals returns the string literals that n uses as an error code.
func codeLiterals(n ast.Node) []*ast.BasicLit {
	var out []*ast.BasicLit
	add := func(e ast.Expr) {
		if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			out = append(out, lit)
		}
	}
	switch n := n.(type) {
	case *ast.CallExpr:
		if sel, ok := n.Fun.(*ast.SelectorExpr); ok && len(n.Args) > 0 {
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "errcat" {
				switch sel.Sel.Name {
				case "New", "Newf", "Code":
					add(n.Args[0])
				}
			}
		}
	case *ast.KeyValueExpr:
		if k, ok := n.Key.(*ast.Ident); ok && k.Name == "Code" {
			add(n.Value)
		}
	}
	return out
}
