package apidocs_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/chatgw/gateway/internal/apidocs"
)

// docsHandler serves /docs/... as the gateway's /docs/*path route does for
// the reference: anything Reference does not serve is a 404.
func docsHandler(d *apidocs.Docs) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.Path, "/docs")
		if !ok || !d.Reference(w, r, rest) {
			http.NotFound(w, r)
		}
	}
}

// handlerFor routes a path of the test to the handler the gateway gives it.
func handlerFor(d *apidocs.Docs, path string) http.HandlerFunc {
	switch {
	case path == "/redoc":
		return d.Redoc
	case path == "/openapi.json":
		return d.OpenAPIJSON
	case strings.HasPrefix(path, "/docs/") || path == "/docs":
		return docsHandler(d)
	}
	return http.NotFound
}

var (
	srcOrHref = regexp.MustCompile(`(?i)\s(?:src|href)="([^"]*)"`)
	dataSpec  = regexp.MustCompile(`\sdata-spec="([^"]*)"`)
)

// TestReferencePages: /redoc and /docs/api/ serve the Swagger UI page with a
// strict CSP (files of 'self' only, nothing inline), every file the page
// names is served from the page's directory with its type, and the
// initializer loads the document relative to the page.
func TestReferencePages(t *testing.T) {
	d := apidocs.New("0.1.0")
	for _, pagePath := range []string{"/redoc", "/docs/api", "/docs/api/", "/docs/api/index.html"} {
		t.Run(pagePath, func(t *testing.T) {
			res := fetchPage(t, handlerFor(d, pagePath), pagePath)
			dirs := directives(res.Header.Get("Content-Security-Policy"))
			for dir, want := range map[string]string{
				"default-src":     "'none'",
				"script-src":      "'self'",
				"style-src":       "'self'",
				"connect-src":     "'self'",
				"img-src":         "'self' data:",
				"base-uri":        "'none'",
				"form-action":     "'none'",
				"frame-ancestors": "'none'",
			} {
				if got := strings.Join(dirs[dir], " "); got != want {
					t.Errorf("CSP %s = %q, want %q", dir, got, want)
				}
			}
			if len(dirs) != 8 {
				t.Errorf("CSP has %d directives, want 8: %v", len(dirs), dirs)
			}
			page := string(readBody(t, res))
			low := strings.ToLower(page)
			for _, bad := range []string{"<style", "style=", "javascript:", "http://", "https://", "@base@", "@spec@"} {
				if strings.Contains(low, bad) {
					t.Errorf("page contains %q", bad)
				}
			}
			if m := onHandler.FindString(page); m != "" {
				t.Errorf("page has an inline event handler: %q", m)
			}
			if n, m := strings.Count(low, "<script"), strings.Count(low, "<script src="); n != m || n != 2 {
				t.Errorf("page has %d <script> elements, %d with a src; want 2, both files", n, m)
			}

			pageURL, _ := url.Parse("http://gw.example" + pagePath)
			var scripts []string
			for _, m := range srcOrHref.FindAllStringSubmatch(page, -1) {
				if !relativeURL(m[1]) {
					t.Errorf("page names %q, want a URL relative to the page", m[1])
					continue
				}
				u := pageURL.ResolveReference(&url.URL{Path: m[1]})
				if strings.HasSuffix(u.Path, ".js") {
					scripts = append(scripts, u.Path)
				}
				fres := fetch(t, handlerFor(d, u.Path), u.Path)
				if fres.StatusCode != http.StatusOK {
					t.Errorf("%s (as %s) -> %d, want 200", m[1], u.Path, fres.StatusCode)
					continue
				}
				if fres.Header.Get("X-Content-Type-Options") != "nosniff" {
					t.Errorf("%s: no X-Content-Type-Options: nosniff", u.Path)
				}
				want := map[string]string{".js": "text/javascript", ".css": "text/css", ".png": "image/png", ".json": "application/json"}
				ct := fres.Header.Get("Content-Type")
				ok := false
				for ext, typ := range want {
					if strings.HasSuffix(u.Path, ext) && strings.HasPrefix(ct, typ) {
						ok = true
					}
				}
				if !ok {
					t.Errorf("%s: Content-Type %q", u.Path, ct)
				}
				if body := readBody(t, fres); len(body) == 0 {
					t.Errorf("%s: empty body", u.Path)
				}
			}
			if len(scripts) != 2 || !strings.HasSuffix(scripts[0], "/docs/api/swagger-ui-bundle.js") || !strings.HasSuffix(scripts[1], "/docs/api/reference.js") {
				t.Errorf("scripts = %v, want the Swagger UI bundle then the initializer, both under /docs/api/", scripts)
			}

			// The initializer loads data-spec relative to the page: the
			// gateway's /openapi.json, under a path prefix too.
			m := dataSpec.FindStringSubmatch(page)
			if m == nil {
				t.Fatal("page has no data-spec attribute")
			}
			for prefix, want := range map[string]string{"": "/openapi.json", "/llm": "/llm/openapi.json"} {
				base, _ := url.Parse("http://gw.example" + prefix + pagePath)
				if got := base.ResolveReference(&url.URL{Path: m[1]}).Path; got != want {
					t.Errorf("data-spec %q from %s%s resolves to %s, want %s", m[1], prefix, pagePath, got, want)
				}
			}
		})
	}
}

