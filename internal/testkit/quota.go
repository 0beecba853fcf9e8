package testkit

import (
	"testing"

	"github.com/chatgw/gateway/quota"
)

// QuotaUsage returns a's counter of tenant for alias today (see
// quota.Accountant.Usage), failing t when the store fails.
func QuotaUsage(t testing.TB, a *quota.Accountant, tenant, alias string) quota.Usage {
	t.Helper()
	u, err := a.Usage(t.Context(), tenant, alias)
	if err != nil {
		t.Fatalf("quota usage of %s/%s: %v", tenant, alias, err)
	}
	return u
}
