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

// TenantID returns the tenant id of r's principal, or internal_error when
// there is none (see Principal).
func TenantID(r *http.Request) (string, error) {
	p, err := Principal(r)
	if err != nil {
		return "", err
	}
	return p.Tenant.ID, nil
}

// Caller is who a request acts for: the authenticated principal and the end
// user named by GW-User-Id ("" for a tenant-wide request).
type Caller struct {
	Principal *auth.Principal
	Tenant    *auth.Tenant // Principal.Tenant
	User      string
}

// UserRule says when CallerOf requires GW-User-Id.
type UserRule int

const (
	// UserOptional accepts a request without GW-User-Id.
	UserOptional UserRule = iota
	// UserRequired requires GW-User-Id.
	UserRequired
	// UserOrAdminRead requires GW-User-Id, except on a tenant_admin's read
	// (read true), which gets the tenant-wide view.
	UserOrAdminRead
)

// CallerOf returns the caller of r under rule: internal_error without a
// principal (see Principal), missing_field headers.gw-user-id when the rule
// requires a user that r does not name. The route table applies the same
// rules before a handler runs; checking again keeps handlers safe alone.
func CallerOf(r *http.Request, rule UserRule, read bool) (Caller, error) {
	p, err := Principal(r)
	if err != nil {
		return Caller{}, err
	}
	c := Caller{Principal: p, Tenant: p.Tenant, User: UserID(r)}
	if c.User != "" || rule == UserOptional || (rule == UserOrAdminRead && read && p.Role == auth.RoleTenantAdmin) {
		return c, nil
	}
	return Caller{}, ErrNoUser()
}

// ErrNoUser is missing_field headers.gw-user-id, the answer to a request
// without the GW-User-Id its route requires.
func ErrNoUser() *errcat.Error {
	return errcat.New(errcat.MissingField, "headers.gw-user-id", "The GW-User-Id header is required on this endpoint.")
}
