package memory

import (
	"context"
	"crypto/sha256"
	"encoding/json"

	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/tools"
)

// rememberArgs are the arguments of memory_remember.
type rememberArgs struct {
	Key          *string `json:"key"`
	Value        *string `json:"value"`
	Visibility   *string `json:"visibility"`
	ScopeID      *string `json:"scope_id"`
	ConfirmToken *string `json:"confirm_token"`
}

// forgetArgs are the arguments of memory_forget.
type forgetArgs struct {
	Key        *string `json:"key"`
	Visibility *string `json:"visibility"`
	ScopeID    *string `json:"scope_id"`
}

// ConfirmRequired is the answer of a public memory_remember without a token.
type ConfirmRequired struct {
	ConfirmRequired bool   `json:"confirm_required"`
	ConfirmToken    string `json:"confirm_token"`
	ExpiresIn       int    `json:"expires_in"`
	Message         string `json:"message"`
}

// RememberResult is the answer of a memory_remember that wrote.
type RememberResult struct {
	Stored     bool   `json:"stored"`
	Key        string `json:"key"`
	Visibility string `json:"visibility"`
	ScopeID    string `json:"scope_id"`
}

// ForgetResult is the answer of memory_forget.
type ForgetResult struct {
	Deleted    bool   `json:"deleted"`
	Key        string `json:"key"`
	Visibility string `json:"visibility"`
	ScopeID    string `json:"scope_id"`
}

const (
	rememberParams = `{"type":"object","properties":{` +
		`"key":{"type":"string","description":"Short name of the fact; writing an existing key replaces its value."},` +
		`"value":{"type":"string","description":"The fact to remember."},` +
		`"visibility":{"type":"string","enum":["private","public"],"description":"private: only this user sees it; public: every user of the scope sees it (needs a confirmation: the first call answers a confirm_token)."},` +
		`"scope_id":{"type":"string","description":"Scope of the memory bucket; default \"default\"."},` +
		`"confirm_token":{"type":"string","description":"For a public write: the token of the first call, sent with otherwise identical arguments within 60 seconds."}` +
		`},"required":["key","value","visibility"],"additionalProperties":false}`
	forgetParams = `{"type":"object","properties":{` +
		`"key":{"type":"string","description":"Key of the entry to delete."},` +
		`"visibility":{"type":"string","enum":["private","public"]},` +
		`"scope_id":{"type":"string","description":"Scope of the memory bucket; default \"default\"."}` +
		`},"required":["key","visibility"],"additionalProperties":false}`
)

// Tools returns the memory tools, memory_remember and memory_forget, for the
// gateway's tool registry. Both need the caller's scope memory:write and a user
// (Call.UserID; without one: missing_field headers.gw-user-id).
//
// memory_remember {key, value, visibility, scope_id?, confirm_token?} writes a
// private entry at once. A public one without confirm_token writes nothing and
// answers {"confirm_required":true,"confirm_token":"...","expires_in":60}; the
// same call with the token then writes. A wrong, reused, expired or mismatched
// token (other arguments, tenant or user) is 400 memory_confirm_required
// (confirm_token). The write itself behaves as POST /v1/memory (409
// memory_bucket_full when over the cap, checked already before a token is issued).
//
// memory_forget {key, visibility, scope_id?} answers {"deleted":bool,...}.
func (s *Service) Tools() []tools.Tool {
	return []tools.Tool{
		{
			Name:        "memory_remember",
			Description: "Stores a fact about the user (private) or for everyone in a scope (public) in the gateway's memory; memory is added to later chats.",
			Parameters:  json.RawMessage(rememberParams),
			Scope:       "memory:write",
			Execute:     s.remember,
		},
		{
			Name:        "memory_forget",
			Description: "Deletes a remembered fact by key.",
			Parameters:  json.RawMessage(forgetParams),
			Scope:       "memory:write",
			Execute:     s.forget,
		},
	}
}

