package store_test

import (
	"context"
	"fmt"
	"log"

	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/store/memstore"
)

// Messages keyed by (user, conversation, sequence number): a reverse Scan over
// the prefix (user, conversation) lists one conversation newest first, and user
// "u1" never sees "u10"'s records.
func ExampleAppendString() {
	s := memstore.New()
	defer s.Close()
	ctx := context.Background()
	bucket := []byte("example/messages")
	key := func(user, conv string, seq uint64) []byte {
		k := store.AppendString(nil, user)
		k = store.AppendString(k, conv)
		return store.AppendUint64(k, seq)
	}
	err := s.Update(ctx, func(tx store.Tx) error {
		for _, m := range []struct {
			user, conv string
			seq        uint64
			text       string
		}{
			{"u1", "c1", 1, "hello"},
			{"u1", "c1", 2, "how are you?"},
			{"u1", "c1", 10, "bye"},
			{"u10", "c1", 1, "someone else"},
		} {
			if err := tx.Put(bucket, key(m.user, m.conv, m.seq), []byte(m.text)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}

	prefix := store.AppendString(store.AppendString(nil, "u1"), "c1")
	var lines []string
	err = s.View(ctx, func(tx store.Tx) error {
		lines = nil // a store may run the callback again: collect, print after
		return tx.Scan(bucket, prefix, true, func(k, v []byte) (bool, error) {
			seq, _, err := store.ReadUint64(k[len(prefix):])
			if err != nil {
				return false, err
			}
			lines = append(lines, fmt.Sprint(seq, " ", string(v)))
			return true, nil
		})
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// 10 bye
	// 2 how are you?
	// 1 hello
}
