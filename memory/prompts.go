package memory

import (
	"context"
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

// readHead returns the head of p; the zero head when p never had a version.
func readHead(tx store.Tx, p promptRef) (headRecord, error) {
	var h headRecord
	_, err := store.GetJSON(tx, bucketPromptHeads, p.prefix(), &h)
	return h, err
}

// putHead stores the head of p, in the transaction that changes its versions.
func putHead(tx store.Tx, p promptRef, h headRecord) error {
	return store.PutJSON(tx, bucketPromptHeads, p.prefix(), h)
}

// readVersion returns version n of p, or nil when it does not exist (n 0, the
// head's "no current version", never does).
func readVersion(tx store.Tx, p promptRef, n uint64) (*versionRecord, error) {
	if n == 0 {
		return nil, nil
	}
	var v versionRecord
	if ok, err := store.GetJSON(tx, bucketPrompts, p.versionKey(n), &v); !ok {
		return nil, err
	}
	return &v, nil
}

// readCurrent returns the number and record of p's current version; the
// record is nil when p has none.
func readCurrent(tx store.Tx, p promptRef) (uint64, *versionRecord, error) {
	h, err := readHead(tx, p)
	if err != nil {
		return 0, nil, err
	}
	rec, err := readVersion(tx, p, h.Current)
	return h.Current, rec, err
}

// readExisting returns the head of p and its version n, or
// system_prompt_version_not_found when n does not exist: the common start of
// the operations on one version.
func readExisting(tx store.Tx, p promptRef, n uint64) (headRecord, versionRecord, error) {
	h, err := readHead(tx, p)
	if err != nil {
		return h, versionRecord{}, err
	}
	rec, err := readVersion(tx, p, n)
	if err != nil {
		return h, versionRecord{}, err
	}
	if rec == nil {
		return h, versionRecord{}, errVersionNotFound(p, fmt.Sprint(n))
	}
	return h, *rec, nil
}

// version is rec as the API shows it, as version n.
func (rec versionRecord) version(n uint64, current bool) Version {
	return Version{N: n, Content: rec.Content, IsCurrent: current, CreatedAt: rec.CreatedAt}
}

func errVersionNotFound(p promptRef, n string) *errcat.Error {
	return errcat.Newf(errcat.SystemPromptVersionNotFound, "version",
		"Version %s of the %s system prompt does not exist.", n, p.level)
}

// putVersion stores content as version last+1 and makes it current.
func (s *Service) putVersion(ctx context.Context, p promptRef, content string) (Version, error) {
	rec := versionRecord{Content: content, CreatedAt: s.clk.Now().UTC()}
	res, err := store.UpdateValue(ctx, s.st, func(tx store.Tx) (Version, error) {
		h, err := readHead(tx, p)
		if err != nil {
			return Version{}, err
		}
		h.Last++
		h.Current = h.Last
		if err := store.PutJSON(tx, bucketPrompts, p.versionKey(h.Last), rec); err != nil {
			return Version{}, err
		}
		if err := putHead(tx, p, h); err != nil {
			return Version{}, err
		}
		return rec.version(h.Last, true), nil
	})
	return res, errcat.FromStore(err)
}

// versions returns every stored version of p, oldest first.
func (s *Service) versions(ctx context.Context, p promptRef) ([]Version, error) {
	res, err := store.ViewValue(ctx, s.st, func(tx store.Tx) ([]Version, error) {
		h, err := readHead(tx, p)
		if err != nil {
			return nil, err
		}
		out := []Version{}
		pre := p.prefix()
		err = store.ScanJSON(tx, bucketPrompts, pre, false, func(k []byte, rec versionRecord) (bool, error) {
			n, _, err := store.ReadUint64(k[len(pre):])
			if err != nil {
				return false, err
			}
			out = append(out, rec.version(n, n == h.Current))
			return true, nil
		})
		return out, err
	})
	return res, errcat.FromStore(err)
}

// current returns the current version of p, or system_prompt_version_not_found
// when the level has none.
func (s *Service) current(ctx context.Context, p promptRef) (Version, error) {
	res, err := store.ViewValue(ctx, s.st, func(tx store.Tx) (Version, error) {
		n, rec, err := readCurrent(tx, p)
		if err != nil {
			return Version{}, err
		}
		if rec == nil {
			return Version{}, errcat.Newf(errcat.SystemPromptVersionNotFound, "version",
				"The %s system prompt has no current version.", p.level)
		}
		return rec.version(n, true), nil
	})
	return res, errcat.FromStore(err)
}

// setCurrent makes version n of p current (rollback, or restore after a soft
// delete).
func (s *Service) setCurrent(ctx context.Context, p promptRef, n uint64) (Version, error) {
	res, err := store.UpdateValue(ctx, s.st, func(tx store.Tx) (Version, error) {
		h, rec, err := readExisting(tx, p, n)
		if err != nil {
			return Version{}, err
		}
		if h.Current != n {
			h.Current = n
			if err := putHead(tx, p, h); err != nil {
				return Version{}, err
			}
		}
		return rec.version(n, true), nil
	})
	return res, errcat.FromStore(err)
}

// deleteVersion hard-deletes version n of p: system_prompt_current_locked when
// it is current, system_prompt_version_not_found when it does not exist.
func (s *Service) deleteVersion(ctx context.Context, p promptRef, n uint64) error {
	return errcat.FromStore(s.st.Update(ctx, func(tx store.Tx) error {
		h, _, err := readExisting(tx, p, n)
		if err != nil {
			return err
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
	res, err := store.UpdateValue(ctx, s.st, func(tx store.Tx) (bool, error) {
		h, err := readHead(tx, p)
		if err != nil || h.Current == 0 {
			return false, err
		}
		h.Current = 0
		return true, putHead(tx, p, h)
	})
	return res, errcat.FromStore(err)
}

// currentContent returns the content of p's current version, or "".
func currentContent(tx store.Tx, p promptRef) (string, error) {
	_, rec, err := readCurrent(tx, p)
	if err != nil || rec == nil {
		return "", err
	}
	return rec.Content, nil
}
