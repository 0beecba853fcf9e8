package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/store/boltstore"
	"github.com/chatgw/gateway/store/pgstore"
)

// openStore opens the store GATEWAY_STORE_URL names, which the caller closes
// after the gateway:
//
//   - unset, or "bolt:" alone: nil, and gateway.New opens the bbolt file
//     gateway.db in the data directory itself;
//   - "bolt:" + path: the bbolt file at path, relative to the data directory
//     unless absolute;
//   - "postgres://..." or "postgresql://...": PostgreSQL (store/pgstore).
//
// Anything else stops start-up. Errors name the scheme, never the URL, which
// may hold a password.
func openStore(ctx context.Context, cfg *config) (store.Store, error) {
	u := cfg.StoreURL
	switch {
	case u == "" || u == "bolt:":
		return nil, nil
	case strings.HasPrefix(u, "bolt:"):
		path := strings.TrimPrefix(u, "bolt:")
		if !filepath.IsAbs(path) {
			path = filepath.Join(cfg.DataDir, path)
		}
		db, err := boltstore.Open(path)
		if err != nil {
			return nil, fmt.Errorf("GATEWAY_STORE_URL: %w", err)
		}
		return db, nil
	case strings.HasPrefix(u, "postgres://"), strings.HasPrefix(u, "postgresql://"):
		db, err := pgstore.Open(ctx, u)
		if err != nil {
			return nil, fmt.Errorf("GATEWAY_STORE_URL: %w", err)
		}
		return db, nil
	}
	scheme, _, found := strings.Cut(u, ":")
	if !found || strings.ContainsAny(scheme, "/@?") {
		scheme = "(none)"
	}
	return nil, fmt.Errorf("GATEWAY_STORE_URL: unknown store scheme %q: want postgres://..., postgresql://... or bolt:<path> (unset: bbolt in the data directory)", scheme)
}
