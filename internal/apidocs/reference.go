package apidocs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	swaggerfiles "github.com/swaggo/files/v2"
)

// The API reference is Swagger UI, as the Go module github.com/swaggo/files/v2
// embeds its release files (swagger-ui-bundle.js, swagger-ui.css, ...). The
// gateway serves the bundle, its stylesheet and icons, and two files of its
// own: the page (assets/reference.html) and the initializer
// (assets/reference.js), which reads the document URL from the page so that
// the page holds no inline script.

// referenceDir is the directory, under /docs, that holds the reference and its
// files; ReferenceURL is its page.
const referenceDir = "/api/"

// referenceFiles are the files served under /docs/api/, by name: Swagger UI's
// from the module, then the gateway's own.
var referenceFiles = map[string]string{
	"swagger-ui-bundle.js": "swaggerui",
	"swagger-ui.css":       "swaggerui",
	"favicon-32x32.png":    "swaggerui",
	"favicon-16x16.png":    "swaggerui",
	"reference.js":         "assets",
	"reference.css":        "assets",
}

// staticFile is one served file: its bytes, type and strong ETag.
type staticFile struct {
	body  []byte
	ctype string
	etag  string
}

var (
	loadFiles   sync.Once
	staticFiles map[string]*staticFile
)

// files reads the reference's files once per process: the bundle is 1.4 MB,
// and gateways built in tests share it.
func files() map[string]*staticFile {
	loadFiles.Do(func() {
		staticFiles = map[string]*staticFile{}
		for name, from := range referenceFiles {
			var b []byte
			var err error
			if from == "assets" {
				b, err = assets.ReadFile("assets/" + name)
			} else {
				b, err = fs.ReadFile(swaggerfiles.FS, name)
			}
			if err != nil {
				panic("apidocs: " + err.Error())
			}
			sum := sha256.Sum256(b)
			ctype := mime.TypeByExtension(path.Ext(name))
			if ctype == "" {
				ctype = "application/octet-stream"
			}
			staticFiles[name] = &staticFile{body: b, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:16]) + `"`}
		}
	})
	return staticFiles
}

// referencePolicy is the Content-Security-Policy of the reference page: its
// scripts and styles are files of the page's own origin, no inline code; the
// document and "Try it out" fetch from the same origin.
var referencePolicy = policy("'self'", "'self'")

// referencePage renders assets/reference.html for a page whose files are at
// base (relative to the page) and whose document is at spec.
func referencePage(base, spec string) page {
	b, err := assets.ReadFile("assets/reference.html")
	if err != nil {
		panic("apidocs: " + err.Error())
	}
	b = bytes.ReplaceAll(b, []byte("@BASE@"), []byte(base))
	b = bytes.ReplaceAll(b, []byte("@SPEC@"), []byte(spec))
	return page{html: b, csp: referencePolicy}
}

// Redoc handles GET /redoc: the API reference (Swagger UI), the same page as
// /docs/api/, with its files and document addressed from /redoc.
func (d *Docs) Redoc(w http.ResponseWriter, _ *http.Request) {
	d.redoc.serve(w)
}

// Reference serves the API reference under /docs: rest is the path after
// /docs ("/api", "/api/", "/api/swagger-ui-bundle.js", ...); /docs/ leads to
// /docs/api/. The page is served at /docs/api as at /docs/api/ (its URLs
// written for each), since the OpenAPI document names paths without a
// trailing slash. Reference reports false, having written nothing, when rest
// is not one of the reference's paths.
func (d *Docs) Reference(w http.ResponseWriter, r *http.Request, rest string) bool {
	switch rest {
	case "/":
		// A relative Location (http.Redirect would make it absolute), so
		// that it stays under a path prefix.
		w.Header().Set("Location", "api/")
		w.WriteHeader(http.StatusFound)
		return true
	case strings.TrimSuffix(referenceDir, "/"):
		d.referenceD.serve(w)
		return true
	case referenceDir, referenceDir + "index.html":
		d.reference.serve(w)
		return true
	}
	name, ok := strings.CutPrefix(rest, referenceDir)
	if !ok {
		return false
	}
	f := files()[name]
	if f == nil {
		return false
	}
	h := w.Header()
	h.Set("Content-Type", f.ctype)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", f.etag)
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(f.body))
	return true
}
