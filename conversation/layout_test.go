package conversation_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/conversation"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/store/boltstore"
	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"
)

var update = flag.Bool("update", false, "rewrite testdata/layout1.db and testdata/layout1.json with this commit's code")

// Layout 1 is the storage layout with conv/owner, the global claim of a
// conversation id by the first tenant that stored it. layout1.db is a bbolt
// file written by that layout's Repository.Append and Delete (writeLayout1),
// and layout1.json is what that layout's repository showed of it (shownBy):
// a newer layout must read the same file and show the same.
const (
	layout1DB   = "testdata/layout1.db"
	layout1JSON = "testdata/layout1.json"
)

// The callers and ids shownBy asks about: every tenant of the fixture and one
// without conversations, the tenant-wide view ("") and every user, every id
// stored, the deleted one and one never used.
var (
	layoutTenants = []string{"acme", "globex", "initech"}
	layoutUsers   = []string{"", "alice", "bob", "carol", "dave"}
	layoutIDs     = []string{"T-1001", "T-1002", "T-1003", "T-1004", "T-1005", "T-1006", "G-1", "tícket ü", "T-9999"}
)

// writeLayout1 writes the fixture's conversations through repo, one second
// apart.
func writeLayout1(t *testing.T, repo *conversation.Repository, clk *clock.Fake) {
	t.Helper()
	ctx := context.Background()
	turn := func(tenant, user, id, sys string, msgs ...string) {
		t.Helper()
		raw := make([]json.RawMessage, len(msgs))
		for i, m := range msgs {
			raw[i] = json.RawMessage(m)
		}
		if err := repo.Append(ctx, tenant, user, id, raw, sys); err != nil {
			t.Fatalf("Append(%s, %s, %s): %v", tenant, user, id, err)
		}
		clk.Advance(time.Second)
	}
	turn("acme", "alice", "T-1001", "be brief", `{"role":"user","content":"printer on fire"}`, `{"role":"assistant","content":"unplug it"}`)
	turn("acme", "bob", "T-1002", "", `{"role":"user","content":"what time is it?"}`,
		`{"role":"assistant","content":"","tool_calls":[{"id":"call_1","type":"function","function":{"name":"current_time","arguments":"{}"}}]}`)
	turn("acme", "alice", "T-1003", "", `{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}`,
		`{"role":"assistant","content":"a cat"}`)
	turn("acme", "carol", "T-1004", "", `{"role":"user","content":"deleted later"}`, `{"role":"assistant","content":"ok"}`)
	turn("globex", "dave", "T-1005", "globex sys", `{"role":"user","content":"globex question"}`, `{"role":"assistant","content":"globex answer"}`)
	turn("acme", "alice", "T-1006", "", `{"role":"user","content":"first"}`, `{"role":"assistant","content":"one"}`)
	turn("globex", "alice", "G-1", "", `{"role":"user","content":"same user id, other tenant"}`, `{"role":"assistant","content":"hi"}`)
	turn("acme", "bob", "tícket ü", "", `{"role":"user","content":"non-ASCII id"}`, `{"role":"assistant","content":"fine"}`)
	turn("acme", "alice", "T-1001", "ignored", `{"role":"user","content":"still burning"}`, `{"role":"assistant","content":"call 112"}`)
	if n, err := repo.Delete(ctx, "acme", "carol", "T-1004"); err != nil || n != 2 {
		t.Fatalf("Delete(T-1004) = %d, %v; want 2", n, err)
	}
}

// shownEntry is one call of shownBy and its result as compact JSON; layout1.json
// holds one a line.
type shownEntry struct {
	Call   string          `json:"call"`
	Result json.RawMessage `json:"result"`
}