// TestReferenceInitializer: Swagger UI starts on the page's data-spec with
// deep links, a persisted authorization (the bearer of "Authorize"), the
// filter box and no call to an outside validator.
func TestReferenceInitializer(t *testing.T) {
	src := asset(t, "reference.js")
	for _, want := range []string{
		"new URL(root.getAttribute('data-spec'), document.baseURI)",
		"url: spec,",
		"deepLinking: true,",
		"persistAuthorization: true,",
		"filter: true,",
		"validatorUrl: null,",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("reference.js has no %q", want)
		}
	}
	for _, banned := range []string{"fetch(", "XMLHttpRequest", "innerHTML", "eval(", "oauth2RedirectUrl"} {
		if strings.Contains(src, banned) {
			t.Errorf("reference.js uses %s", banned)
		}
	}
}

// TestReferenceRedirectsAndUnknownFiles: /docs/ leads to the page by a
// relative Location; a file that is not the reference's is not
// served (the gateway answers route_not_found).
func TestReferenceRedirectsAndUnknownFiles(t *testing.T) {
	d := apidocs.New("0.1.0")
	for path, want := range map[string]string{"/docs/": "api/"} {
		res := fetch(t, docsHandler(d), path)
		if res.StatusCode/100 != 3 || res.Header.Get("Location") != want {
			t.Errorf("GET %s -> %d Location %q, want a redirect to %q", path, res.StatusCode, res.Header.Get("Location"), want)
		}
	}
	for _, path := range []string{"/docs/api/index.css", "/docs/api/swagger-initializer.js", "/docs/api/oauth2-redirect.html",
		"/docs/api/swagger-ui-bundle.js.map", "/docs/api/../errors", "/docs/api/sub/reference.js", "/docs/errors", "/docs/api/openapi.json"} {
		if res := fetch(t, docsHandler(d), path); res.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s -> %d, want 404", path, res.StatusCode)
		}
	}
}

// TestReferenceConditionalGet: the bundle answers 304 to its own ETag.
func TestReferenceConditionalGet(t *testing.T) {
	d := apidocs.New("0.1.0")
	res := fetch(t, docsHandler(d), "/docs/api/swagger-ui-bundle.js")
	etag := res.Header.Get("ETag")
	if res.StatusCode != http.StatusOK || etag == "" {
		t.Fatalf("GET bundle -> %d ETag %q", res.StatusCode, etag)
	}
	rec := httptest.NewRecorder()
	req, _ := http.NewRequest(http.MethodGet, "/docs/api/swagger-ui-bundle.js", nil)
	req.Header.Set("If-None-Match", etag)
	docsHandler(d)(rec, req)
	if rec.Code != http.StatusNotModified {
		t.Errorf("conditional GET -> %d, want 304", rec.Code)
	}
}
