package pgstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrationFS holds the schema migrations, applied in the order of their
// numbers: migrations/NNNN_name.sql. A migration, once released, is never
// edited: a change of schema is a new file.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

// migrationLock is the key of the advisory lock under which migrations run
// ("chatgw" in ASCII), shared by every gateway using the database.
const migrationLock int64 = 0x636861746777

// compatibleMarker, the first line of a migration, says that gateways built
// before it keep working on a database that has it: it only adds what they
// never use (a function, a table, a column with a default), so the replicas
// of a fleet can be upgraded one at a time, and an old one that restarts
// meanwhile still starts. A migration without it may change what earlier
// gateways rely on, and they refuse a database that has it.
const compatibleMarker = "-- chatgw: compatible with earlier gateways\n"

// migration is one schema migration.
type migration struct {
	version    int
	name       string // file name
	sql        string
	compatible bool // it begins with compatibleMarker
}

// migrations returns the embedded migrations in order of version.
func migrations() ([]migration, error) {
	files, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	for i, f := range files { // fs.Glob sorts by name
		name := path.Base(f)
		num, _, _ := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if err != nil || v != i+1 {
			return nil, fmt.Errorf("migration %s: want number %04d", name, i+1)
		}
		b, err := migrationFS.ReadFile(f)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: name, sql: string(b),
			compatible: strings.HasPrefix(string(b), compatibleMarker)})
	}
	return out, nil
}

// migrate applies the migrations the database lacks, in one transaction that
// first takes the advisory lock migrationLock: gateways starting together
// wait for one another, and each finds what the one before it applied.
//
// The transaction is READ COMMITTED on purpose: each statement then reads
// the database as committed when it starts, so the statements after the lock
// see the migrations of the gateway that held it before. (Under REPEATABLE
// READ or SERIALIZABLE the snapshot would date from the lock statement, from
// before the wait.)
//
// A database that records a version this build does not know was migrated by
// a newer gateway. It is used as it is when every such migration was marked
// compatible with earlier gateways (compatibleMarker, recorded in the
// migrations table's compatible column); otherwise it is refused and left
// alone.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	return pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrationLock); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		if err := ensureMigrationsTable(ctx, tx); err != nil {
			return err
		}
		var applied int
		if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM chatgw_migrations").Scan(&applied); err != nil {
			return err
		}
		if applied > len(ms) {
			return checkNewer(ctx, tx, applied, len(ms))
		}
		for _, m := range ms[applied:] {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO chatgw_migrations (version, name, compatible) VALUES ($1, $2, $3)",
				m.version, m.name, m.compatible); err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
		}
		return nil
	})
}

// ensureMigrationsTable creates chatgw_migrations, or adds its compatible
// column, only when they are missing: a role that may use the tables but not
// create or alter them (no CREATE on the schema, owning nothing) then starts
// on a database that an owner migrated. Gateways that predate the column
// insert without it: their migrations count as not compatible, which is what
// they promised.
func ensureMigrationsTable(ctx context.Context, tx pgx.Tx) error {
	var table, column bool
	err := tx.QueryRow(ctx, `SELECT to_regclass('chatgw_migrations') IS NOT NULL,
		EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('chatgw_migrations')
			AND attname = 'compatible' AND NOT attisdropped)`).Scan(&table, &column)
	switch {
	case err != nil:
		return err
	case !table:
		_, err = tx.Exec(ctx, `CREATE TABLE chatgw_migrations (
			version    integer PRIMARY KEY,
			name       text NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now(),
			compatible boolean NOT NULL DEFAULT false
		)`)
	case !column:
		_, err = tx.Exec(ctx, `ALTER TABLE chatgw_migrations
			ADD COLUMN IF NOT EXISTS compatible boolean NOT NULL DEFAULT false`)
	}
	return err
}

// checkNewer accepts a database whose schema, at version applied, is newer
// than this build's known when every migration after known is marked
// compatible with earlier gateways.
func checkNewer(ctx context.Context, tx pgx.Tx, applied, known int) error {
	var name string
	err := tx.QueryRow(ctx, `SELECT name FROM chatgw_migrations
		WHERE version > $1 AND NOT compatible ORDER BY version LIMIT 1`, known).Scan(&name)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil
	case err != nil:
		return err
	}
	return fmt.Errorf("the database's schema is at version %d, newer than this build's %d: it was migrated by a newer gateway, "+
		"and its migration %s is not marked compatible with earlier ones (upgrade this gateway)", applied, known, name)
}
