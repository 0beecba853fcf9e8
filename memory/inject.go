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
	refs, buckets := contextSources(make([]promptRef, 0, 3), make([]bucketKey, 0, 2), tenantID, userID)
	err := func() error {
		for _, p := range refs {
			c, err := currentContent(tx, p)
			if err != nil {
				return err
			}
			if c = strings.TrimSpace(clip(c, PromptCapBytes)); c != "" {
				prompts = append(prompts, c)
			}
		}
		for _, b := range buckets {
			var err error
			if mem, err = scanEntries(tx, b, mem); err != nil {
				return err
			}
		}
		return nil
	}()
	if err != nil {
		return "", errcat.FromStore(err)
	}
	if len(mem) > 0 {
		prompts = append(prompts, memoryList(mem))
	}
	return strings.Join(prompts, "\n\n"), nil
}

// AppendContextReads appends to dst the first reads of SystemContextTx (the
// prompt heads and the memory buckets' usage records), for a caller that
// prefetches its read transaction (store.Prefetcher). What they lead to (a
// prompt's current version, a bucket's entries) is read when found.
func (s *Service) AppendContextReads(dst []store.Read, tenantID, userID string) []store.Read {
	refs, buckets := contextSources(make([]promptRef, 0, 3), make([]bucketKey, 0, 2), tenantID, userID)
	for _, p := range refs {
		dst = append(dst, store.Read{Bucket: bucketPromptHeads, Key: p.prefix()})
	}
	for _, b := range buckets {
		dst = append(dst, store.Read{Bucket: bucketUsage, Key: b.prefix()})
	}
	return dst
}

// contextSources appends to refs and buckets the prompt levels and memory
// buckets of the system context of userID in tenantID, in their order in the
// text: the tenant, scope and user prompts, then the private and public
// memory of the default scope. userID "" has neither a user prompt nor
// private memory. Callers pass slices of capacity 3 and 2, which then stay
// on their stack (a /c1 turn calls it).
func contextSources(refs []promptRef, buckets []bucketKey, tenantID, userID string) ([]promptRef, []bucketKey) {
	refs = append(refs,
		promptRef{tenant: tenantID, level: LevelTenant},
		promptRef{tenant: tenantID, level: LevelScope, subject: DefaultScope})
	if userID != "" {
		refs = append(refs, promptRef{tenant: tenantID, level: LevelUser, subject: userID})
		buckets = append(buckets, newBucketKey(tenantID, DefaultScope, Private, userID))
	}
	return refs, append(buckets, newBucketKey(tenantID, DefaultScope, Public, userID))
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
