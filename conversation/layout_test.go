package conversation_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chatgw/gateway/conversation"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/store/boltstore"
)

// Layout 1 is the storage layout with conv/owner, the global claim of a
// conversation id by the first tenant that stored it. layout1.db is a bbolt
// file written by that layout's Repository.Append and Delete, and
// layout1.json is what that layout's repository showed of it (shownBy, one
// entry a line). Both were written by TestLayout1Fixture -update at commit
// d088a7e ("conversation: a bbolt fixture of today's layout, with
// conv/owner"), the last commit of layout 1: two tenants, several users, a
// system prompt, parts content, tool calls, a non-ASCII id and a deleted
// conversation, compacted into 512-byte pages and cut to the pages in use.
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
