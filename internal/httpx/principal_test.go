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
