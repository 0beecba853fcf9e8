package apidocs

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"strconv"
	"strings"
)

// assets holds the document and the pages' sources; it is read-only.
//
//go:embed assets
var assets embed.FS

// Docs serves the documentation endpoints. Create it with New; its handlers are
// safe for concurrent use and answer every request with bodies built once.
type Docs struct {
	openapi    []byte // the OpenAPI document, indented JSON
	redoc      page   // the API reference as /redoc answers it
	reference  page   // the API reference as /docs/api/ answers it
	referenceD page   // the API reference as /docs/api answers it
	playground page
	landing    page
}

// page is a rendered HTML page and the Content-Security-Policy that allows
// exactly its inline script and style.
type page struct {
	html []byte
	csp  string
}

// New builds the documentation endpoints. version becomes the document's
// info.version (the API version, gateway.Version); "" keeps the document's own
// (0.1.0). New panics when the embedded assets are broken, which is a
// programming error caught by the package's tests.
func New(version string) *Docs {
	src, err := assets.ReadFile("assets/openapi.json")
	if err != nil {
		panic("apidocs: " + err.Error())
	}
	doc, err := withInfoVersion(src, version)
	if err != nil {
		panic("apidocs: assets/openapi.json: " + err.Error())
	}
	landing := mustPage("landing")
	landing.html = bytes.Replace(landing.html, []byte("@VERSION@"), []byte(html.EscapeString(version)), 1)
	return &Docs{
		openapi:    doc,
		redoc:      referencePage("docs/api/", "openapi.json"),
		reference:  referencePage("", "../../openapi.json"),
		referenceD: referencePage("api/", "../openapi.json"),
		playground: mustPage("playground"),
		landing:    landing,
	}
}

// OpenAPIJSON handles GET /openapi.json: 200 application/json with the OpenAPI
// 3.1 document.
func (d *Docs) OpenAPIJSON(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(d.openapi)))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(d.openapi)
}

// OpenAPI handles GET /openapi: the same document as OpenAPIJSON, also as
// application/json (see the package doc for why there is no YAML rendition).
func (d *Docs) OpenAPI(w http.ResponseWriter, r *http.Request) {
	d.OpenAPIJSON(w, r)
}

// Landing answers GET / to a browser: the HTML page that links the
// playground, the API reference, the error catalog and the health and
// readiness endpoints (the root serves its JSON form to other clients).
func (d *Docs) Landing(w http.ResponseWriter, _ *http.Request) {
	d.landing.serve(w)
}

// Playground handles GET /playground: the HTML chat playground.
func (d *Docs) Playground(w http.ResponseWriter, _ *http.Request) {
	d.playground.serve(w)
}

func (p *page) serve(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(p.html)))
	h.Set("Content-Security-Policy", p.csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(p.html)
}

// Markers that assets/<name>.html holds once each, replaced by the contents of
// assets/<name>.css and assets/<name>.js.
const (
	styleMarker  = "<style>@STYLE@</style>"
	scriptMarker = "<script>@SCRIPT@</script>"
)

func mustPage(name string) page {
	p, err := buildPage(name)
	if err != nil {
		panic("apidocs: " + err.Error())
	}
	return p
}

// buildPage inlines the page's style and script into its HTML and returns the
// page with a CSP that allows those two blocks by hash and nothing else inline.
func buildPage(name string) (page, error) {
	read := func(ext string) (string, error) {
		b, err := assets.ReadFile("assets/" + name + ext)
		return string(b), err
	}
	html, err := read(".html")
	if err != nil {
		return page{}, err
	}
	style, err := read(".css")
	if err != nil {
		return page{}, err
	}
	script, err := read(".js")
	if err != nil {
		return page{}, err
	}
	if strings.Count(html, styleMarker) != 1 || strings.Count(html, scriptMarker) != 1 {
		return page{}, fmt.Errorf("%s.html: want exactly one %s and one %s", name, styleMarker, scriptMarker)
	}
	if strings.Contains(strings.ToLower(style), "</style") {
		return page{}, fmt.Errorf("%s.css must not contain </style", name)
	}
	if low := strings.ToLower(script); strings.Contains(low, "</script") || strings.Contains(low, "<!--") {
		return page{}, fmt.Errorf("%s.js must not contain </script or <!--", name)
	}
	out := strings.Replace(html, styleMarker, "<style>"+style+"</style>", 1)
	out = strings.Replace(out, scriptMarker, "<script>"+script+"</script>", 1)
	return page{html: []byte(out), csp: policy(hashSource(script), hashSource(style))}, nil
}

// policy is the Content-Security-Policy of a page whose scripts and styles
// are the sources scriptSrc and styleSrc allow (the hashes of its inline
// blocks, or 'self' for files): nothing loads from elsewhere, fetches go to
// the page's own origin only, and the page may not be framed.
func policy(scriptSrc, styleSrc string) string {
	return strings.Join([]string{
		"default-src 'none'",
		"script-src " + scriptSrc,
		"style-src " + styleSrc,
		"connect-src 'self'",
		"img-src 'self' data:",
		"base-uri 'none'",
		"form-action 'none'",
		"frame-ancestors 'none'",
	}, "; ")
}

// hashSource is the CSP hash-source of an inline block: 'sha256-<base64>' of
// its exact text between the tags.
func hashSource(text string) string {
	sum := sha256.Sum256([]byte(text))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

// withInfoVersion returns the JSON object doc, indented, with info.version set
// to version ("" keeps it). Members keep their order, so the served document
// reads like the source file.
func withInfoVersion(doc []byte, version string) ([]byte, error) {
	top, err := members(doc)
	if err != nil {
		return nil, err
	}
	if version != "" {
		i := indexOf(top, "info")
		if i < 0 {
			return nil, fmt.Errorf("no info object")
		}
		info, err := members(top[i].value)
		if err != nil {
			return nil, fmt.Errorf("info: %w", err)
		}
		v, _ := json.Marshal(version) // a string: cannot fail
		if j := indexOf(info, "version"); j >= 0 {
			info[j].value = v
		} else {
			info = append(info, member{"version", v})
		}
		top[i].value = encode(info)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, encode(top), "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// member is one name/value pair of a JSON object.
type member struct {
	key   string
	value json.RawMessage
}

// members splits a JSON object into its members, in document order.
func members(obj []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object")
	}
	var ms []member
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := t.(string) // a key is always a string
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		ms = append(ms, member{key, v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, fmt.Errorf("data after the object")
	}
	return ms, nil
}

func indexOf(ms []member, key string) int {
	for i := range ms {
		if ms[i].key == key {
			return i
		}
	}
	return -1
}

// encode writes members back as a JSON object.
func encode(ms []member) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.key) // a string: cannot fail
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.value)
	}
	b.WriteByte('}')
	return b.Bytes()
}
