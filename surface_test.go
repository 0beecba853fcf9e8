package gateway_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/chatgw/gateway/agents"
	"github.com/chatgw/gateway/anthropic"
	"github.com/chatgw/gateway/chat"
	"github.com/chatgw/gateway/conversation"
	"github.com/chatgw/gateway/images"
	"github.com/chatgw/gateway/internal/preflight"
	"github.com/chatgw/gateway/memory"
	"github.com/chatgw/gateway/openai"
	"github.com/chatgw/gateway/quota"
	"github.com/chatgw/gateway/rag"
	"github.com/chatgw/gateway/responses"
	"github.com/chatgw/gateway/runs"
	"github.com/chatgw/gateway/tenantconfig"
	"github.com/chatgw/gateway/usage"
)

// TestPublicConfigsExposeNoInternalType: an embedder can fill every field of
// a family's Config, because no field's type (nor a type in a field's
// signature) lives in internal/, which other modules cannot import.
func TestPublicConfigsExposeNoInternalType(t *testing.T) {
	// The walk finds an internal type behind a pointer in a signature.
	if internalType(reflect.TypeOf(struct{ F func() []*preflight.Result }{}), map[reflect.Type]bool{}) == "" {
		t.Fatal("internalType missed preflight.Result")
	}
	for _, cfg := range []any{
		agents.Config{}, anthropic.Config{}, chat.Config{}, conversation.Config{}, images.Config{}, memory.Config{},
		openai.Config{}, quota.Config{}, rag.Config{}, responses.Config{}, runs.Config{}, tenantconfig.Config{}, usage.Config{},
	} {
		typ := reflect.TypeOf(cfg)
		for i := range typ.NumField() {
			f := typ.Field(i)
			if !f.IsExported() {
				continue
			}
			if bad := internalType(f.Type, map[reflect.Type]bool{}); bad != "" {
				t.Errorf("%s.%s exposes %s, a type from internal/", typ, f.Name, bad)
			}
		}
	}
}

// internalType returns the first type from internal/ that t is or is built
// from, or "".
func internalType(t reflect.Type, seen map[reflect.Type]bool) string {
	if seen[t] {
		return ""
	}
	seen[t] = true
	if strings.Contains(t.PkgPath(), "/internal/") {
		return t.String()
	}
	var parts []reflect.Type
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Chan:
		parts = append(parts, t.Elem())
	case reflect.Map:
		parts = append(parts, t.Key(), t.Elem())
	case reflect.Func:
		for i := range t.NumIn() {
			parts = append(parts, t.In(i))
		}
		for i := range t.NumOut() {
			parts = append(parts, t.Out(i))
		}
	case reflect.Struct:
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				parts = append(parts, t.Field(i).Type)
			}
		}
	}
	for _, p := range parts {
		if bad := internalType(p, seen); bad != "" {
			return bad
		}
	}
	return ""
}
