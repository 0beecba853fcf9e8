package gateway_test

import (
	"context"
	"testing"

	"github.com/chatgw/gateway"
	"github.com/chatgw/gateway/internal/pgtest"
	"github.com/chatgw/gateway/ratelimit"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/chatgw/gateway/store/pgstore"
	"github.com/google/go-cmp/cmp"
)

// sharingStore is a store that keeps rate limits for every gateway using it,
// as pgstore does: its buckets are one Local shared by all.
type sharingStore struct {
	store.Store
	limiter ratelimit.Limiter
}

func (s sharingStore) RateLimiter() ratelimit.Limiter { return s.limiter }

// passes sends n GET /v1/models with token member through each of the envs
// in turn and counts the 200s.
func passes(t *testing.T, n int, envs ...*env) int {
	t.Helper()
	ok := 0
	for i := range n {
		if resp, _ := envs[i%len(envs)].do(t, call{method: "GET", path: "/v1/models", token: "member"}); resp.StatusCode == 200 {
			ok++
		}
	}
	return ok
}

// TestRateLimiterChoice checks where the buckets live: per gateway on a store
// that does not share them, the store's own on one that does (so that a
// token's burst holds across gateways), the embedder's with WithRateLimiter.
func TestRateLimiterChoice(t *testing.T) {
	burst3 := gateway.WithRateLimit(0.001, 3)
	mem := memstore.New()
	shared := sharingStore{Store: memstore.New(), limiter: ratelimit.NewLocal(nil)}
	own := ratelimit.NewLocal(nil)
	tests := []struct {
		name string
		a, b []gateway.Option
		want int // of 12 requests over both gateways
	}{
		{"store without limits: each its own", []gateway.Option{gateway.WithStore(mem), burst3}, []gateway.Option{gateway.WithStore(mem), burst3}, 6},
		{"store with limits: shared", []gateway.Option{gateway.WithStore(shared), burst3}, []gateway.Option{gateway.WithStore(shared), burst3}, 3},
		{"WithRateLimiter wins", []gateway.Option{gateway.WithStore(mem), gateway.WithRateLimiter(own), burst3}, []gateway.Option{gateway.WithStore(shared), gateway.WithRateLimiter(own), burst3}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := passes(t, 12, newEnv(t, tt.a...), newEnv(t, tt.b...)); got != tt.want {
				t.Errorf("%d of 12 passed, want %d", got, tt.want)
			}
		})
	}
}

// TestReplicasShareRateLimitOnPostgres: two gateways on one PostgreSQL
// database give a token its burst once, not once each.
func TestReplicasShareRateLimitOnPostgres(t *testing.T) {
	t.Parallel()
	url := pgtest.New(t).NewDatabase(t)
	var envs []*env
	for range 2 {
		db, err := pgstore.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		envs = append(envs, newEnv(t, gateway.WithStore(db), gateway.WithRateLimit(0.001, 5)))
	}
	got := []int{passes(t, 20, envs...)}
	// The denied request says when to come back: 1000 s at 0.001 a second.
	resp, b := envs[1].do(t, call{method: "GET", path: "/v1/models", token: "member"})
	got = append(got, resp.StatusCode)
	if diff := cmp.Diff([]int{5, 429}, got); diff != "" {
		t.Errorf("passed, last status mismatch (-want +got):\n%s\n%s", diff, b)
	}
	if ra := resp.Header.Get("Retry-After"); ra != "1000" && ra != "999" {
		t.Errorf("Retry-After = %q, want about 1000", ra)
	}
	// Another token of the tenant has its own bucket.
	if resp, _ := envs[0].do(t, call{method: "GET", path: "/v1/models", token: "admin"}); resp.StatusCode != 200 {
		t.Errorf("admin token: %d, want 200", resp.StatusCode)
	}
}