// shownBy asks repo every question the API can ask of the fixture: every
// caller's list, whole and in pages of 2, and every caller's Get and Load of
// every id (Load only with a user: /c1/chat always has one). Errors show as
// their code.
func shownBy(t *testing.T, repo *conversation.Repository) []shownEntry {
	t.Helper()
	ctx := context.Background()
	var out []shownEntry
	add := func(call string, v any, err error) {
		if err != nil {
			v = map[string]string{"error": string(errcat.CodeOf(err))}
		}
		b, jerr := json.Marshal(v)
		if jerr != nil {
			t.Fatalf("%s: %v", call, jerr)
		}
		out = append(out, shownEntry{call, b})
	}
	type summary struct {
		ID           string `json:"id"`
		UserID       string `json:"user_id"`
		MessageCount int64  `json:"message_count"`
		LastUpdated  string `json:"last_updated"`
	}
	type page struct {
		Data    []summary `json:"data"`
		HasMore bool      `json:"has_more"`
	}
	list := func(tenant, user string, limit, offset int) (page, error) {
		got, more, err := repo.List(ctx, tenant, user, limit, offset)
		p := page{Data: []summary{}, HasMore: more}
		for _, s := range got {
			p.Data = append(p.Data, summary{s.ID, s.UserID, s.MessageCount, s.LastUpdated.Format(time.RFC3339Nano)})
		}
		return p, err
	}
	for _, tenant := range layoutTenants {
		for _, user := range layoutUsers {
			who := fmt.Sprintf("%s %q", tenant, user)
			p, err := list(tenant, user, conversation.MaxLimit, 0)
			add("List "+who, p, err)
			for off := 0; ; off += 2 {
				p, err := list(tenant, user, 2, off)
				add(fmt.Sprintf("List %s limit 2 offset %d", who, off), p, err)
				if err != nil || !p.HasMore {
					break
				}
			}
			for _, id := range layoutIDs {
				c, err := repo.Get(ctx, tenant, user, id)
				add(fmt.Sprintf("Get %s %q", who, id), struct {
					ID       string            `json:"id"`
					UserID   string            `json:"user_id"`
					Messages []json.RawMessage `json:"messages"`
				}{c.ID, c.UserID, c.Messages}, err)
				if user != "" {
					msgs, err := repo.Load(ctx, tenant, user, id)
					add(fmt.Sprintf("Load %s %q", who, id), msgs, err)
				}
			}
		}
	}
	return out
}

// openCopy opens a copy of the bbolt file at path in t.TempDir(), so that
// the test never changes the fixture.
func openCopy(t *testing.T, path string) *boltstore.DB {
	t.Helper()
	src, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst := filepath.Join(t.TempDir(), filepath.Base(path))
	f, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, src); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := boltstore.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func readShown(t *testing.T) []shownEntry {
	t.Helper()
	b, err := os.ReadFile(layout1JSON)
	if err != nil {
		t.Fatal(err)
	}
	var want []shownEntry
	for dec := json.NewDecoder(bytes.NewReader(b)); dec.More(); {
		var e shownEntry
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("%s: %v", layout1JSON, err)
		}
		want = append(want, e)
	}
	return want
}

// TestLayout1Fixture checks that the fixture and what it shows agree with
// this commit's repository; with -update it writes both.
func TestLayout1Fixture(t *testing.T) {
	if *update {
		writeFixture(t)
	}
	repo := conversation.NewRepository(openCopy(t, layout1DB), nil)
	if diff := cmp.Diff(readShown(t), shownBy(t, repo)); diff != "" {
		t.Errorf("layout 1 fixture mismatch (-want +got):\n%s", diff)
	}
}

// writeFixture writes layout1.db, compacted into 512-byte pages and cut to the
// pages in use to keep it small, and layout1.json.
func writeFixture(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	full, err := boltstore.Open(filepath.Join(dir, "full.db"))
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
	repo := conversation.NewRepository(full, clk)
	writeLayout1(t, repo, clk)
	shown := shownBy(t, repo)
	if err := full.Close(); err != nil {
		t.Fatal(err)
	}
	src, err := bolt.Open(filepath.Join(dir, "full.db"), 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := os.Remove(layout1DB); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	dst, err := bolt.Open(layout1DB, 0o644, &bolt.Options{PageSize: 512})
	if err != nil {
		t.Fatal(err)
	}
	if err := bolt.Compact(dst, src, 0); err != nil {
		t.Fatal(err)
	}
	var used int64
	if err := dst.View(func(tx *bolt.Tx) error { used = tx.Size(); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	// bbolt grows a file to its 32 KiB minimum mapping; the pages past the
	// high-water mark hold nothing, and bbolt grows the file again on write.
	if err := os.Truncate(layout1DB, used); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, e := range shown {
		line, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	if err := os.WriteFile(layout1JSON, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
