package auth

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// FileCatalog is the default TokenCatalog: the token file (format in ParseCatalog),
// parsed by LoadFile and held as an immutable *Catalog behind an atomic pointer.
// Lookup and Tenant read the current catalog without locking; Reload swaps in a
// new one, so a request sees either the old catalog or the new one, never a mix.
// A FileCatalog is safe for concurrent use.
type FileCatalog struct {
	path   string
	checks []func(*Catalog) error
	mu     sync.Mutex // serializes Reload
	cur    atomic.Pointer[Catalog]
}

var _ TokenCatalog = (*FileCatalog)(nil)

// NewFileCatalog loads the token file at path. It fails, with the error of
// LoadFile (a *ParseError naming the line for a bad file), when the file cannot
// be read or parsed, or with the first error of checks, which every catalog
// the file gives must pass, now and on Reload (gatewayd checks that a tenant
// whose content_guard is set has a classifier); gatewayd then refuses to
// start.
func NewFileCatalog(path string, checks ...func(*Catalog) error) (*FileCatalog, error) {
	f := &FileCatalog{path: path, checks: checks}
	c, err := f.load()
	if err != nil {
		return nil, err
	}
	f.cur.Store(c)
	return f, nil
}

// load reads and checks the file.
func (f *FileCatalog) load() (*Catalog, error) {
	c, err := LoadFile(f.path)
	if err != nil {
		return nil, err
	}
	for _, check := range f.checks {
		if err := check(c); err != nil {
			return nil, fmt.Errorf("%s: %w", f.path, err)
		}
	}
	return c, nil
}

// Path returns the path of the token file.
func (f *FileCatalog) Path() string { return f.path }

// Lookup returns the principal of the token whose SHA-256 is d in the current
// catalog, or (nil, false). See Catalog.Lookup; it does not allocate.
func (f *FileCatalog) Lookup(d Digest) (*Principal, bool) {
	return f.cur.Load().Lookup(d)
}

// Tenant returns the tenant with the given id in the current catalog.
func (f *FileCatalog) Tenant(id string) (*Tenant, bool) {
	return f.cur.Load().Tenant(id)
}

// Catalog returns the current catalog, a snapshot that later reloads do not change.
func (f *FileCatalog) Catalog() *Catalog { return f.cur.Load() }

// Reload re-reads the token file (gatewayd calls it on SIGHUP). On success the
// new catalog replaces the old one for every later Lookup; principals already
// handed out stay valid. On failure the old catalog stays in place and Reload
// returns why: the read error, a *ParseError naming file and line, or the
// error of a check. Concurrent Reloads are serialized.
func (f *FileCatalog) Reload() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.load()
	if err != nil {
		return err
	}
	f.cur.Store(c)
	return nil
}
