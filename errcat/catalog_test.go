package errcat_test

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/chatgw/gateway/errcat"
)

// additions are the codes chatgw adds to the Codes table (docs/contract.md#codes).
var additions = []errcat.Code{errcat.MethodNotAllowed, errcat.ModelNotConfigured, errcat.ResponseNotFound}

// specRow is what the Codes table states about one code.
type specRow struct {
	Type   errcat.Type
	Status int
	Param  *string // the "(`param`)" of the Condition column, if any
}

// paramRE finds a param named in the Condition column: "(`name`)".
var paramRE = regexp.MustCompile("\\(`([^`]+)`\\)")

// readSpecCodes parses testdata/spec_codes.md, a verbatim copy of the Codes table.
func readSpecCodes(t *testing.T) (order []errcat.Code, rows map[errcat.Code]specRow) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "spec_codes.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows = make(map[errcat.Code]specRow)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "| `") {
			continue // header, separator, comment
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 4 {
			t.Fatalf("spec row has %d cells, want 4: %q", len(cells), line)
		}
		code := errcat.Code(strings.Trim(strings.TrimSpace(cells[0]), "`"))
		status, err := strconv.Atoi(strings.TrimSpace(cells[2]))
		if err != nil {
			t.Fatalf("spec row %q: status: %v", code, err)
		}
		row := specRow{Type: errcat.Type(strings.TrimSpace(cells[1])), Status: status}
		switch m := paramRE.FindAllStringSubmatch(cells[3], -1); len(m) {
		case 0:
		case 1:
			row.Param = &m[0][1]
		default:
			t.Fatalf("spec row %q names %d params", code, len(m))
		}
		if _, dup := rows[code]; dup {
			t.Fatalf("spec lists %q twice", code)
		}
		order = append(order, code)
		rows[code] = row
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return order, rows
}

// TestCatalogMatchesSpec guards against drift between the catalog and the spec:
// same codes (plus chatgw's additions), types, statuses, params and order.
func TestCatalogMatchesSpec(t *testing.T) {
	specOrder, spec := readSpecCodes(t)
	if len(specOrder) != 50 {
		t.Fatalf("spec table has %d codes, the spec says 50", len(specOrder))
	}

	entries := errcat.Entries()
	got := make(map[errcat.Code]specRow)
	var order []errcat.Code
	for _, e := range entries {
		if slices.Contains(additions, e.Code) {
			continue
		}
		got[e.Code] = specRow{Type: e.Type, Status: e.HTTPStatus, Param: e.TypicalParam}
		order = append(order, e.Code)
	}
	if diff := cmp.Diff(spec, got); diff != "" {
		t.Errorf("catalog vs spec mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(specOrder, order); diff != "" {
		t.Errorf("catalog order vs spec mismatch (-want +got):\n%s", diff)
	}
	for _, c := range additions {
		if !errcat.Known(c) {
			t.Errorf("addition %q missing from the catalog", c)
		}
		if _, ok := spec[c]; ok {
			t.Errorf("addition %q is in the spec now: drop it from additions", c)
		}
	}
	if want := len(spec) + len(additions); len(entries) != want {
		t.Errorf("len(Entries()) = %d, want %d", len(entries), want)
	}
	if c := errcat.Published(); c.Count != len(entries) || c.Version != 1 {
		t.Errorf("Published() count %d version %d, want %d and 1", c.Count, c.Version, len(entries))
	}
}

// codeConstants returns the value of every constant of type Code declared in the
// package's non-test files.
func codeConstants(t *testing.T) map[string]errcat.Code {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	consts := make(map[string]errcat.Code)
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
					continue
				}
				for i, n := range vs.Names {
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("%s: constant %s is not a string literal", fset.Position(n.Pos()), n.Name)
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					consts[n.Name] = errcat.Code(v)
				}
			}
		}
	}
	return consts
}

