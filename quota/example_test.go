package quota_test

import (
	"context"
	"fmt"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/quota"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/chatgw/gateway/upstream"
)

func ExampleAccountant_Admit() {
	cat, err := upstream.DefaultCatalog()
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	a := quota.New(quota.Config{
		Store:   memstore.New(), // the gateway's store: every replica on it shares the budgets
		Clock:   clock.NewFake(time.Date(2025, 6, 1, 23, 0, 0, 0, time.UTC)),
		Catalog: cat,
	})
	acme := &auth.Tenant{ID: "acme",
		Models: []string{"lm-4-scout-cloudB", "lm-4-scout-local"},
		Quotas: map[string]auth.Quota{"lm-4-scout-cloudB": {TokensPerDay: 1000}}}
	m := cat.Lookup("lm-4-scout-cloudB")

	// Reserve max_tokens plus the prompt estimate, then settle to usage.total_tokens.
	tk, err := a.Admit(ctx, acme, m, 600)
	fmt.Println(err)
	tk.Settle(ctx, 250)
	u, err := a.Usage(ctx, "acme", m.Alias)
	fmt.Printf("%+v %v\n", u, err)

	// 250 spent + 800 asked is over the budget of 1000.
	_, err = a.Admit(ctx, acme, m, 800)
	e := errcat.As(err)
	fmt.Println(e.Code, e.Param, e.RetryAfter, e.Extra["available_fallbacks"])

	// Aliases without a budget are not counted: the ticket is nil and its methods do nothing.
	tk, err = a.Admit(ctx, acme, cat.Lookup("lm-4-scout-local"), 600)
	tk.Settle(ctx, 250)
	fmt.Println(tk == nil, err)
	// Output:
	// <nil>
	// {Requests:1 Tokens:250 Reserved:0} <nil>
	// cloudB_daily_quota_exhausted model 3600 [lm-4-scout-local]
	// true <nil>
}
