package testkit

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chatgw/gateway/auth"
	"github.com/google/go-cmp/cmp"
	"github.com/julienschmidt/httprouter"
)

// Client sends a test's requests to a handler and reports to T. A harness
// embeds it, so that its helpers fail the test that called them: Run points
// T at a subtest while the subtest runs.
type Client struct {
	T testing.TB
	H http.Handler
	// Deny lists the scopes that the principal of the Calls sent next is
	// denied (see Call.Request); nil denies none.
	Deny []string
}

// Run runs f as the subtest name of t, with c.T the subtest while f runs,
// and reports whether f succeeded. Call it from the test's goroutine.
func (c *Client) Run(t *testing.T, name string, f func(t *testing.T)) bool {
	t.Helper()
	return t.Run(name, func(t *testing.T) {
		parent := c.T
		c.T = t
		defer func() { c.T = parent }()
		f(t)
	})
}

// DefaultTenant is the tenant of a Call that names none.
const DefaultTenant = "acme"

// Call is a request of a member of a tenant, the shape most of a family's
// tests send.
type Call struct {
	// Method, Target, User and Body are those of Request.
	Method, Target string
	User           string
	Body           any
	// Tenant is the ID of the member's tenant; "" is DefaultTenant.
	Tenant string
}

// Request returns c as a Request whose principal is a member of c's tenant
// (a tenant with that ID and nothing else) denied the scopes deny.
func (c Call) Request(deny ...string) Request {
	tenant := c.Tenant
	if tenant == "" {
		tenant = DefaultTenant
	}
	return Request{Method: c.Method, Target: c.Target, User: c.User, Body: c.Body,
		Principal: Member(&auth.Tenant{ID: tenant}, deny...)}
}

// Sendable is what a Client sends: a Request as it is, or a Call as the
// Request of its member denied the Client's Deny.
type Sendable interface {
	request(c *Client) Request
}

func (q Request) request(*Client) Request { return q }
func (q Call) request(c *Client) Request  { return q.Request(c.Deny...) }

// JSON sends q and returns the status and the JSON answer decoded into an
// any (see ServeJSON); it fails c.T when the answer is not JSON.
func (c *Client) JSON(q Sendable) (int, any) {
	c.T.Helper()
	return ServeJSON(c.T, c.H, q.request(c))
}

// OK sends q and returns its JSON answer decoded into an any; it fails c.T
// when the status is not 200 or the answer is not JSON.
func (c *Client) OK(q Sendable) any {
	c.T.Helper()
	var out any
	Decode(c.T, Serve(c.T, c.H, q.request(c)), http.StatusOK, &out)
	return out
}

// Fails sends q and reports with c.T.Errorf when its Error (see ErrorOf)
// differs from want; the test goes on.
func (c *Client) Fails(q Sendable, want Error) {
	c.T.Helper()
	r := q.request(c)
	status, body := ServeJSON(c.T, c.H, r)
	if diff := cmp.Diff(want, ErrorOf(c.T, status, body)); diff != "" {
		c.T.Errorf("%s %s error mismatch (-want +got):\n%s", r.Method, r.Target, diff)
	}
}

// Router returns an httprouter.Router serving routes, keyed by "METHOD
// /path" with httprouter's :name parameters, as the root's route table maps
// them. It fails t on a key without a method and a path.
func Router(t testing.TB, routes map[string]http.HandlerFunc) *httprouter.Router {
	t.Helper()
	r := httprouter.New()
	for key, h := range routes {
		method, path, ok := strings.Cut(key, " ")
		if !ok || method == "" || !strings.HasPrefix(path, "/") {
			t.Fatalf("route %q: want \"METHOD /path\"", key)
			continue
		}
		r.Handler(method, path, h)
	}
	return r
}

// HeaderTenant is the header by which a test names the tenant of a request
// whose principal a stand-in for the root's auth middleware picks (see
// TenantOf), for tests that send requests of several tenants through one
// handler.
const HeaderTenant = "X-Test-Tenant"

// TenantOf returns the tenant that r names by its HeaderTenant header (def
// when it has none): known's tenant of that ID with ok true, or else a new
// tenant with that ID and nothing else, which the caller may fill in.
func TenantOf(r *http.Request, def string, known map[string]*auth.Tenant) (tenant *auth.Tenant, ok bool) {
	id := r.Header.Get(HeaderTenant)
	if id == "" {
		id = def
	}
	if tenant, ok = known[id]; ok {
		return tenant, true
	}
	return &auth.Tenant{ID: id}, false
}
