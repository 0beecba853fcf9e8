package httpx_test

import (
	"net/http/httptest"
	"testing"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
)

func TestPrincipal(t *testing.T) {
	r := httptest.NewRequest("GET", "/", nil)
	if _, err := httpx.Principal(r); errcat.CodeOf(err) != errcat.InternalError {
		t.Errorf("Principal without one = %v; want internal_error", err)
	}
	noTenant := r.WithContext(auth.NewContext(r.Context(), &auth.Principal{}))
	if _, err := httpx.Principal(noTenant); errcat.CodeOf(err) != errcat.InternalError {
		t.Errorf("Principal without a tenant = %v; want internal_error", err)
	}
	want := &auth.Principal{Tenant: &auth.Tenant{ID: "acme"}}
	got, err := httpx.Principal(r.WithContext(auth.NewContext(r.Context(), want)))
	if err != nil || got != want {
		t.Errorf("Principal = %v, %v; want the context's", got, err)
	}
}

func TestCallerOf(t *testing.T) {
	member := &auth.Principal{Tenant: &auth.Tenant{ID: "acme"}, Role: auth.RoleMember}
	admin := &auth.Principal{Tenant: &auth.Tenant{ID: "acme"}, Role: auth.RoleTenantAdmin}
	for _, tc := range []struct {
		name     string
		p        *auth.Principal
		user     string
		rule     httpx.UserRule
		read     bool
		wantCode errcat.Code // "" for success
		wantUser string
	}{
		{name: "no principal", rule: httpx.UserOptional, wantCode: errcat.InternalError},
		{name: "optional without user", p: member, rule: httpx.UserOptional},
		{name: "required with user", p: member, user: "ann", rule: httpx.UserRequired, wantUser: "ann"},
		{name: "required without user", p: admin, rule: httpx.UserRequired, read: true, wantCode: errcat.MissingField},
		{name: "admin read tenant-wide", p: admin, rule: httpx.UserOrAdminRead, read: true},
		{name: "admin write needs a user", p: admin, rule: httpx.UserOrAdminRead, wantCode: errcat.MissingField},
		{name: "member read needs a user", p: member, rule: httpx.UserOrAdminRead, read: true, wantCode: errcat.MissingField},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			if tc.user != "" {
				r.Header.Set(httpx.HeaderUserID, tc.user)
			}
			if tc.p != nil {
				r = r.WithContext(auth.NewContext(r.Context(), tc.p))
			}
			c, err := httpx.CallerOf(r, tc.rule, tc.read)
			if errcat.CodeOf(err) != tc.wantCode && !(err == nil && tc.wantCode == "") {
				t.Fatalf("CallerOf = %v, want code %q", err, tc.wantCode)
			}
			if err == nil && (c.User != tc.wantUser || c.Tenant != tc.p.Tenant || c.Principal != tc.p) {
				t.Errorf("CallerOf = %+v, want user %q of the principal's tenant", c, tc.wantUser)
			}
		})
	}
}
