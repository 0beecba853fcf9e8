package memory_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/memory"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/chatgw/gateway/tools"
)

// A model's memory_remember call goes through the registry; the chat family
// then asks SystemContext for the system message to put first.
func ExampleService_SystemContext() {
	ctx := context.Background()
	svc := memory.New(memory.Config{Store: memstore.New(), Clock: clock.NewFake(t0)})
	reg, err := tools.NewRegistry(svc.Tools()...)
	if err != nil {
		panic(err)
	}
	args := json.RawMessage(`{"key":"name","value":"Ada","visibility":"private"}`)
	if _, err := reg.Run(ctx, "memory_remember", tools.Call{TenantID: "acme", UserID: "alice", Arguments: args}); err != nil {
		panic(err)
	}
	text, err := svc.SystemContext(ctx, "acme", "alice")
	if err != nil {
		panic(err)
	}
	fmt.Println(text)
	// Output:
	// Memory:
	// - name: Ada
}
