package testkit

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer that a server, a logger's goroutine or a child
// process writes while the test reads it: Write and String are safe for
// concurrent use. The zero Buffer is empty and ready.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
