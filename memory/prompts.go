package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/store"
)

// System-prompt levels, injected in this order.
const (
	LevelTenant = "tenant"
	LevelScope  = "scope"
	LevelUser   = "user"
)

// Version is one system-prompt version as the API shows it.
type Version struct {
	N         uint64    `json:"n"`
	Content   string    `json:"content"`
	IsCurrent bool      `json:"is_current"`
	CreatedAt time.Time `json:"created_at"`
}

// promptRef names one level's version history: the tenant's tenant level, one
// scope_id's scope level, or one user's user level.
type promptRef struct {
	tenant, level, subject string
}

func (p promptRef) prefix() []byte {
	k := store.AppendString(nil, p.tenant)
	k = store.AppendString(k, p.level)
	return store.AppendString(k, p.subject)
}

func (p promptRef) versionKey(n uint64) []byte { return store.AppendUint64(p.prefix(), n) }

// headRecord is the state of a level: the last version number ever given
// (numbers are never reused, even after a hard delete) and the current version
// (0: none, after a soft delete).
type headRecord struct {
	Last    uint64 `json:"last"`
	Current uint64 `json:"current"`
}

type versionRecord struct {
	Content   string    `json:"content"`
	CreatedAt time.Time `json:"created_at"`
}

func readHead(tx store.Tx, p promptRef) (headRecord, error) {
	var h headRecord
	raw := tx.Get(bucketPromptHeads, p.prefix())
	if raw == nil {
		return h, nil
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		return h, fmt.Errorf("memory: prompt head: %w", err)
	}
	return h, nil
}

func readVersion(tx store.Tx, p promptRef, n uint64) (*versionRecord, error) {
	if n == 0 {
		return nil, nil
	}
	raw := tx.Get(bucketPrompts, p.versionKey(n))
	if raw == nil {
		return nil, nil
	}
	var v versionRecord
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("memory: prompt version: %w", err)
	}
	return &v, nil
}

func errVersionNotFound(p promptRef, n string) *errcat.Error {
	return errcat.Newf(errcat.SystemPromptVersionNotFound, "version",
		"Version %s of the %s system prompt does not exist.", n, p.level)
}

// putVersion stores content as version last+1 and makes it current.
func (s *Service) putVersion(ctx context.Context, p promptRef, content string) (Version, error) {
	v := Version{Content: content, IsCurrent: true, CreatedAt: s.clk.Now().UTC()}
	err := s.st.Update(ctx, func(tx store.Tx) error {
		h, err := readHead(tx, p)
		if err != nil {
			return err
		}
		h.Last++
		h.Current = h.Last
		v.N = h.Last
		if err := putJSON(tx, bucketPrompts, p.versionKey(v.N), versionRecord{Content: content, CreatedAt: v.CreatedAt}); err != nil {
			return err
		}
		return putJSON(tx, bucketPromptHeads, p.prefix(), h)
	})
	if err != nil {
		return Version{}, storeErr(err)
	}
	return v, nil
}

// versions returns every stored version of p, oldest first.
func (s *Service) versions(ctx context.Context, p promptRef) ([]Version, error) {
	out := []Version{}
	err := s.st.View(ctx, func(tx store.Tx) error {
		h, err := readHead(tx, p)
		if err != nil {
			return err
		}
		pre := p.prefix()
		return tx.Scan(bucketPrompts, pre, false, func(k, val []byte) (bool, error) {
			n, _, err := store.ReadUint64(k[len(pre):])
			if err != nil {
				return false, err
			}
			var rec versionRecord
			if err := json.Unmarshal(val, &rec); err != nil {
				return false, fmt.Errorf("memory: prompt version: %w", err)
			}
			out = append(out, Version{N: n, Content: rec.Content, IsCurrent: n == h.Current, CreatedAt: rec.CreatedAt})
			return true, nil
		})
	})
	if err != nil {
		return nil, storeErr(err)
	}
	return out, nil
}

// current returns the current version of p, or system_prompt_version_not_found
// when the level has none.
func (s *Service) current(ctx context.Context, p promptRef) (Version, error) {
	var v Version
	err := s.st.View(ctx, func(tx store.Tx) error {
		h, err := readHead(tx, p)
		if err != nil {
			return err
		}
		rec, err := readVersion(tx, p, h.Current)
		if err != nil {
			return err
		}
		if rec == nil {
			return errcat.Newf(errcat.SystemPromptVersionNotFound, "version",
				"The %s system prompt has no current version.", p.level)
		}
		v = Version{N: h.Current, Content: rec.Content, IsCurrent: true, CreatedAt: rec.CreatedAt}
		return nil
	})
	return v, storeErr(err)
}

// setCurrent makes version n of p current (rollback, or restore after a soft
// delete).
func (s *Service) setCurrent(ctx context.Context, p promptRef, n uint64) (Version, error) {
	var v Version
	err := s.st.Update(ctx, func(tx store.Tx) error {
		h, err := readHead(tx, p)
		if err != nil {
			return err
		}
		rec, err := readVersion(tx, p, n)
		if err != nil {
			return err
		}
		if rec == nil {
			return errVersionNotFound(p, fmt.Sprint(n))
		}
		v = Version{N: n, Content: rec.Content, IsCurrent: true, CreatedAt: rec.CreatedAt}
		if h.Current == n {
			return nil
		}
		h.Current = n
		return putJSON(tx, bucketPromptHeads, p.prefix(), h)
	})
	return v, storeErr(err)
}

// deleteVersion hard-deletes version n of p: system_prompt_current_locked when
// it is current, system_prompt_version_not_found when it does not exist.
func (s *Service) deleteVersion(ctx context.Context, p promptRef, n uint64) error {
	return storeErr(s.st.Update(ctx, func(tx store.Tx) error {
		h, err := readHead(tx, p)
		if err != nil {
			return err
		}
		rec, err := readVersion(tx, p, n)
		if err != nil {
			return err
		}
		if rec == nil {
			return errVersionNotFound(p, fmt.Sprint(n))
		}
		if h.Current == n {
			return errcat.Newf(errcat.SystemPromptCurrentLocked, "version",
				"Version %d is the current %s system prompt; roll back to another version or soft-delete the level first.", n, p.level)
		}
		return tx.Delete(bucketPrompts, p.versionKey(n))
	}))
}

// softDelete leaves p without a current version and reports whether it had one.
func (s *Service) softDelete(ctx context.Context, p promptRef) (bool, error) {
	had := false
	err := s.st.Update(ctx, func(tx store.Tx) error {
		h, err := readHead(tx, p)
		if err != nil {
			return err
		}
		had = h.Current != 0
		if !had {
			return nil
		}
		h.Current = 0
		return putJSON(tx, bucketPromptHeads, p.prefix(), h)
	})
	if err != nil {
		return false, storeErr(err)
	}
	return had, nil
}

// currentContent returns the content of p's current version, or "".
func currentContent(tx store.Tx, p promptRef) (string, error) {
	h, err := readHead(tx, p)
	if err != nil || h.Current == 0 {
		return "", err
	}
	rec, err := readVersion(tx, p, h.Current)
	if err != nil || rec == nil {
		return "", err
	}
	return rec.Content, nil
}
