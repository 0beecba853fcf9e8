package pgtest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
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

func TestNewClusterDurable(t *testing.T) {
	c, err := pgtest.NewCluster(pgtest.Config{Durable: true})
	if errors.Is(err, pgtest.ErrUnavailable) {
		t.Skip(err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	url, err := c.CreateDatabase(ctx, "durable")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, setting := range []string{"fsync", "full_page_writes"} {
		var v string
		if err := conn.QueryRow(ctx, "SHOW "+setting).Scan(&v); err != nil {
			t.Fatal(err)
		}
		got = append(got, setting+"="+v)
	}
	conn.Close(ctx)
	if diff := cmp.Diff([]string{"fsync=on", "full_page_writes=on"}, got); diff != "" {
		t.Errorf("settings of a durable cluster mismatch (-want +got):\n%s", diff)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if conn, err := pgx.Connect(ctx, url+"&connect_timeout=1"); err == nil {
		conn.Close(ctx)
		t.Errorf("connected to %s after Close", url)
	}
}