// decodeCall checks that call names a user and decodes its arguments into
// args: the start of both memory tools.
func decodeCall(call tools.Call, args any) error {
	if call.UserID == "" {
		return httpx.ErrNoUser()
	}
	return tools.DecodeArgs(call.Arguments, args)
}

// argBucket validates the visibility and scope_id arguments of a memory tool.
func argBucket(call tools.Call, vis, scope *string) (bucketKey, error) {
	return bucketOf(call.TenantID, call.UserID, vis, scope, tools.ArgParam)
}

func requiredArg(v *string, name string) (string, error) {
	if v == nil {
		return "", tools.MissingArg(name)
	}
	if *v == "" {
		return "", tools.InvalidArg(name, name+" must not be empty.")
	}
	return *v, nil
}

func (s *Service) remember(ctx context.Context, call tools.Call) (any, error) {
	var a rememberArgs
	if err := decodeCall(call, &a); err != nil {
		return nil, err
	}
	key, err := requiredArg(a.Key, "key")
	if err != nil {
		return nil, err
	}
	value, err := requiredArg(a.Value, "value")
	if err != nil {
		return nil, err
	}
	b, err := argBucket(call, a.Visibility, a.ScopeID)
	if err != nil {
		return nil, err
	}
	if b.visibility != Public {
		return s.rememberNow(ctx, b, key, value)
	}
	digest := confirmDigest(b, call.UserID, key, value)
	if a.ConfirmToken == nil || *a.ConfirmToken == "" {
		return s.askConfirm(ctx, b, key, value, digest)
	}
	return s.rememberConfirmed(ctx, b, key, value, digest, *a.ConfirmToken)
}

// askConfirm issues the confirm token of a public write (issueConfirm, which
// checks that the write fits now).
func (s *Service) askConfirm(ctx context.Context, b bucketKey, key, value string, digest [sha256.Size]byte) (any, error) {
	tok, err := s.issueConfirm(ctx, b, key, value, digest)
	if err != nil {
		return nil, err
	}
	return ConfirmRequired{ConfirmRequired: true, ConfirmToken: tok, ExpiresIn: ConfirmTTLSeconds,
		Message: "Public memory is shared with every user of the scope. Ask the user to confirm, then repeat the call with the same arguments and this confirm_token within 60 seconds."}, nil
}

// rememberConfirmed redeems tok for the public write digest names and writes
// it (writeConfirmed); a failed write keeps the token so that the confirmed
// call can be retried.
func (s *Service) rememberConfirmed(ctx context.Context, b bucketKey, key, value string, digest [sha256.Size]byte, tok string) (any, error) {
	if err := s.writeConfirmed(ctx, b, key, value, digest, tok); err != nil {
		return nil, err
	}
	return RememberResult{Stored: true, Key: key, Visibility: b.visibility, ScopeID: b.scope}, nil
}

// rememberNow writes key=value into b and answers as memory_remember does.
func (s *Service) rememberNow(ctx context.Context, b bucketKey, key, value string) (any, error) {
	if _, err := s.putEntry(ctx, b, key, value); err != nil {
		return nil, err
	}
	return RememberResult{Stored: true, Key: key, Visibility: b.visibility, ScopeID: b.scope}, nil
}

func (s *Service) forget(ctx context.Context, call tools.Call) (any, error) {
	var a forgetArgs
	if err := decodeCall(call, &a); err != nil {
		return nil, err
	}
	key, err := requiredArg(a.Key, "key")
	if err != nil {
		return nil, err
	}
	b, err := argBucket(call, a.Visibility, a.ScopeID)
	if err != nil {
		return nil, err
	}
	deleted, err := s.deleteEntry(ctx, b, key)
	if err != nil {
		return nil, err
	}
	return ForgetResult{Deleted: deleted, Key: key, Visibility: b.visibility, ScopeID: b.scope}, nil
}
