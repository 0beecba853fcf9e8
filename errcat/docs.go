package errcat

import (
	"bytes"
	"html"
	"html/template"
	"net/http"
	"strings"
)

// docsPage is the HTML of GET /docs/errors. Every code has a section whose id is
// the code, so /docs/errors#<code> anchors are stable ("Published HTML anchors
// for codes do not change").
const docsPage = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>chatgw error catalog</title>
<style>
body{font-family:system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;line-height:1.5}
code{background:#f2f2f2;padding:0 .2em;border-radius:3px}
section{border-top:1px solid #ddd;padding:.5rem 0}
dl{display:grid;grid-template-columns:max-content auto;gap:.1rem 1rem}
dt{font-weight:600}
dd{margin:0}
</style>
</head>
<body>
<h1>chatgw error catalog</h1>
<p>Version {{.Version}}, {{.Count}} codes; the same data is served as JSON at <a href="../errors"><code>/errors</code></a>.</p>
<p>Every error answers with the envelope
<code>{"error":{"type","code","message","param","doc_url"},"gw_code"}</code>; <code>param</code> is null when no field is at fault,
and <code>doc_url</code> is the code's section of this page (<code>/docs/errors#&lt;code&gt;</code>, relative to the gateway).
The routes of Anthropic's Messages API answer Anthropic's shape, <code>{"type":"error","error":{"type","message","code","param","doc_url"}}</code>.
On a stream that already started, the envelope arrives as an SSE event named <code>gw.error</code> and the stream ends without <code>[DONE]</code>.
Quote the <code>x-request-id</code> response header when reporting a problem.</p>
<nav><ul>
{{- range .Entries}}
<li><a href="#{{.Code}}"><code>{{.Code}}</code></a> {{.Title}}</li>
{{- end}}
</ul></nav>
{{- range .Entries}}
<section id="{{.Code}}">
<h2><a href="#{{.Code}}"><code>{{.Code}}</code></a>: {{.Title}}</h2>
<dl>
<dt>HTTP status</dt><dd>{{.HTTPStatus}}</dd>
<dt>Type</dt><dd><code>{{.Type}}</code></dd>
<dt>Typical param</dt><dd>{{with .TypicalParam}}<code>{{.}}</code>{{else}}none{{end}}</dd>
</dl>
{{markdown .Description}}
<h3>Remediation</h3>
{{markdown .Remediation}}
</section>
{{- end}}
</body>
</html>
`

// DocsHandler serves GET /docs/errors: the catalog as an HTML page (text/html)
// with one section per code, anchored by the code. The page is rendered once,
// when the handler is built.
func DocsHandler() http.Handler {
	t := template.Must(template.New("errors").Funcs(template.FuncMap{"markdown": markdown}).Parse(docsPage))
	var buf bytes.Buffer
	if err := t.Execute(&buf, Published()); err != nil {
		panic("errcat: rendering the docs page: " + err.Error()) // static data: a programming error
	}
	return staticHandler("text/html; charset=utf-8", buf.Bytes())
}

// markdown renders the small markdown subset of the catalog texts: paragraphs
// separated by blank lines and `code` spans. The text is HTML-escaped first, so
// only the tags added here reach the page; an unpaired backtick stays literal.
func markdown(s string) template.HTML {
	var b strings.Builder
	for _, p := range strings.Split(strings.TrimSpace(s), "\n\n") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		b.WriteString("<p>")
		parts := strings.Split(html.EscapeString(p), "`")
		for i, part := range parts {
			switch {
			case i%2 == 0:
				b.WriteString(part)
			case i == len(parts)-1: // unpaired opening backtick
				b.WriteString("`" + part)
			default:
				b.WriteString("<code>" + part + "</code>")
			}
		}
		b.WriteString("</p>\n")
	}
	return template.HTML(b.String()) // safe: built from escaped text
}
