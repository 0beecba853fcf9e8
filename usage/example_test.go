package usage_test

import (
	"context"
	"fmt"
	"time"

	"github.com/chatgw/gateway/store/memstore"
	"github.com/chatgw/gateway/usage"
)

// Records are buffered by Record and written by the Service's writer; Flush
// (or Close) writes them at once. Totals adds them up as GET /v1/usage does.
func Example() {
	st := memstore.New()
	defer st.Close()
	s := usage.New(usage.Config{Store: st})
	defer s.Close()

	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, user := range []string{"alice", "bob", "alice"} {
		s.Record(usage.Record{Time: at, Tenant: "acme", User: user, Kind: usage.KindChat,
			Alias: "lm-4-scout", Backend: "local", Status: 200, InputTokens: 12, OutputTokens: 5})
	}
	if err := s.Flush(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	groups, err := s.Totals(context.Background(), usage.Query{Tenant: "acme", From: at.Add(-time.Hour), To: at.Add(time.Hour),
		GroupBy: []usage.GroupKey{usage.ByUser}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, g := range groups {
		fmt.Printf("%s: %d requests, %d tokens\n", g.User, g.Requests, g.TotalTokens)
	}
	// Output:
	// alice: 2 requests, 34 tokens
	// bob: 1 requests, 17 tokens
}
