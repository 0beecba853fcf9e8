package guard

// This file holds the multi-string scanner under Rules: an Aho-Corasick
// automaton compiled to a dense table, one load per text byte, that finds
// every occurrence of every term and every literal a pattern needs in one pass.

import "fmt"

// outBit marks a transition into a state that ends at least one key.
const outBit = 1 << 31

// scanner is an Aho-Corasick automaton over byte classes. Keys are
// normalised term texts (lowercase, single spaces). The scanner reads a text
// as if ASCII letters were lowercase and every run of ASCII white space were
// one ' ', without changing the text: positions it reports are the text's own.
type scanner struct {
	class  [256]uint8 // byte -> class; 0 is every byte no key holds
	nclass uint32
	// delta[s+c] is the state after state s reads a byte of class c, times
	// nclass (states are premultiplied), with outBit set when that state ends
	// a key.
	delta []uint32
	// out[s/nclass] lists the keys that end in state s, longest first.
	out  [][]int32
	keys []string
}

// newScanner compiles keys; a key's index is its id in out. Keys are non-empty.
func newScanner(keys []string) (*scanner, error) {
	sc := &scanner{keys: keys}
	var ids [256]uint8
	n := 1
	for _, k := range keys {
		for i := 0; i < len(k); i++ {
			if b := k[i]; ids[b] == 0 {
				if n == 256 {
					return nil, fmt.Errorf("scanner: more than 255 distinct bytes in the keys")
				}
				ids[b] = uint8(n)
				n++
			}
		}
	}
	sc.nclass = uint32(n)
	sc.class = ids
	for b := 'A'; b <= 'Z'; b++ {
		sc.class[b] = ids[b+'a'-'A']
	}
	for _, b := range []byte{'\t', '\n', '\v', '\f', '\r'} {
		sc.class[b] = ids[' ']
	}

	// The trie: children by class, built as a dense table right away.
	nc := int(sc.nclass)
	const none = ^uint32(0)
	trie := []uint32{} // trie[s*nc+c]: child state index, or none
	newState := func() uint32 {
		for range nc {
			trie = append(trie, none)
		}
		sc.out = append(sc.out, nil)
		return uint32(len(sc.out) - 1)
	}
	newState()
	incoming := []uint8{0}
	for id, k := range keys {
		s := uint32(0)
		for i := 0; i < len(k); i++ {
			c := ids[k[i]]
			if trie[int(s)*nc+int(c)] == none {
				t := newState()
				trie[int(s)*nc+int(c)] = t
				incoming = append(incoming, c)
			}
			s = trie[int(s)*nc+int(c)]
		}
		sc.out[s] = append(sc.out[s], int32(id))
	}
	states := len(sc.out)
	if uint64(states)*uint64(nc) >= outBit {
		return nil, fmt.Errorf("scanner: keys too long (%d states)", states)
	}

	// Breadth first: failure links, merged outputs, the full transition table.
	delta := make([]uint32, states*nc) // state indexes, not yet premultiplied
	fail := make([]uint32, states)
	queue := make([]uint32, 0, states)
	for c := range nc {
		if t := trie[c]; t != none {
			delta[c] = t
			queue = append(queue, t)
		}
	}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		sc.out[u] = append(sc.out[u], sc.out[fail[u]]...)
		for c := range nc {
			i := int(u)*nc + c
			if t := trie[i]; t != none {
				delta[i] = t
				fail[t] = delta[int(fail[u])*nc+c]
				queue = append(queue, t)
			} else {
				delta[i] = delta[int(fail[u])*nc+c]
			}
		}
	}
	// A run of white space reads as one ' ': a state just past a ' ' stays
	// there on more white space. No key starts or ends with ' ' and none
	// holds two in a row, so this is the automaton run on the collapsed text.
	if sp := ids[' ']; sp != 0 {
		for s := 1; s < states; s++ {
			if incoming[s] == sp {
				delta[s*nc+int(sp)] = uint32(s)
			}
		}
	}
	sc.delta = make([]uint32, len(delta))
	for i, t := range delta {
		sc.delta[i] = t * sc.nclass
		if len(sc.out[t]) > 0 {
			sc.delta[i] |= outBit
		}
	}
	return sc, nil
}

// start returns where the occurrence of key id that ends at end (exclusive)
// begins in t: the key read backwards, each ' ' of it taking a whole run of
// ASCII white space.
func (sc *scanner) start(t string, id int32, end int) int {
	k := sc.keys[id]
	i := end
	for j := len(k) - 1; j >= 0; j-- {
		if k[j] == ' ' {
			for i > 0 && asciiSpace(t[i-1]) {
				i--
			}
			continue
		}
		i--
	}
	return i
}
