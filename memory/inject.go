package memory

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/store"
)

// SystemContext returns the text of the system message that chats of userID in
// tenantID get in first position, or "" when the tenant
// stored nothing that applies. The format is described in the package doc.
//
// It reads everything in one read transaction: five key lookups when nothing is
// stored, plus the scan of a memory bucket only when its usage record says it
// holds entries. userID "" (a /v1 request without GW-User-Id) leaves out the
// user prompt and private memory. The prompts add up to at most 3 x 8 KB; the
// memory part to at most 2 x 16 KB (two bucket caps) plus list markup.
//
// A store failure is returned as an *errcat.Error (storage_error).
func (s *Service) SystemContext(ctx context.Context, tenantID, userID string) (string, error) {
	var text string
	err := s.st.View(ctx, func(tx store.Tx) error {
		var err error
		text, err = s.SystemContextTx(tx, tenantID, userID)
		return err
	})
	if err != nil {
		return "", errcat.FromStore(err)
	}
	return text, nil
}

// SystemContextTx is SystemContext in the caller's read transaction of the
// service's store (a /c1 turn reads its config, history and this in one).
func (s *Service) SystemContextTx(tx store.Tx, tenantID, userID string) (string, error) {
	var prompts []string
	var mem []Entry
	err := func() error {
		refs := []promptRef{
			{tenant: tenantID, level: LevelTenant},
			{tenant: tenantID, level: LevelScope, subject: DefaultScope},
		}
		if userID != "" {
			refs = append(refs, promptRef{tenant: tenantID, level: LevelUser, subject: userID})
		}
		for _, p := range refs {
			c, err := currentContent(tx, p)
			if err != nil {
				return err
			}
			if c = strings.TrimSpace(clip(c, PromptCapBytes)); c != "" {
				prompts = append(prompts, c)
			}
		}
		var err error
		if userID != "" {
			if mem, err = scanEntries(tx, newBucketKey(tenantID, DefaultScope, Private, userID), mem); err != nil {
				return err
			}
		}
		mem, err = scanEntries(tx, newBucketKey(tenantID, DefaultScope, Public, userID), mem)
		return err
	}()
	if err != nil {
		return "", errcat.FromStore(err)
	}
	if len(mem) > 0 {
		prompts = append(prompts, memoryList(mem))
	}
	return strings.Join(prompts, "\n\n"), nil
}

// memoryList renders entries as "Memory:" then one "- key: value" line each;
// line breaks in a key become spaces, and later lines of a value are indented
// by two spaces so that they cannot start a list item of their own.
func memoryList(es []Entry) string {
	var b strings.Builder
	b.WriteString("Memory:")
	keyBreaks := strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ")
	valueBreaks := strings.NewReplacer("\r\n", "\n  ", "\n", "\n  ", "\r", "\n  ")
	for _, e := range es {
		b.WriteString("\n- ")
		b.WriteString(keyBreaks.Replace(e.Key))
		b.WriteString(": ")
		b.WriteString(valueBreaks.Replace(e.Value))
	}
	return b.String()
}

// clip cuts s to at most n bytes on a character boundary (a guard: stored
// versions are already checked against the cap).
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
