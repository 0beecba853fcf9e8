// Package apidocs serves the gateway's public documentation endpoints, which
// need no bearer token:
//
//	GET /openapi.json  the OpenAPI 3.1 description of the gateway (application/json)
//	GET /openapi       the same document, byte for byte (application/json)
//	GET /redoc         the API reference (Swagger UI) rendered from /openapi.json
//	GET /docs/api      the same page (also at /docs/api/), and under /docs/api/
//	                   the files it loads (the root routes /docs/* here
//	                   through Docs.Reference)
//	GET /playground    an HTML page to chat through /v1/chat/completions or /c1/chat
//
// # The document
//
// assets/openapi.json is the hand-maintained source of the description: every
// operation of the /v1, /c1 and /a1 families and the public endpoints, with the
// payload shapes of the interface and the decisions in docs/contract.md and of
// docs/decisions.md. Each operation names the scope it needs in the extension
// x-gw-scope. The root package's tests check the document against the route
// table both ways (every route described, nothing described that is not routed,
// the same scope and GW-User-Id rule), so a new route needs its operation here.
// The server URL is "." so that clients resolve it against the document's own
// URL, which keeps it right under http.StripPrefix.
//
// GET /openapi serves the same JSON document as GET /openapi.json rather than a
// YAML rendition: the gateway has no YAML dependency, every OpenAPI tool reads
// JSON, and two renditions could drift apart.
//
// # The pages
//
// The playground and the landing page are self-contained: their script and
// style are embedded inline, and they load nothing from other hosts (the
// gateway's machines have no internet). Each is answered with a
// Content-Security-Policy that allows only the exact inline script and style
// of the page, by their SHA-256 hashes computed when New builds the pages, plus
// fetches to the page's own origin ('self').
//
// The API reference is Swagger UI, whose release files come in with the Go
// module github.com/swaggo/files/v2 (embedded there): the page
// (assets/reference.html) loads swagger-ui-bundle.js, swagger-ui.css and the
// gateway's initializer (assets/reference.js) as files from /docs/api/, under a
// CSP of 'self' only, with nothing inline. The initializer reads the
// document's URL from the page's data-spec attribute; "Authorize" keeps the
// bearer in the browser's local storage (persistAuthorization) for "Try it
// out", which calls the gateway's own origin.
//
// Every URL the pages use is relative to the page's directory, so they also
// work when the gateway is mounted under a path prefix.
//
// The playground keeps the pasted bearer token in the browser tab's
// sessionStorage only; it is sent only as the Authorization header of the
// gateway's own endpoints.
package apidocs
