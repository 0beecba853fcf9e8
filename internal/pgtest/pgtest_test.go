package pgtest_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/chatgw/gateway/internal/pgtest"
)

func TestClusterRestartKeepsData(t *testing.T) {
	c := pgtest.New(t)
	url := c.NewDatabase(t)
	ctx := context.Background()
	conn := c.Conn(t, dbOf(url))
	if _, err := conn.Exec(ctx, "CREATE TABLE t (v int); INSERT INTO t VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	port := c.Port()
	c.Restart(t)
	if c.Port() != port {
		t.Errorf("port after restart = %d, want %d", c.Port(), port)
	}
	var v int
	if err := c.Conn(t, dbOf(url)).QueryRow(ctx, "SELECT v FROM t").Scan(&v); err != nil || v != 42 {
		t.Errorf("after restart: v = %d, %v; want 42", v, err)
	}
	c.Stop(t)
	c.Stop(t) // stopping a stopped cluster does nothing
}

func TestDatabasesAreSeparate(t *testing.T) {
	c := pgtest.New(t)
	a, b := c.NewDatabase(t), c.NewDatabase(t)
	if a == b {
		t.Fatalf("two NewDatabase calls returned %s", a)
	}
	ctx := context.Background()
	if _, err := c.Conn(t, dbOf(a)).Exec(ctx, "CREATE TABLE only_in_a (v int)"); err != nil {
		t.Fatal(err)
	}
	var n int
	err := c.Conn(t, dbOf(b)).QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'only_in_a'").Scan(&n)
	if err != nil || n != 0 {
		t.Errorf("table of database a seen in b: %d, %v", n, err)
	}
}

// dbOf returns the database name of a URL made by pgtest.
func dbOf(url string) string {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		panic(err)
	}
	return cfg.Database
}