// TestCodeConstantsCatalogued checks that the Code constants and the catalog hold
// the same codes, so a handler emitting a constant always emits a catalogued code.
func TestCodeConstantsCatalogued(t *testing.T) {
	consts := codeConstants(t)
	var fromConsts []errcat.Code
	seen := make(map[errcat.Code]string)
	for name, c := range consts {
		if prev, dup := seen[c]; dup {
			t.Errorf("constants %s and %s both are %q", prev, name, c)
		}
		seen[c] = name
		fromConsts = append(fromConsts, c)
	}
	var fromCatalog []errcat.Code
	for _, e := range errcat.Entries() {
		fromCatalog = append(fromCatalog, e.Code)
	}
	slices.Sort(fromConsts)
	slices.Sort(fromCatalog)
	if diff := cmp.Diff(fromConsts, fromCatalog); diff != "" {
		t.Errorf("Code constants vs catalog mismatch (-constants +catalog):\n%s", diff)
	}
}

// TestEntriesDocumented checks the texts every entry must have.
func TestEntriesDocumented(t *testing.T) {
	types := []errcat.Type{
		errcat.TypeAuthentication, errcat.TypePermission, errcat.TypeRateLimit, errcat.TypeTooLarge,
		errcat.TypeInvalidRequest, errcat.TypeNotFound, errcat.TypeConflict, errcat.TypeAPI,
		errcat.TypeTimeout, errcat.TypeOverloaded,
	}
	for _, e := range errcat.Entries() {
		t.Run(string(e.Code), func(t *testing.T) {
			if e.Title == "" || e.Description == "" || e.Remediation == "" {
				t.Fatalf("entry lacks title, description or remediation: %+v", e)
			}
			if strings.ContainsAny(e.Title, "`\n") || strings.HasSuffix(e.Title, ".") {
				t.Errorf("title %q: want plain text without a final period (it is sent as a message)", e.Title)
			}
			if strings.Count(e.Description, "`")%2 != 0 || strings.Count(e.Remediation, "`")%2 != 0 {
				t.Errorf("unpaired backtick in description or remediation")
			}
			if e.TypicalParam != nil && !strings.Contains(e.Description, "`param` is `"+*e.TypicalParam+"`") {
				t.Errorf("description does not say \"`param` is `%s`\"", *e.TypicalParam)
			}
			if !slices.Contains(types, e.Type) {
				t.Errorf("type %q is not a catalog type", e.Type)
			}
			if e.HTTPStatus < 400 || e.HTTPStatus > 599 {
				t.Errorf("status %d is not an error status", e.HTTPStatus)
			}
			if got := errcat.Lookup(e.Code); !cmp.Equal(got, e) {
				t.Errorf("Lookup(%q) mismatch (-want +got):\n%s", e.Code, cmp.Diff(e, got))
			}
		})
	}
}

// TestDecidedTexts pins the texts the decisions fix.
func TestDecidedTexts(t *testing.T) {
	tests := []struct {
		code     errcat.Code
		title    string
		mentions []string
	}{
		{errcat.RateLimitExceeded, "Rate limit exceeded", []string{"`Retry-After`", "`Rate limit exceeded`"}},
		{errcat.CloudBDailyQuotaExhausted, "cloudB daily quota exhausted", []string{"`available_fallbacks`", "`Retry-After`", "00:00 UTC"}},
		{errcat.CloudConsentRequired, "Cloud consent required", []string{"`required_consents`", "`content_hash`", "`doc_name`"}},
		{errcat.UpstreamBadRequest, "Upstream rejected the request", []string{"`message`", "`Retry-After`"}},
	}
	for _, tc := range tests {
		t.Run(string(tc.code), func(t *testing.T) {
			e := errcat.Lookup(tc.code)
			if e.Title != tc.title {
				t.Errorf("title = %q, want %q", e.Title, tc.title)
			}
			for _, m := range tc.mentions {
				if !strings.Contains(e.Description, m) {
					t.Errorf("description does not mention %s", m)
				}
			}
		})
	}
}

func TestLookupUnknown(t *testing.T) {
	if errcat.Known("no_such_code") {
		t.Error(`Known("no_such_code") = true`)
	}
	if diff := cmp.Diff(errcat.Lookup(errcat.InternalError), errcat.Lookup("no_such_code")); diff != "" {
		t.Errorf("Lookup(unknown) mismatch (-want +got):\n%s", diff)
	}
}
