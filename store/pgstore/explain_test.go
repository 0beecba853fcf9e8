package pgstore_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chatgw/gateway/internal/pgtest"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/store/pgstore"
)

// Records of the access-path test: bucket "b" holds tenants x perTenant
// records keyed str(tenant) u64(seq), as the families key theirs; buckets "a"
// and "c" hold others on either side.
const (
	tenants   = 1000
	perTenant = 1000
	neighbors = 20000
)

// testAccessPaths loads a million records into a bucket and checks with
// EXPLAIN that every statement of a transaction reads the primary key's
// index, in key order, and never scans the table or sorts: under the plans
// PostgreSQL makes for given values (the first executions of a prepared
// statement) and under the generic plan it may switch to later.
func testAccessPaths(t *testing.T, c *pgtest.Cluster) {
	url := c.NewDatabase(t)
	db := open(t, url)
	ctx := context.Background()
	conn := c.Conn(t, dbName(t, url))
	load := []string{
		// Keys made as store.AppendString(tenant) + store.AppendUint64(seq),
		// inserted in key order.
		fmt.Sprintf(`INSERT INTO chatgw_kv (bucket, key, value)
			SELECT 'b', convert_to('t' || lpad(t::text, 4, '0'), 'UTF8') || '\x0001'::bytea || int8send(s), '{"v":1}'
			FROM generate_series(0, %d) t, generate_series(1, %d) s ORDER BY t, s`, tenants-1, perTenant),
		fmt.Sprintf(`INSERT INTO chatgw_kv (bucket, key, value) SELECT bucket, int8send(s), 'x'
			FROM generate_series(1, %d) s, (VALUES ('a'::bytea), ('c')) AS b(bucket)`, neighbors),
		`ANALYZE chatgw_kv`,
	}
	for _, q := range load {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("load: %v", err)
		}
	}

	tenantPrefix := store.AppendString(nil, "t0042")
	key := store.AppendUint64(tenantPrefix, 7)
	all := []byte{0xff, 0xff} // a prefix without end
	tests := []struct {
		name string
		args []any
	}{
		{"Get", []any{"b", key}},
		{"ScanRange", []any{"b", tenantPrefix, store.PrefixEnd(tenantPrefix), 64}},
		{"ScanRange", []any{"b", []byte("t"), store.PrefixEnd([]byte("t")), 1024}}, // the whole bucket
		{"ScanRangeRev", []any{"b", tenantPrefix, store.PrefixEnd(tenantPrefix), 64}},
		{"ScanRangeRev", []any{"b", []byte("t"), store.PrefixEnd([]byte("t")), 1024}},
		{"ScanFrom", []any{"b", []byte{}, 1024}},
		{"ScanFrom", []any{"b", all, 64}},
		{"ScanFromRev", []any{"b", []byte{}, 1024}},
		{"ScanFromRev", []any{"b", all, 64}},
	}
	for i, tt := range tests {
		sql := pgstore.Statements[tt.name]
		name := fmt.Sprintf("s%d", i)
		if _, err := conn.Exec(ctx, fmt.Sprintf("PREPARE %s AS %s", name, sql)); err != nil {
			t.Fatalf("PREPARE %s: %v", tt.name, err)
		}
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			if _, err := conn.Exec(ctx, "SET plan_cache_mode = "+mode); err != nil {
				t.Fatal(err)
			}
			var out string
			q := fmt.Sprintf("EXPLAIN (FORMAT JSON) EXECUTE %s(%s)", name, literals(tt.args))
			if err := conn.QueryRow(ctx, q).Scan(&out); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			if bad := checkPlan(out); bad != "" {
				t.Errorf("%s %v (%s): %s; plan:\n%s", tt.name, tt.args, mode, bad, out)
			}
		}
	}

	// And the store reads what was loaded.
	n := 0
	err := db.View(ctx, func(tx store.Tx) error {
		if tx.Get([]byte("b"), key) == nil {
			t.Error("Get of a loaded key found nothing")
		}
		return tx.Scan([]byte("b"), tenantPrefix, true, func(k, _ []byte) (bool, error) {
			n++
			return true, nil
		})
	})
	if err != nil || n != perTenant {
		t.Errorf("Scan of a tenant's prefix = %v after %d keys, want %d", err, n, perTenant)
	}
}

// literals writes args as SQL literals: []byte and string as bytea.
func literals(args []any) string {
	var out []string
	for _, a := range args {
		switch v := a.(type) {
		case []byte:
			out = append(out, `'\x`+hex.EncodeToString(v)+`'::bytea`)
		case string:
			out = append(out, `'\x`+hex.EncodeToString([]byte(v))+`'::bytea`)
		default:
			out = append(out, fmt.Sprint(v))
		}
	}
	return strings.Join(out, ", ")
}

// planNode is a node of EXPLAIN's JSON output.
type planNode struct {
	NodeType  string     `json:"Node Type"`
	IndexName string     `json:"Index Name"`
	Plans     []planNode `json:"Plans"`
}

// checkPlan returns what is wrong with an EXPLAIN (FORMAT JSON) output, or
// "": the plan must read chatgw_kv through its primary key's index, and hold
// no sequential scan, bitmap scan or sort.
func checkPlan(out string) string {
	var plans []struct{ Plan planNode }
	if err := json.Unmarshal([]byte(out), &plans); err != nil || len(plans) != 1 {
		return fmt.Sprintf("unreadable plan (%v)", err)
	}
	var nodes []planNode
	var walk func(n planNode)
	walk = func(n planNode) {
		nodes = append(nodes, n)
		for _, c := range n.Plans {
			walk(c)
		}
	}
	walk(plans[0].Plan)
	usesPK := false
	for _, n := range nodes {
		switch {
		case n.NodeType == "Seq Scan", n.NodeType == "Sort", n.NodeType == "Incremental Sort",
			strings.HasPrefix(n.NodeType, "Bitmap"):
			return "a " + n.NodeType
		case slices.Contains([]string{"Index Scan", "Index Only Scan"}, n.NodeType) && n.IndexName == "chatgw_kv_pkey":
			usesPK = true
		}
	}
	if !usesPK {
		return "no scan of the primary key's index chatgw_kv_pkey"
	}
	return ""
}
