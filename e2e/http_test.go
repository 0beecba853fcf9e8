package e2e_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// H is a set of request headers.
type H map[string]string

// resp is a complete answer.
type resp struct {
	Status int
	Header http.Header
	Body   []byte
	req    string // "METHOD path" for messages
}

// JSON decodes the body into a generic value (nil when it is not JSON).
func (r *resp) JSON() map[string]any {
	var m map[string]any
	json.Unmarshal(r.Body, &m)
	return m
}

func (r *resp) String() string {
	return fmt.Sprintf("%s -> %d %s", r.req, r.Status, truncate(string(r.Body), 600))
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

var client = &http.Client{Timeout: 30 * time.Second}

// do sends one request. body is a string, []byte, nil, or a value sent as JSON.
// token "" sends no Authorization header; user "" no GW-User-Id.
func (g *gw) do(t *testing.T, method, path, token, user string, body any, hdr H) *resp {
	t.Helper()
	return doURL(t, client, method, g.Base+path, token, user, body, hdr)
}

func doURL(t *testing.T, c *http.Client, method, url, token, user string, body any, hdr H) *resp {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if user != "" {
		req.Header.Set("GW-User-Id", user)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return send(t, c, req, "")
}

// send sends req and reads the whole answer; note is added to the request's
// name in messages.
func send(t *testing.T, c *http.Client, req *http.Request, note string) *resp {
	t.Helper()
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Logf("%s %s: reading body: %v", req.Method, req.URL, err)
	}
	path := req.URL.Path
	if req.URL.RawQuery != "" {
		path += "?" + req.URL.RawQuery
	}
	return &resp{Status: res.StatusCode, Header: res.Header, Body: data, req: req.Method + " " + path + note}
}

// Shorthands.
func (g *gw) get(t *testing.T, path, token, user string) *resp {
	t.Helper()
	return g.do(t, "GET", path, token, user, nil, nil)
}

func (g *gw) post(t *testing.T, path, token, user string, body any) *resp {
	t.Helper()
	return g.do(t, "POST", path, token, user, body, nil)
}

// chunked posts body with Transfer-Encoding: chunked (no Content-Length).
func chunked(t *testing.T, g *gw, path, token, user, body string) *resp {
	t.Helper()
	pr, pw := io.Pipe()
	go func() {
		for i := 0; i < len(body); i += 256 {
			pw.Write([]byte(body[i:min(i+256, len(body))]))
		}
		pw.Close()
	}()
	req, _ := http.NewRequest("POST", g.Base+path, pr)
	req.ContentLength = -1
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	if user != "" {
		req.Header.Set("GW-User-Id", user)
	}
	return send(t, client, req, " (chunked)")
}

// chatBody is a minimal /v1 chat request.
func chatBody(model, content string) map[string]any {
	return map[string]any{"model": model, "messages": []any{map[string]any{"role": "user", "content": content}}}
}

// c1 posts a /c1/chat turn.
func c1(t *testing.T, g *gw, token, user string, body map[string]any) *resp {
	t.Helper()
	return g.post(t, "/c1/chat", token, user, body)
}

// listData returns the data array of a list answer.
func listData(r *resp) []map[string]any { return listOf(r.JSON()["data"]) }

// listOf returns the objects of a JSON array (empty when v is not one).
func listOf(v any) []map[string]any {
	raw, _ := v.([]any)
	out := []map[string]any{}
	for _, x := range raw {
		if xm, ok := x.(map[string]any); ok {
			out = append(out, xm)
		}
	}
	return out
}

// mustJSON marshals v.
func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// str is v if it is a string, else "".
func str(v any) string {
	s, _ := v.(string)
	return s
}

// ---- error envelope ----

// Param expectations besides an exact string.
const (
	anyParam = "\x00any"  // param not checked
	noParam  = "\x00null" // param null or absent
)

// wantErr checks an error answer: status, the envelope's type, code and param,
// a non-empty message, gw_code equal to the code, Content-Type application/json
// and an x-request-id header. ref names the spec or DECISIONS line.
func wantErr(t *testing.T, r *resp, status int, typ, code, param, ref string) bool {
	t.Helper()
	var env struct {
		Error *struct {
			Type    *string `json:"type"`
			Code    *string `json:"code"`
			Message *string `json:"message"`
			Param   any     `json:"param"`
			DocURL  *string `json:"doc_url"`
		} `json:"error"`
		GWCode *string `json:"gw_code"`
	}
	var problems []string
	if r.Status != status {
		problems = append(problems, fmt.Sprintf("status %d, want %d", r.Status, status))
	}
	if err := json.Unmarshal(r.Body, &env); err != nil || env.Error == nil {
		problems = append(problems, "body is not an error envelope {\"error\":{...}}")
	} else {
		e := env.Error
		if e.Type == nil || *e.Type != typ {
			problems = append(problems, fmt.Sprintf("error.type %s, want %q", strp(e.Type), typ))
		}
		if e.Code == nil || *e.Code != code {
			problems = append(problems, fmt.Sprintf("error.code %s, want %q", strp(e.Code), code))
		}
		if e.Message == nil || *e.Message == "" {
			problems = append(problems, "error.message empty")
		}
		switch param {
		case anyParam:
		case noParam:
			if e.Param != nil {
				problems = append(problems, fmt.Sprintf("error.param %v, want null", e.Param))
			}
		default:
			if p, ok := e.Param.(string); !ok || p != param {
				problems = append(problems, fmt.Sprintf("error.param %#v, want %q", e.Param, param))
			}
		}
		if env.GWCode == nil || *env.GWCode != code {
			problems = append(problems, fmt.Sprintf("gw_code %s, want %q", strp(env.GWCode), code))
		}
		if want := "/docs/errors#" + code; e.DocURL == nil || *e.DocURL != want {
			problems = append(problems, fmt.Sprintf("error.doc_url %s, want %q (issue 16 item 8)", strp(e.DocURL), want))
		}
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		problems = append(problems, fmt.Sprintf("Content-Type %q, want application/json (DECISIONS 8.30)", ct))
	}
	if r.Header.Get("X-Request-Id") == "" {
		problems = append(problems, "no x-request-id header (DECISIONS 5)")
	}
	if len(problems) > 0 {
		t.Errorf("%s\n  want %d %s/%s param=%q [%s]\n  problems: %s", r, status, typ, code, printable(param), ref, strings.Join(problems, "; "))
		return false
	}
	return true
}

func printable(p string) string {
	switch p {
	case anyParam:
		return "(any)"
	case noParam:
		return "(null)"
	}
	return p
}

func strp(s *string) string {
	if s == nil {
		return "(absent)"
	}
	return strconv.Quote(*s)
}

// wantStatus checks the status of a successful answer.
func wantStatus(t *testing.T, r *resp, status int, ref string) bool {
	t.Helper()
	if r.Status != status {
		t.Errorf("%s\n  want status %d [%s]", r, status, ref)
		return false
	}
	return true
}

// wantJSON checks that a successful answer is application/json (DECISIONS 8.30).
func wantJSON(t *testing.T, r *resp) {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s: Content-Type %q, want application/json (DECISIONS 8.30)", r.req, ct)
	}
}

