package gateway

import (
	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/guard"
	"github.com/chatgw/gateway/ratelimit"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/upstream"
)

// The pluggable interfaces, declared in leaf packages so that the root can wire
// the family packages without an import cycle; see each for its contract.
type (
	// Store is the persistence: ordered key-value buckets with transactions.
	// A Store whose reads are round trips to a server can also let its
	// transactions implement store.Prefetcher, and store.Assumer: a /c1
	// turn then names its reads ahead and pays one round trip for them, and
	// its write checks the conversation it read instead of reading it again.
	Store = store.Store
	// Upstream reaches the models of an alias, with the fallback chain.
	Upstream = upstream.Upstream
	// TokenCatalog maps bearer-token digests to principals (tenant, role, scopes).
	TokenCatalog = auth.TokenCatalog
	// Clock tells the time.
	Clock = clock.Clock
	// RateLimiter keeps the per-token rate limit: in process by default, in
	// the database with a store that shares it (see WithRateLimiter).
	RateLimiter = ratelimit.Limiter
	// Classifier classifies the content of a chat request for the tenant
	// content guard (see WithClassifier).
	Classifier = guard.Classifier
)
