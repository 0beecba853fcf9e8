package auth_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/chatgw/gateway/auth"
)

// newFileCatalog writes data to a token file in a temporary directory and loads it.
func newFileCatalog(t *testing.T, data string) (*auth.FileCatalog, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens.json")
	writeFile(t, path, data)
	f, err := auth.NewFileCatalog(path)
	if err != nil {
		t.Fatalf("NewFileCatalog: %v", err)
	}
	return f, path
}

func catalogWith(tokens ...string) string {
	s := `{"tenants": [{"id": "a"}], "tokens": [`
	for i, tok := range tokens {
		if i > 0 {
			s += ",\n"
		}
		s += fmt.Sprintf(`{"token": %q, "tenant": "a"}`, tok)
	}
	return s + "]}"
}

func TestFileCatalogReload(t *testing.T) {
	f, path := newFileCatalog(t, catalogWith("old"))
	if f.Path() != path {
		t.Errorf("Path() = %s, want %s", f.Path(), path)
	}
	old, ok := f.Lookup(auth.DigestOf("old"))
	if !ok {
		t.Fatal("old token not found")
	}
	if _, ok := f.Tenant("a"); !ok {
		t.Error(`Tenant("a") not found`)
	}

	// A good file replaces the catalog.
	writeFile(t, path, catalogWith("new"))
	if err := f.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if _, ok := f.Lookup(auth.DigestOf("old")); ok {
		t.Error("old token still valid after reload")
	}
	if _, ok := f.Lookup(auth.DigestOf("new")); !ok {
		t.Error("new token not found after reload")
	}
	if old.Tenant.ID != "a" {
		t.Error("principal handed out before reload changed")
	}

	// A bad file keeps the catalog and says why, with file and line.
	snapshot := f.Catalog()
	writeFile(t, path, catalogWith("new", "x")+"\n\n,")
	err := f.Reload()
	pe, ok := errors.AsType[*auth.ParseError](err)
	if !ok || pe.File != path || pe.Line != 4 {
		t.Errorf("Reload(bad) error = %v, want a *ParseError at %s:4", err, path)
	}
	if f.Catalog() != snapshot {
		t.Error("bad reload replaced the catalog")
	}
	if _, ok := f.Lookup(auth.DigestOf("new")); !ok {
		t.Error("token lost after a bad reload")
	}

	writeFile(t, path, `{"tenants": [{"id": "a"}], "tokens": [{"token": "t", "tenant": "b"}]}`)
	if err := f.Reload(); err == nil {
		t.Error("Reload(unknown tenant) succeeded")
	}
	if _, ok := f.Lookup(auth.DigestOf("new")); !ok {
		t.Error("token lost after a bad reload")
	}
}

func TestNewFileCatalogErrors(t *testing.T) {
	if _, err := auth.NewFileCatalog(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("NewFileCatalog(missing) succeeded")
	}
	path := filepath.Join(t.TempDir(), "tokens.json")
	writeFile(t, path, catalogWith("a", "a"))
	_, err := auth.NewFileCatalog(path)
	if want := path + ":2: tokens[1]: duplicate token (same digest as the token at line 1)"; err == nil || err.Error() != want {
		t.Errorf("NewFileCatalog(duplicate) error = %v, want %s", err, want)
	}
}

func TestLookupDoesNotAllocate(t *testing.T) {
	f, _ := newFileCatalog(t, catalogWith("hit"))
	hit, miss := auth.DigestOf("hit"), auth.DigestOf("miss")
	allocs := testing.AllocsPerRun(1000, func() {
		if _, ok := f.Lookup(hit); !ok {
			t.Fatal("hit not found")
		}
		if _, ok := f.Lookup(miss); ok {
			t.Fatal("miss found")
		}
	})
	if allocs != 0 {
		t.Errorf("FileCatalog.Lookup allocates %v times per run, want 0", allocs)
	}
}

// TestLookupDuringReload runs lookups while the file is reloaded between two
// catalogs; run with -race. A token present in both must always be found.
func TestLookupDuringReload(t *testing.T) {
	f, path := newFileCatalog(t, catalogWith("stable", "one"))
	stable := auth.DigestOf("stable")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				p, ok := f.Lookup(stable)
				if !ok || p.Tenant.ID != "a" {
					t.Error("stable token not found during reload")
					return
				}
				f.Lookup(auth.DigestOf("one"))
				f.Tenant("a")
			}
		})
	}
	for i := range 200 {
		data := catalogWith("stable", "one")
		if i%2 == 1 {
			data = catalogWith("stable", "two")
		}
		if i%7 == 0 {
			data = "{broken"
		}
		writeFile(t, path, data)
		err := f.Reload()
		if (err != nil) != (i%7 == 0) {
			t.Errorf("Reload %d: %v", i, err)
		}
	}
	close(stop)
	wg.Wait()
}

func BenchmarkLookup(b *testing.B) {
	c := auth.MustStatic([]*auth.Tenant{{ID: "a"}}, map[string]auth.StaticToken{"tok": {Tenant: "a"}})
	d := auth.DigestOf("tok")
	b.ReportAllocs()
	for b.Loop() {
		c.Lookup(d)
	}
}

// TestFileCatalogChecks: a check refuses a file at start and on Reload,
// which then keeps the old catalog.
func TestFileCatalogChecks(t *testing.T) {
	noB := func(c *auth.Catalog) error {
		if _, ok := c.Tenant("b"); ok {
			return errors.New("tenant b is not allowed here")
		}
		return nil
	}
	path := filepath.Join(t.TempDir(), "tokens.json")
	writeFile(t, path, `{"tenants": [{"id": "b"}], "tokens": []}`)
	if _, err := auth.NewFileCatalog(path, noB); err == nil || err.Error() != path+": tenant b is not allowed here" {
		t.Errorf("NewFileCatalog(refused) error = %v, want the check's, after the path", err)
	}
	writeFile(t, path, catalogWith("old"))
	f, err := auth.NewFileCatalog(path, noB)
	if err != nil {
		t.Fatalf("NewFileCatalog: %v", err)
	}
	writeFile(t, path, `{"tenants": [{"id": "b"}], "tokens": [{"token": "new", "tenant": "b"}]}`)
	if err := f.Reload(); err == nil {
		t.Error("Reload(refused) succeeded")
	}
	if _, ok := f.Lookup(auth.DigestOf("old")); !ok {
		t.Error("token lost after a refused reload")
	}
}
