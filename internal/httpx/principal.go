package httpx

import (
	"errors"
	"net/http"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/errcat"
)

// errNoPrincipal is the cause of a handler reached without authentication:
// the route table sends every non-public route through the bearer check, so
// it is a wiring fault, not the client's.
var errNoPrincipal = errors.New("httpx: no principal with a tenant in the request context")

// Principal returns the authenticated principal of r, whose Tenant is set, or
// internal_error when there is none.
func Principal(r *http.Request) (*auth.Principal, error) {
	p := auth.FromContext(r.Context())
	if p == nil || p.Tenant == nil {
		return nil, errcat.Internal(errNoPrincipal)
	}
	return p, nil
}
