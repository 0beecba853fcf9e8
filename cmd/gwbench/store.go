package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/chatgw/gateway/internal/pgtest"
)

// The gateway's store is bbolt in the data directory, as gatewayd's default,
// unless -store-url names PostgreSQL: a database by URL, or storePgtest, a
// throw-away cluster gwbench starts for the run.
const (
	// storePgtest is the -store-url of a throw-away PostgreSQL cluster
	// (internal/pgtest, with fsync on), optionally followed by ?pgx
	// parameters added to the gateways' URL, such as pool_max_conns.
	storePgtest = "pgtest"
	// storeURLEnv carries the PostgreSQL URL to a serve-gateway child: in its
	// environment rather than on its command line, which every user of the
	// machine can read in /proc and which may hold a password.
	storeURLEnv = "GWBENCH_STORE_URL"
	// storeTimeout bounds starting the throw-away cluster or reaching the
	// database before the run.
	storeTimeout = time.Minute
)

// storeDesc describes the gateway's store for the report.
type storeDesc struct {
	name    string // "bbolt" or "postgresql"
	version string // PostgreSQL's server_version; "" for bbolt
	about   string // where it is and how it syncs its commits
}

// isPostgresURL reports whether u names a PostgreSQL database, as
// gatewayd's GATEWAY_STORE_URL does.
func isPostgresURL(u string) bool {
	return strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://")
}

// pgtestParams returns the pgx parameters of a -store-url of storePgtest
// ("" without), and whether it is one.
func pgtestParams(u string) (params string, ok bool) {
	if u == storePgtest {
		return "", true
	}
	return strings.CutPrefix(u, storePgtest+"?")
}

// validateStore checks -store-url and the flags that depend on the store.
// Its errors never quote the URL, which may hold a password.
func (c config) validateStore() error {
	params, pgt := pgtestParams(c.storeURL)
	if _, err := url.ParseQuery(params); err != nil {
		return fmt.Errorf("-store-url %s?...: %w", storePgtest, err)
	}
	switch {
	case c.storeURL != "" && !pgt && !isPostgresURL(c.storeURL):
		return errors.New("-store-url: want postgres://..., postgresql://... or " + storePgtest + " (unset: bbolt in the data directory)")
	case c.replicas < 1:
		return errors.New("-gateway-replicas must be at least 1")
	case c.replicas > 1 && c.storeURL == "":
		return fmt.Errorf("-gateway-replicas %d needs a PostgreSQL -store-url (postgres://... or %s): bbolt allows one process", c.replicas, storePgtest)
	case c.storeURL != "" && c.dataDir != "":
		return errors.New("-data-dir is the bbolt store's directory: it has no use with -store-url")
	}
	return nil
}

// openStore prepares the store the gateways will open: nothing for bbolt
// (each gateway opens its own file), a throw-away cluster and database for
// storePgtest. A PostgreSQL database is reached once before any gateway
// starts, so that a wrong URL fails at once, and to read its version and how
// it syncs commits for the report.
func (b *bench) openStore(ctx context.Context) error {
	cfg := b.cfg
	if cfg.storeURL == "" {
		b.store = storeDesc{name: "bbolt", about: "gateway.db in a temporary directory"}
		if cfg.dataDir != "" {
			b.store.about = "gateway.db in -data-dir"
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	b.storeURL, b.store.about = cfg.storeURL, "the database of -store-url"
	if params, ok := pgtestParams(cfg.storeURL); ok {
		u, err := b.startCluster(ctx, params)
		if err != nil {
			return err
		}
		b.storeURL, b.store.about = u, "a throw-away cluster gwbench started on 127.0.0.1"
	}
	return b.describePostgres(ctx)
}

// startCluster starts the throw-away cluster, which close removes, and
// returns the URL of a new database in it with params added.
func (b *bench) startCluster(ctx context.Context, params string) (string, error) {
	fmt.Fprintf(b.log, "gwbench: starting a throw-away PostgreSQL cluster\n")
	c, err := pgtest.NewCluster(pgtest.Config{Durable: true})
	if err != nil {
		return "", fmt.Errorf("-store-url %s: %w", storePgtest, err)
	}
	b.cleanup = append(b.cleanup, func() { c.Close() })
	u, err := c.CreateDatabase(ctx, "gwbench")
	if err != nil {
		return "", fmt.Errorf("-store-url %s: %w", storePgtest, err)
	}
	if params != "" {
		u += "&" + params // pgtest's URLs already have a query
	}
	return u, nil
}

// describePostgres connects to b.storeURL and fills in the report's
// description of the store.
func (b *bench) describePostgres(ctx context.Context) error {
	// The URL may carry pool settings (pool_max_conns) that only pgxpool
	// knows; a single connection would send them to the server as settings.
	pc, err := pgxpool.ParseConfig(b.storeURL) // its errors mask the password
	if err != nil {
		return fmt.Errorf("-store-url: %w", err)
	}
	conn, err := pgx.ConnectConfig(ctx, pc.ConnConfig)
	if err != nil {
		return fmt.Errorf("-store-url: %w", err)
	}
	defer conn.Close(context.Background())
	var version, fsync, syncCommit string
	err = conn.QueryRow(ctx, "SELECT current_setting('server_version'), current_setting('fsync'), current_setting('synchronous_commit')").
		Scan(&version, &fsync, &syncCommit)
	if err != nil {
		return fmt.Errorf("-store-url: read the server's settings: %w", err)
	}
	b.store.name, b.store.version = "postgresql", version
	b.store.about += ", fsync " + fsync + ", synchronous_commit " + syncCommit
	return nil
}

// redactArgs returns the command line with the password of any PostgreSQL
// URL in it masked, for the report.
func redactArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		for _, scheme := range []string{"postgres://", "postgresql://"} {
			if k := strings.Index(a, scheme); k >= 0 {
				out[i] = a[:k] + redactURL(a[k:], scheme)
				break
			}
		}
	}
	return out
}

// redactURL masks the password of a PostgreSQL URL, in its user part or in
// its password parameter; a URL that does not parse is cut after the scheme.
func redactURL(s, scheme string) string {
	u, err := url.Parse(s)
	if err != nil {
		return scheme + "..."
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}
