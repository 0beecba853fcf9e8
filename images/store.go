package images

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/store"
)

// The image buckets (layout in the package doc).
var (
	imgMetaBucket   = []byte("img/meta")
	imgDataBucket   = []byte("img/data")
	imgExpiryBucket = []byte("img/expiry")
	imgRateBucket   = []byte("img/rate")
)

// purgeBatchSize bounds the images one purge transaction deletes.
const purgeBatchSize = 256

// maxImageIDLen bounds the ids worth looking up; longer ones are unknown.
const maxImageIDLen = 64

func imageKey(tenant, id string) []byte {
	return store.AppendString(store.AppendString(nil, tenant), id)
}

func expiryKey(expires time.Time, tenant, id string) []byte {
	k := store.AppendUint64(nil, uint64(expires.UnixNano()))
	k = store.AppendString(k, tenant)
	return store.AppendString(k, id)
}

// newImageID returns "img_" + 16 hex digits of now in Unix nanoseconds + 16
// random hex digits.
func newImageID(now time.Time) string {
	var b [16]byte
	store.AppendUint64(b[:0], uint64(now.UnixNano()))
	_, _ = rand.Read(b[8:]) // crypto/rand.Read never fails (Go 1.24+)
	return "img_" + hex.EncodeToString(b[:])
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// errImageNotFound leaves a transaction without committing it.
var errImageNotFound = errors.New("images: image not found")

// quotaRefusal says why a reservation was refused: wait is the time until the
// request would fit.
type quotaRefusal struct{ wait time.Duration }

// reserve counts n images against the tenant's hourly budget limit, or answers
// 429 model_quota_exhausted. It returns the ledger key of the reservation.
func (s *Service) reserve(ctx context.Context, tenant string, n, limit int) ([]byte, error) {
	now := s.clock.Now()
	prefix := store.AppendString(nil, tenant)
	key := store.AppendString(store.AppendUint64(bytes.Clone(prefix), uint64(now.UnixNano())), randomHex(8))
	var refusal *quotaRefusal
	err := s.st.Update(ctx, func(tx store.Tx) error {
		refusal = nil
		type entry struct {
			at time.Time
			n  int
		}
		var (
			live  []entry
			stale [][]byte
			used  int
		)
		err := tx.Scan(imgRateBucket, prefix, false, func(k, v []byte) (bool, error) {
			at, _, err := store.ReadUint64(k[len(prefix):])
			if err != nil {
				return false, err
			}
			t := time.Unix(0, int64(at))
			if !t.After(now.Add(-RateWindow)) {
				stale = append(stale, bytes.Clone(k))
				return true, nil
			}
			c, err := strconv.Atoi(string(v))
			if err != nil {
				return false, fmt.Errorf("img/rate entry: %w", err)
			}
			live = append(live, entry{t, c})
			used += c
			return true, nil
		})
		if err != nil {
			return err
		}
		for _, k := range stale {
			if err := tx.Delete(imgRateBucket, k); err != nil {
				return err
			}
		}
		if used+n > limit {
			need, freed := used+n-limit, 0
			refusal = &quotaRefusal{wait: RateWindow}
			for _, e := range live {
				if freed += e.n; freed >= need {
					refusal.wait = e.at.Add(RateWindow).Sub(now)
					break
				}
			}
			return nil // commit the stale deletions
		}
		return tx.Put(imgRateBucket, key, []byte(strconv.Itoa(n)))
	})
	if err != nil {
		return nil, errcat.Storage(fmt.Errorf("images.reserve: %w", err))
	}
	if refusal != nil {
		return nil, &errcat.Error{
			Code: errcat.ModelQuotaExhausted,
			Message: fmt.Sprintf("This tenant's image generation budget (image_gen_rate_per_hour %d) is used up; "+
				"retry after the Retry-After seconds.", limit),
			RetryAfter: errcat.RetryAfterSeconds(refusal.wait),
		}
	}
	return key, nil
}

// release returns a reservation after a failed generation. It runs even when
// the client went away; a failure is only logged (the entry leaves the window
// within the hour anyway).
func (s *Service) release(ctx context.Context, key []byte) {
	err := s.st.Update(context.WithoutCancel(ctx), func(tx store.Tx) error {
		return tx.Delete(imgRateBucket, key)
	})
	if err != nil {
		httpx.InfoFrom(ctx).Logger.LogAttrs(ctx, slog.LevelWarn, "image rate reservation not released", slog.String("error", err.Error()))
	}
}

// save stores the generated images of req for tenant, and charges the
// reservation what was delivered, in one transaction. It runs even when the
// client went away: the images exist and were charged.
func (s *Service) save(ctx context.Context, tenant string, req *genRequest, images []genImage, reservation []byte) ([]imageJSON, error) {
	now := s.clock.Now().UTC()
	saved := make([]imageJSON, len(images))
	metas := make([][]byte, len(images))
	for i, img := range images {
		saved[i] = imageJSON{
			ID: newImageID(now), Object: "image", CreatedAt: now,
			ExpiresAt: now.Add(time.Duration(req.ttl) * time.Hour), TTLHours: req.ttl,
			Model: req.model.Alias, MimeType: img.mime, Bytes: len(img.data), RevisedPrompt: img.revisedPrompt,
		}
		var err error
		if metas[i], err = json.Marshal(&saved[i]); err != nil {
			return nil, errcat.Internal(err)
		}
	}
	err := s.st.Update(context.WithoutCancel(ctx), func(tx store.Tx) error {
		for i, img := range saved {
			key := imageKey(tenant, img.ID)
			if err := tx.Put(imgMetaBucket, key, metas[i]); err != nil {
				return err
			}
			if err := tx.Put(imgDataBucket, key, images[i].data); err != nil {
				return err
			}
			if err := tx.Put(imgExpiryBucket, expiryKey(img.ExpiresAt, tenant, img.ID), []byte{}); err != nil {
				return err
			}
		}
		if len(images) != req.n {
			return tx.Put(imgRateBucket, reservation, []byte(strconv.Itoa(len(images))))
		}
		return nil
	})
	if err != nil {
		return nil, errcat.Storage(fmt.Errorf("images.save: %w", err))
	}
	return saved, nil
}

// list returns a page of the tenant's live images, newest first, and whether
// more follow.
func (s *Service) list(ctx context.Context, tenant string, pg httpx.Page) ([]imageJSON, bool, error) {
	now := s.clock.Now()
	var (
		page []imageJSON
		win  httpx.Window
	)
	err := s.st.View(ctx, func(tx store.Tx) error {
		// Reset: a store may run the callback again (a retried transaction).
		page, win = []imageJSON{}, httpx.Window{Page: pg}
		return tx.Scan(imgMetaBucket, store.AppendString(nil, tenant), true, func(_, v []byte) (bool, error) {
			var img imageJSON
			if err := json.Unmarshal(v, &img); err != nil {
				return false, fmt.Errorf("img/meta record: %w", err)
			}
			switch {
			case !img.ExpiresAt.After(now): // expired: not in any page
				return true, nil
			case win.Skip():
				return true, nil
			case win.Full(len(page)):
				return false, nil
			}
			page = append(page, img)
			return true, nil
		})
	})
	if err != nil {
		return nil, false, errcat.Storage(fmt.Errorf("images.list: %w", err))
	}
	return page, win.More, nil
}

// get returns the tenant's live image id with its bytes, or image_not_found.
func (s *Service) get(ctx context.Context, tenant, id string) (*imageJSON, []byte, error) {
	if id == "" || len(id) > maxImageIDLen {
		return nil, nil, imageNotFound()
	}
	now := s.clock.Now()
	var (
		img  imageJSON
		data []byte
	)
	err := s.st.View(ctx, func(tx store.Tx) error {
		key := imageKey(tenant, id)
		raw := tx.Get(imgMetaBucket, key)
		if raw == nil {
			return errImageNotFound
		}
		if err := json.Unmarshal(raw, &img); err != nil {
			return fmt.Errorf("img/meta record: %w", err)
		}
		if !img.ExpiresAt.After(now) {
			return errImageNotFound
		}
		data = bytes.Clone(tx.Get(imgDataBucket, key))
		if data == nil {
			return errors.New("img/data record missing")
		}
		return nil
	})
	switch {
	case errors.Is(err, errImageNotFound):
		return nil, nil, imageNotFound()
	case err != nil:
		return nil, nil, errcat.Storage(fmt.Errorf("images.get: %w", err))
	}
	return &img, data, nil
}

// delete removes the tenant's live image id, or answers image_not_found.
func (s *Service) delete(ctx context.Context, tenant, id string) error {
	if id == "" || len(id) > maxImageIDLen {
		return imageNotFound()
	}
	now := s.clock.Now()
	err := s.st.Update(ctx, func(tx store.Tx) error {
		key := imageKey(tenant, id)
		raw := tx.Get(imgMetaBucket, key)
		if raw == nil {
			return errImageNotFound
		}
		var img imageJSON
		if err := json.Unmarshal(raw, &img); err != nil {
			return fmt.Errorf("img/meta record: %w", err)
		}
		if !img.ExpiresAt.After(now) {
			return errImageNotFound // the purger removes it
		}
		return deleteImage(tx, img.ExpiresAt, tenant, id)
	})
	switch {
	case errors.Is(err, errImageNotFound):
		return imageNotFound()
	case err != nil:
		return errcat.Storage(fmt.Errorf("images.delete: %w", err))
	}
	return nil
}

func deleteImage(tx store.Tx, expires time.Time, tenant, id string) error {
	key := imageKey(tenant, id)
	if err := tx.Delete(imgMetaBucket, key); err != nil {
		return err
	}
	if err := tx.Delete(imgDataBucket, key); err != nil {
		return err
	}
	return tx.Delete(imgExpiryBucket, expiryKey(expires, tenant, id))
}

// PurgeExpired deletes every image whose expires_at is at or before
// Clock.Now(), walking the expiry index from the oldest expiry (live images are
// never read), in transactions of at most 256 images, and drops rate-ledger
// entries that left the window. It returns the number of images deleted; a
// store failure is returned wrapped, with the count deleted before it.
func (s *Service) PurgeExpired(ctx context.Context) (int, error) {
	now := s.clock.Now()
	total := 0
	for {
		n, err := s.purgeBatch(ctx, now)
		total += n
		if err != nil {
			return total, fmt.Errorf("images.PurgeExpired: %w", err)
		}
		if n < purgeBatchSize {
			break
		}
	}
	if err := s.trimRateLedger(ctx, now); err != nil {
		return total, fmt.Errorf("images.PurgeExpired: %w", err)
	}
	return total, nil
}

// purgeBatch deletes up to purgeBatchSize expired images in one transaction.
func (s *Service) purgeBatch(ctx context.Context, now time.Time) (int, error) {
	n := 0
	err := s.st.Update(ctx, func(tx store.Tx) error {
		n = 0
		var keys [][]byte
		err := tx.Scan(imgExpiryBucket, nil, false, func(k, _ []byte) (bool, error) {
			at, _, err := store.ReadUint64(k)
			if err != nil {
				return false, err
			}
			if int64(at) > now.UnixNano() {
				return false, nil
			}
			keys = append(keys, bytes.Clone(k))
			return len(keys) < purgeBatchSize, nil
		})
		if err != nil {
			return err
		}
		for _, k := range keys {
			_, rest, _ := store.ReadUint64(k)
			tenant, rest, err := store.ReadString(rest)
			if err != nil {
				return err
			}
			id, _, err := store.ReadString(rest)
			if err != nil {
				return err
			}
			key := imageKey(tenant, id)
			for _, del := range []struct{ bucket, key []byte }{
				{imgMetaBucket, key}, {imgDataBucket, key}, {imgExpiryBucket, k},
			} {
				if err := tx.Delete(del.bucket, del.key); err != nil {
					return err
				}
			}
		}
		n = len(keys)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// trimRateLedger drops the ledger entries of every tenant that left the window
// (reserve drops a tenant's own on each request; this catches idle tenants).
// The ledger holds at most image_gen_rate_per_hour entries per tenant.
func (s *Service) trimRateLedger(ctx context.Context, now time.Time) error {
	return s.st.Update(ctx, func(tx store.Tx) error {
		return store.DeleteMatching(tx, imgRateBucket, nil, func(k, _ []byte) (bool, error) {
			_, rest, err := store.ReadString(k)
			if err != nil {
				return false, err
			}
			at, _, err := store.ReadUint64(rest)
			if err != nil {
				return false, err
			}
			return !time.Unix(0, int64(at)).After(now.Add(-RateWindow)), nil
		})
	})
}
