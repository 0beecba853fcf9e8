package auth_test

import (
	"fmt"

	"github.com/chatgw/gateway/auth"
)

func ExampleParseCatalog() {
	c, err := auth.ParseCatalog([]byte(`{
  "tenants": [{"id": "acme"}],
  "tokens": [
    {"token": "s3cret", "tenant": "acme", "deny": ["images:write"]},
    {"token": "s3cret", "tenant": "acme"}
  ]
}`))
	fmt.Println(c, err)

	c, _ = auth.ParseCatalog([]byte(`{"tenants": [{"id": "acme"}],
  "tokens": [{"token": "s3cret", "tenant": "acme", "deny": ["images:write"]}]}`))
	p, ok := c.Lookup(auth.DigestOf("s3cret"))
	fmt.Println(ok, p.Tenant.ID, p.Role, p.TokenID)
	fmt.Println(p.Allows("chat:write"), p.Allows("images:write"), p.Allows("tenant_config:write"))
	// Output:
	// <nil> line 5: tokens[1]: duplicate token (same digest as the token at line 4)
	// true acme member 1ec1c26b50d5
	// true false false
}

func ExampleNewStatic() {
	acme := &auth.Tenant{ID: "acme", Models: []string{"lm-4-scout"}}
	c := auth.MustStatic([]*auth.Tenant{acme}, map[string]auth.StaticToken{
		"admin-token":  {Tenant: "acme", Role: auth.RoleTenantAdmin},
		"member-token": {Tenant: "acme", Rate: &auth.Rate{PerSecond: 5, Burst: 50}},
	})
	p, _ := c.Lookup(auth.DigestOf("member-token"))
	fmt.Println(p.Role, p.Allows("tenant_config:write"), p.Tenant.AllowsModel("lm-4-scout"))
	// Output: member false true
}
