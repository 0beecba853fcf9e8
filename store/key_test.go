package store_test

import (
	"bytes"
	"cmp"
	"errors"
	"math/rand/v2"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/chatgw/gateway/store"
)

// tuple is a (string, uint64, string) key, the shape families use.
type tuple struct {
	A string
	N uint64
	B string
}

func (t tuple) key() []byte {
	k := store.AppendString(nil, t.A)
	k = store.AppendUint64(k, t.N)
	return store.AppendString(k, t.B)
}

func compareTuples(x, y tuple) int {
	if c := cmp.Compare(x.A, y.A); c != 0 {
		return c
	}
	if c := cmp.Compare(x.N, y.N); c != 0 {
		return c
	}
	return cmp.Compare(x.B, y.B)
}

func randString(r *rand.Rand) string {
	// A small alphabet with the bytes that matter makes prefixes and NULs common.
	alphabet := []byte{0x00, 0x01, 'a', 'b', 0xfe, 0xff}
	b := make([]byte, r.IntN(5))
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

func randTuple(r *rand.Rand) tuple {
	ns := []uint64{0, 1, 255, 256, 1 << 56, 0xff00000000000000, ^uint64(0)}
	return tuple{A: randString(r), N: ns[r.IntN(len(ns))], B: randString(r)}
}

func TestKeyOrderMatchesComponents(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		x, y := randTuple(r), randTuple(r)
		want := compareTuples(x, y)
		if got := bytes.Compare(x.key(), y.key()); got != want {
			t.Fatalf("bytes.Compare(%q, %q) = %d, want %d (tuples %+v, %+v)", x.key(), y.key(), got, want, x, y)
		}
		// The encoded leading component is a prefix exactly of the keys with
		// an equal leading component.
		prefix := store.AppendString(nil, x.A)
		if got, want := bytes.HasPrefix(y.key(), prefix), x.A == y.A; got != want {
			t.Fatalf("HasPrefix(key(%+v), AppendString(%q)) = %v, want %v", y, x.A, got, want)
		}
	}
}

func TestKeyRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		want := randTuple(r)
		var got tuple
		var err error
		rest := want.key()
		if got.A, rest, err = store.ReadString(rest); err != nil {
			t.Fatalf("ReadString(%q): %v", want.key(), err)
		}
		if got.N, rest, err = store.ReadUint64(rest); err != nil {
			t.Fatalf("ReadUint64: %v", err)
		}
		if got.B, rest, err = store.ReadString(rest); err != nil {
			t.Fatalf("ReadString: %v", err)
		}
		if diff := gocmp.Diff(want, got); diff != "" {
			t.Fatalf("round trip mismatch (-want +got):\n%s", diff)
		}
		if len(rest) != 0 {
			t.Fatalf("rest = %q, want empty", rest)
		}
	}
}

func TestReadMalformed(t *testing.T) {
	for _, key := range []string{"", "abc", "ab\x00", "ab\x00\x02", "\x00\xff"} {
		if _, _, err := store.ReadString([]byte(key)); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("ReadString(%q) error = %v, want ErrInvalid", key, err)
		}
	}
	if _, _, err := store.ReadUint64([]byte("1234567")); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("ReadUint64(7 bytes) error = %v, want ErrInvalid", err)
	}
}

func TestPrefixEnd(t *testing.T) {
	tests := []struct {
		prefix, want string
		none         bool
	}{
		{prefix: "", none: true},
		{prefix: "\xff", none: true},
		{prefix: "\xff\xff", none: true},
		{prefix: "a", want: "b"},
		{prefix: "ab", want: "ac"},
		{prefix: "a\xff", want: "b"},
		{prefix: "a\xff\xff", want: "b"},
		{prefix: "a\x00", want: "a\x01"},
		{prefix: "\xfe\xff", want: "\xff"},
	}
	for _, tt := range tests {
		in := []byte(tt.prefix)
		got := store.PrefixEnd(in)
		if tt.none {
			if got != nil {
				t.Errorf("PrefixEnd(%q) = %q, want nil", tt.prefix, got)
			}
			continue
		}
		if string(got) != tt.want {
			t.Errorf("PrefixEnd(%q) = %q, want %q", tt.prefix, got, tt.want)
		}
		if string(in) != tt.prefix {
			t.Errorf("PrefixEnd modified its argument to %q", in)
		}
	}
}

func TestAppendNewestFirst(t *testing.T) {
	times := []int64{0, 1, 1e9, 1795314810123456789, 1795314810123456790}
	for i := 1; i < len(times); i++ {
		older := store.AppendNewestFirst([]byte("p"), times[i-1])
		newer := store.AppendNewestFirst([]byte("p"), times[i])
		if bytes.Compare(newer, older) >= 0 {
			t.Errorf("time %d does not sort before the older %d: %x >= %x", times[i], times[i-1], newer, older)
		}
	}
}