// errCase is one row of an error table.
type errCase struct {
	name    string
	method  string
	path    string
	token   string
	user    string
	body    any
	hdr     H
	status  int
	typ     string
	code    string
	param   string
	ref     string
	prepare func(t *testing.T)
}

type errCases []errCase

// with fills the expectation fields a case leaves empty (and GET as method).
func (cs errCases) with(status int, typ, code, param, ref string) []errCase {
	for i := range cs {
		c := &cs[i]
		if c.status == 0 {
			c.status = status
		}
		if c.typ == "" {
			c.typ = typ
		}
		if c.code == "" {
			c.code = code
		}
		if c.param == "" {
			c.param = param
		}
		if c.ref == "" {
			c.ref = ref
		}
		if c.method == "" {
			c.method = "GET"
		}
	}
	return cs
}

// withDefaults fills the token and user a case leaves empty.
func (cs errCases) withDefaults(token, user string) errCases {
	for i := range cs {
		if cs[i].token == "" {
			cs[i].token = token
		}
		if cs[i].user == "" {
			cs[i].user = user
		}
	}
	return cs
}

func runErrCases(t *testing.T, g *gw, cases []errCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.prepare != nil {
				c.prepare(t)
			}
			r := g.do(t, c.method, c.path, c.token, c.user, c.body, c.hdr)
			wantErr(t, r, c.status, c.typ, c.code, c.param, c.ref)
		})
	}
}
