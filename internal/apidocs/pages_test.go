package apidocs_test

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/chatgw/gateway/internal/apidocs"
)

// inline returns the text between the only <tag> and </tag> of page.
func inline(t *testing.T, page, tag string) string {
	t.Helper()
	open, closing := "<"+tag+">", "</"+tag+">"
	if n := strings.Count(page, "<"+tag); n != 1 {
		t.Fatalf("page has %d <%s elements, want 1", n, tag)
	}
	i := strings.Index(page, open)
	j := strings.Index(page, closing)
	if i < 0 || j < i {
		t.Fatalf("page has no %s...%s block", open, closing)
	}
	return page[i+len(open) : j]
}

// directives parses a Content-Security-Policy into directive -> sources.
func directives(csp string) map[string][]string {
	out := map[string][]string{}
	for _, d := range strings.Split(csp, ";") {
		f := strings.Fields(d)
		if len(f) > 0 {
			out[f[0]] = f[1:]
		}
	}
	return out
}

func hashSource(text string) string {
	sum := sha256.Sum256([]byte(text))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

func asset(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("assets/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPages(t *testing.T) {
	d := apidocs.New("0.1.0")
	for _, tc := range []struct {
		name string
		h    http.HandlerFunc
		path string
	}{
		{"playground", d.Playground, "/playground"},
		{"landing", d.Landing, "/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := fetchPage(t, tc.h, tc.path)
			page := string(readBody(t, res))
			csp := res.Header.Get("Content-Security-Policy")
			if csp == "" {
				t.Fatal("no Content-Security-Policy")
			}
			if strings.Contains(csp, "unsafe-") || strings.Contains(csp, "*") || strings.Contains(csp, "http") {
				t.Errorf("CSP %q allows more than 'self' and the page's own hashes", csp)
			}
			dirs := directives(csp)
			for dir, want := range map[string]string{
				"default-src":     "'none'",
				"connect-src":     "'self'",
				"base-uri":        "'none'",
				"frame-ancestors": "'none'",
			} {
				if got := strings.Join(dirs[dir], " "); got != want {
					t.Errorf("CSP %s = %q, want %q", dir, got, want)
				}
			}

			script := inline(t, page, "script")
			if script != asset(t, tc.name+".js") {
				t.Errorf("the inline script is not assets/%s.js verbatim", tc.name)
			}
			if got, want := strings.Join(dirs["script-src"], " "), hashSource(script); got != want {
				t.Errorf("CSP script-src = %q, want the hash of the inline script %q", got, want)
			}
			style := inline(t, page, "style")
			if style != asset(t, tc.name+".css") {
				t.Errorf("the inline style is not assets/%s.css verbatim", tc.name)
			}
			if got, want := strings.Join(dirs["style-src"], " "), hashSource(style); got != want {
				t.Errorf("CSP style-src = %q, want the hash of the inline style %q", got, want)
			}

			// Nothing loads from elsewhere, and no inline handler or style
			// attribute needs 'unsafe-inline'.
			low := strings.ToLower(page)
			for _, bad := range []string{"http://", "https://", " src=", "style=", "javascript:", "@import"} {
				if strings.Contains(low, bad) {
					t.Errorf("page contains %q", bad)
				}
			}
			if m := onHandler.FindString(page); m != "" {
				t.Errorf("page has an inline event handler: %q", m)
			}
			for _, m := range hrefAttr.FindAllStringSubmatch(page, -1) {
				if !relativeURL(m[1]) {
					t.Errorf("page links to %q, want a URL relative to the page", m[1])
				}
			}
		})
	}
}

var (
	onHandler = regexp.MustCompile(`(?i)<[^>]*\son[a-z]+\s*=`)
	hrefAttr  = regexp.MustCompile(`(?i)\shref="([^"]*)"`)
)

// relativeURL reports whether u resolves against the page's own directory: no
// scheme (data: excepted), no host, no absolute path.
func relativeURL(u string) bool {
	switch {
	case u == "data:,":
		return true
	case strings.Contains(u, "://"), strings.HasPrefix(u, "//"), strings.HasPrefix(u, "/"):
		return false
	case regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`).MatchString(u):
		return false
	}
	return true
}

// jsStrings returns the string and template literals of a script, outside
// comments. A backslash outside a literal (in a regular-expression literal)
// skips the next character; the scripts keep quotes and backticks out of their
// regular-expression literals (\x60 stands for a backtick there).
func jsStrings(t *testing.T, src string) []string {
	t.Helper()
	var out []string
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '\\':
			i++
		case strings.HasPrefix(src[i:], "//"):
			j := strings.IndexByte(src[i:], '\n')
			if j < 0 {
				return out
			}
			i += j
		case strings.HasPrefix(src[i:], "/*"):
			j := strings.Index(src[i+2:], "*/")
			if j < 0 {
				t.Fatalf("unterminated comment at byte %d", i)
			}
			i += j + 3
		case c == '\'' || c == '"' || c == '`':
			var b strings.Builder
			j := i + 1
			for ; j < len(src) && src[j] != c; j++ {
				if src[j] == '\\' && j+1 < len(src) {
					j++
				} else if src[j] == '\n' && c != '`' {
					t.Fatalf("unterminated string literal at byte %d: %q", i, src[i:j])
				}
				b.WriteByte(src[j])
			}
			if j >= len(src) {
				t.Fatalf("unterminated literal at byte %d", i)
			}
			out = append(out, b.String())
			i = j
		}
	}
	return out
}

