package memory

import (
	"context"
	"net/http"
	"strconv"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
)

// promptPutRequest is the body of PUT /v1/system-prompts/{level}.
type promptPutRequest struct {
	Content *string `json:"content"`
	ScopeID *string `json:"scope_id"`
}

// versionList is the answer of GET /v1/system-prompts/{level}/versions.
type versionList struct {
	Object string `json:"object"`
	Level  string `json:"level"`
	// Current is the current version number, null when none.
	Current *uint64   `json:"current"`
	Data    []Version `json:"data"`
}

// promptRefOf resolves the level path parameter of r and its subject. scope is
// the request's scope_id ("" when absent) and scopeParam where it came from: it
// selects the scope of the scope level and is invalid_field on the other levels.
func promptRefOf(r *http.Request, scope, scopeParam string) (promptRef, error) {
	tenant, err := httpx.TenantID(r)
	if err != nil {
		return promptRef{}, err
	}
	p := promptRef{tenant: tenant, level: httpx.Param(r, "level")}
	switch p.level {
	case LevelTenant, LevelUser:
		if scope != "" {
			return p, errcat.Newf(errcat.InvalidField, scopeParam, "scope_id applies only to the scope level, not to the %s level.", p.level)
		}
		if p.level == LevelUser {
			if p.subject, err = userOf(r); err != nil {
				return p, err
			}
		}
	case LevelScope:
		if p.subject, err = scopeOf(scope, scopeParam); err != nil {
			return p, err
		}
	default:
		return p, errcat.Newf(errcat.InvalidField, "level", "Unknown system-prompt level %q; use tenant, scope or user.", p.level)
	}
	return p, nil
}

// queryPromptRef is promptRefOf with the scope_id of the query string.
func queryPromptRef(r *http.Request) (promptRef, error) {
	return promptRefOf(r, r.URL.Query().Get("scope_id"), "query.scope_id")
}

// versionRef names one version: the level of the path and query, and n.
type versionRef struct {
	promptRef
	n uint64
}

// queryVersionRef is queryPromptRef and the path parameter n; anything but a
// positive integer names no version: system_prompt_version_not_found.
func queryVersionRef(r *http.Request) (versionRef, error) {
	p, err := queryPromptRef(r)
	if err != nil {
		return versionRef{}, err
	}
	s := httpx.Param(r, "n")
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n == 0 {
		return versionRef{}, errVersionNotFound(p, strconv.Quote(s))
	}
	return versionRef{promptRef: p, n: n}, nil
}

// promptPut is a validated PUT /v1/system-prompts/{level}.
type promptPut struct {
	ref     promptRef
	content string
}

// decodePromptPut reads PUT /v1/system-prompts/{level}. The scope_id may come
// from the body or the query; when both name one they must agree.
func decodePromptPut(r *http.Request) (promptPut, error) {
	var req promptPutRequest
	if err := httpx.Decode(r, &req); err != nil {
		return promptPut{}, err
	}
	scope, scopeParam := r.URL.Query().Get("scope_id"), "query.scope_id"
	if req.ScopeID != nil {
		if scope != "" && scope != *req.ScopeID {
			return promptPut{}, errcat.New(errcat.InvalidField, "body.scope_id", "scope_id in the body and in the query differ.")
		}
		scope, scopeParam = *req.ScopeID, "body.scope_id"
	}
	p, err := promptRefOf(r, scope, scopeParam)
	if err != nil {
		return promptPut{}, err
	}
	content, err := requiredString(req.Content, "body.content")
	if err != nil {
		return promptPut{}, err
	}
	if len(content) > PromptCapBytes {
		return promptPut{}, errcat.Newf(errcat.SystemPromptTooLarge, "content",
			"The system prompt is %d bytes; a level holds at most %d.", len(content), PromptCapBytes)
	}
	return promptPut{ref: p, content: content}, nil
}

// PutPrompt handles PUT /v1/system-prompts/{level} (scope
// system_prompts:write:{level}): {"content","scope_id"?} becomes version
// last+1 and current; 200 with the Version.
func (s *Service) PutPrompt(w http.ResponseWriter, r *http.Request) {
	httpx.Handle(w, r, decodePromptPut, func(ctx context.Context, in promptPut) (Version, error) {
		return s.putVersion(ctx, in.ref, in.content)
	})
}

// GetPrompt handles GET /v1/system-prompts/{level}?scope_id= (scope
// system_prompts:read): 200 with the current Version, or 404
// system_prompt_version_not_found when the level has none.
func (s *Service) GetPrompt(w http.ResponseWriter, r *http.Request) {
	httpx.Handle(w, r, queryPromptRef, s.current)
}

// ListPromptVersions handles GET /v1/system-prompts/{level}/versions?scope_id=
// (scope system_prompts:read): {"object":"list","level","current","data":[Version...]}
// oldest first.
func (s *Service) ListPromptVersions(w http.ResponseWriter, r *http.Request) {
	httpx.Handle(w, r, queryPromptRef, func(ctx context.Context, p promptRef) (versionList, error) {
		vs, err := s.versions(ctx, p)
		if err != nil {
			return versionList{}, err
		}
		out := versionList{Object: "list", Level: p.level, Data: vs}
		for i := range vs {
			if vs[i].IsCurrent {
				out.Current = &vs[i].N
			}
		}
		return out, nil
	})
}

// SetCurrentPrompt handles PUT /v1/system-prompts/{level}/current/{n}?scope_id=
// (scope system_prompts:write:{level}): version n becomes current (rollback,
// or restore after a soft delete); 200 with the Version; unknown n is 404
// system_prompt_version_not_found.
func (s *Service) SetCurrentPrompt(w http.ResponseWriter, r *http.Request) {
	httpx.Handle(w, r, queryVersionRef, func(ctx context.Context, v versionRef) (Version, error) {
		return s.setCurrent(ctx, v.promptRef, v.n)
	})
}

// DeletePromptVersion handles DELETE /v1/system-prompts/{level}/v/{n}?scope_id=
// (scope system_prompts:write:{level}): hard delete; 200 {"deleted":true,"n":N};
// the current version is 409 system_prompt_current_locked, an unknown one 404
// system_prompt_version_not_found.
func (s *Service) DeletePromptVersion(w http.ResponseWriter, r *http.Request) {
	httpx.Handle(w, r, queryVersionRef, func(ctx context.Context, v versionRef) (map[string]any, error) {
		if err := s.deleteVersion(ctx, v.promptRef, v.n); err != nil {
			return nil, err
		}
		return map[string]any{"deleted": true, "n": v.n}, nil
	})
}

// DeletePrompt handles DELETE /v1/system-prompts/{level}?scope_id= (scope
// system_prompts:write:{level}): soft delete, the level keeps its versions but
// has no current one; 200 {"deleted":true} when one was current,
// {"deleted":false} when none was.
func (s *Service) DeletePrompt(w http.ResponseWriter, r *http.Request) {
	httpx.Handle(w, r, queryPromptRef, func(ctx context.Context, p promptRef) (map[string]bool, error) {
		had, err := s.softDelete(ctx, p)
		return map[string]bool{"deleted": had}, err
	})
}
