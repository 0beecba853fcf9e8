package rag

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/tools"
)

// searchArgs are the arguments of rag_search.
type searchArgs struct {
	Index *string `json:"index"`
	Query *string `json:"query"`
	K     *int    `json:"k"`
}

const searchParams = `{"type":"object","properties":{` +
	`"index":{"type":"string","description":"Id of the RAG index to search."},` +
	`"query":{"type":"string","description":"What to look for, in words (lexical BM25 ranking: use the words the documents would use)."},` +
	`"k":{"type":"integer","minimum":1,"maximum":50,"description":"Number of passages to return; default 5."}` +
	`},"required":["index","query"],"additionalProperties":false}`

// Tool returns the rag_search tool for the gateway's tool registry (scope
// rag:read). Its arguments are {"index","query","k"?}; it searches the index
// of the call's tenant as GET /a1/rag/indices/{index}/search?q=&k= does and
// answers the same {"object":"list","data":[Hit...]}. A missing index or
// query is missing_field "arguments.index" / "arguments.query"; a blank query
// or a k outside 1..MaxK is invalid_field "arguments.query" / "arguments.k";
// an unknown index (or another tenant's) is index_not_found (param "id").
// No user is needed: indices belong to the tenant.
func (s *Service) Tool() tools.Tool {
	return tools.Tool{
		Name:        "rag_search",
		Description: "Searches a document index of the gateway and returns the best matching passages, best first, with their doc_id and score.",
		Parameters:  json.RawMessage(searchParams),
		Scope:       "rag:read",
		Execute:     s.searchTool,
	}
}

func (s *Service) searchTool(ctx context.Context, call tools.Call) (any, error) {
	var a searchArgs
	if err := tools.DecodeArgs(call.Arguments, &a); err != nil {
		return nil, err
	}
	if a.Index == nil {
		return nil, tools.MissingArg("index")
	}
	if *a.Index == "" {
		return nil, tools.InvalidArg("index", "index must not be empty.")
	}
	if a.Query == nil {
		return nil, tools.MissingArg("query")
	}
	switch {
	case strings.TrimSpace(*a.Query) == "":
		return nil, tools.InvalidArg("query", "query must not be empty.")
	case len(*a.Query) > MaxQueryBytes:
		return nil, tools.InvalidArg("query", "query is over the limit of 4096 bytes.")
	}
	k := DefaultK
	if a.K != nil {
		if *a.K < 1 || *a.K > MaxK {
			return nil, tools.InvalidArg("k", "k must be an integer from 1 to 50.")
		}
		k = *a.K
	}
	tenant := call.TenantID
	if tenant == "" && call.Principal != nil && call.Principal.Tenant != nil {
		tenant = call.Principal.Tenant.ID
	}
	if tenant == "" {
		return nil, errcat.Internal(errors.New("rag_search: call without a tenant"))
	}
	hits, err := s.Search(ctx, tenant, *a.Index, *a.Query, k)
	if err != nil {
		return nil, err
	}
	return newList(hits), nil
}
