package boltstore_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/store/boltstore"
)

func ExampleOpen() {
	dir, err := os.MkdirTemp("", "boltstore-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	db, err := boltstore.Open(filepath.Join(dir, "data", "gateway.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	ctx := context.Background()
	// Batch: a small write that may share its commit with concurrent ones.
	err = db.Batch(ctx, func(tx store.Tx) error {
		return tx.Put([]byte("example/greetings"), []byte("en"), []byte("hello"))
	})
	if err != nil {
		log.Fatal(err)
	}
	var greeting string
	err = db.View(ctx, func(tx store.Tx) error {
		greeting = string(tx.Get([]byte("example/greetings"), []byte("en"))) // copied
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(greeting)
	// Output: hello
}
