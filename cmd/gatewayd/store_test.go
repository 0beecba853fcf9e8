package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chatgw/gateway/internal/pgtest"
	"github.com/chatgw/gateway/internal/testkit"
)

func TestOpenStoreBolt(t *testing.T) {
	dataDir, other := t.TempDir(), t.TempDir()
	for _, tt := range []struct{ url, file string }{
		{"bolt:store.db", filepath.Join(dataDir, "store.db")},
		{"bolt:" + filepath.Join(other, "abs.db"), filepath.Join(other, "abs.db")},
	} {
		st, err := openStore(context.Background(), &config{StoreURL: tt.url, DataDir: dataDir})
		if err != nil {
			t.Fatalf("openStore(%q): %v", tt.url, err)
		}
		st.Close()
		if _, err := os.Stat(tt.file); err != nil {
			t.Errorf("openStore(%q) made no file %s: %v", tt.url, tt.file, err)
		}
	}
	for _, url := range []string{"", "bolt:"} {
		st, err := openStore(context.Background(), &config{StoreURL: url, DataDir: dataDir})
		if st != nil || err != nil {
			t.Errorf("openStore(%q) = %v, %v; want nil, nil (gateway.New's default)", url, st, err)
		}
	}
}

func TestRunRefusesUnknownStore(t *testing.T) {
	for _, tt := range []struct{ url, scheme string }{
		{"mysql://u:s3cret@db/gw", `"mysql"`},
		{"POSTGRES://u:s3cret@db/gw", `"POSTGRES"`},
		{"host=db password=s3cret", `"(none)"`},
		{"sqlite:/var/gw.db", `"sqlite"`},
	} {
		err := run(context.Background(), []string{"-dev", "-local-url", "", "-data-dir", t.TempDir(), "-store-url", tt.url}, envOf(nil), &testkit.Buffer{})
		if err == nil {
			t.Errorf("run with store URL %q started", tt.url)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "GATEWAY_STORE_URL") || !strings.Contains(msg, tt.scheme) || strings.Contains(msg, "s3cret") {
			t.Errorf("run with store URL %q = %q, want an error naming GATEWAY_STORE_URL and the scheme %s, without the password", tt.url, msg, tt.scheme)
		}
	}
}

// TestRunWithPostgres runs gatewayd on a PostgreSQL store: what it writes
// lands in the database, and on exit it closes its connections.
func TestRunWithPostgres(t *testing.T) {
	c := pgtest.New(t)
	url := c.NewDatabase(t) + "&application_name=gatewayd-test"
	base, token, stop := startDev(t, "-store-url", url)
	req, _ := http.NewRequest("PUT", base+"/v1/tenant/config", strings.NewReader(`{"key":"default_model","value":"lm-4-scout"}`))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("PUT /v1/tenant/config = %d", resp.StatusCode)
	}
	if err := stop(); err != nil {
		t.Fatalf("shutdown: %v", err)
	}

	pc, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	conn := c.Conn(t, pc.Database)
	ctx := context.Background()
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM chatgw_kv WHERE bucket = 'tenantcfg/values'").Scan(&n); err != nil || n != 1 {
		t.Errorf("tenant config records in PostgreSQL: %d, %v; want 1", n, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'gatewayd-test'").Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections of gatewayd still open after it exited", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