// absolutePath matches a literal that starts like an absolute URL path
// ('/v1/models'), which would break under a path prefix.
var absolutePath = regexp.MustCompile(`^/[A-Za-z0-9_.~-]`)

func TestScriptsUseRelativeURLsOnly(t *testing.T) {
	for _, name := range []string{"playground.js", "reference.js", "landing.js"} {
		t.Run(name, func(t *testing.T) {
			src := asset(t, name)
			lits := jsStrings(t, src)
			if len(lits) < 10 {
				t.Fatalf("found only %d literals; the scanner lost its way", len(lits))
			}
			for _, s := range lits {
				if strings.Contains(s, "://") || strings.HasPrefix(s, "//") || absolutePath.MatchString(s) {
					t.Errorf("literal %q is not a page-relative URL", s)
				}
			}
			// Every fetch goes through a URL built relative to the page.
			for _, m := range regexp.MustCompile(`fetch\(\s*([^,)]*)`).FindAllStringSubmatch(src, -1) {
				arg := m[1]
				if !strings.HasPrefix(arg, "api(") && !strings.HasPrefix(arg, "new URL(") && arg != "url" {
					t.Errorf("fetch(%s...) does not use a page-relative URL", arg)
				}
			}
			for _, banned := range []string{"location.origin", "location.host", "XMLHttpRequest", "import(", "importScripts"} {
				if strings.Contains(src, banned) {
					t.Errorf("script uses %s", banned)
				}
			}
		})
	}
}

// TestPlaygroundEndpointsAndTokenStorage: the playground is a /c1 client (the
// chat, the conversation list, one conversation), reads the model catalog
// from /v1/info, understands the stream's notices and errors, and keeps the
// token in localStorage (issue 16: a reload keeps it) and nowhere else.
func TestPlaygroundEndpointsAndTokenStorage(t *testing.T) {
	src := asset(t, "playground.js")
	lits := map[string]bool{}
	for _, s := range jsStrings(t, src) {
		lits[s] = true
	}
	for _, want := range []string{"v1/info", "c1/chat", "c1/conversations?limit=100", "c1/conversations/", "DELETE", "gw.notice", "gw.error", "[DONE]", "gw-conversation-id", "x-conversation-id", "gw-notice", "GW-User-Id", "Authorization", "unconfigured"} {
		if !lits[want] {
			t.Errorf("playground.js has no literal %q", want)
		}
	}
	if strings.Contains(src, "sessionStorage") || strings.Contains(src, "document.cookie") || strings.Contains(src, "indexedDB") {
		t.Error("playground.js must keep the token in localStorage only")
	}
	if !strings.Contains(src, "localStorage") || !strings.Contains(src, "store.removeItem(KEY_TOKEN)") {
		t.Error("playground.js does not keep the token in localStorage, or cannot forget it")
	}
	// copy as curl never prints the token itself
	if !lits[`-H "Authorization: Bearer $TOKEN"`] {
		t.Error("playground.js's curl line does not stand $TOKEN for the token")
	}
}

// TestPlaygroundFetchesThroughAPI: every request of the playground goes
// through api(), which resolves against the page's directory, so no call can
// leave a gateway mounted under a prefix or reach another origin.
func TestPlaygroundFetchesThroughAPI(t *testing.T) {
	src := asset(t, "playground.js")
	calls := regexp.MustCompile(`\bfetch\(`).FindAllStringIndex(src, -1)
	if len(calls) == 0 {
		t.Fatal("playground.js has no fetch call")
	}
	for _, c := range calls {
		if !strings.HasPrefix(src[c[1]:], "api(") {
			t.Errorf("fetch(%.30s...) does not go through api()", src[c[1]:])
		}
	}
	if strings.Contains(src, "new WebSocket") || strings.Contains(src, "EventSource") || strings.Contains(src, "sendBeacon") {
		t.Error("playground.js opens a connection other than fetch(api(...))")
	}
}

// TestNoMarkupInjection keeps the scripts free of the sinks that would turn
// document or model text into markup: model answers are rendered by building
// elements and text nodes, never by parsing HTML.
func TestNoMarkupInjection(t *testing.T) {
	for _, name := range []string{"playground.js", "reference.js", "landing.js"} {
		src := asset(t, name)
		for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function",
			"srcdoc", "DOMParser", "createContextualFragment", "setHTML", "parseHTMLUnsafe", "setTimeout('", "setTimeout(\"", ".setAttribute('on", ".setAttribute('style", ".setAttribute('href", ".setAttribute('src"} {
			if strings.Contains(src, sink) {
				t.Errorf("%s uses %s", name, sink)
			}
		}
	}
	// The playground's links to model-chosen targets are http(s) only (a
	// script URL stays text), and its images are data URIs only.
	src := asset(t, "playground.js")
	for _, guard := range []string{"if (!/^https?:/i.test(target))", "!/^data:image\\//.test(u)"} {
		if !strings.Contains(src, guard) {
			t.Errorf("playground.js lost the guard %s", guard)
		}
	}
}

// TestAssetsHaveNoCarriageReturns: browsers normalise CRLF before hashing an
// inline block, so a CR in an asset would make its CSP hash wrong.
func TestAssetsHaveNoCarriageReturns(t *testing.T) {
	entries, err := os.ReadDir("assets")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(asset(t, e.Name()), "\r") {
			t.Errorf("assets/%s contains a carriage return", e.Name())
		}
	}
}
