package rag

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/store"
)

// chunkID names a chunk of an index.
type chunkID struct {
	doc string
	n   int
}

// scored is a chunk and its score.
type scored struct {
	chunkID
	score float64
}

// Search returns the k best chunks of an index of tenant for the query q,
// best first: BM25 (k1 = BM25K1, b = BM25B) over the chunks of the index,
//
//	score(c) = sum over distinct terms t of q of
//	           idf(t) * tf(t,c) * (k1+1) / (tf(t,c) + k1 * (1 - b + b * |c| / avgdl))
//	idf(t)   = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
//
// where N is the number of chunks of the index, df(t) the number of chunks
// holding t, |c| the number of terms of c and avgdl the mean over the index.
// Only chunks that hold a term of q are hits; equal scores are ordered by
// doc_id, then chunk index. k <= 0 means DefaultK and k > MaxK means MaxK. A
// query without any term gives no hit. Errors are *errcat.Error:
// index_not_found (param "id") or storage_error.
func (s *Service) Search(ctx context.Context, tenant, index, q string, k int) ([]Hit, error) {
	switch {
	case k <= 0:
		k = DefaultK
	case k > MaxK:
		k = MaxK
	}
	terms := queryTerms(q)
	res, err := store.ViewValue(ctx, s.st, func(tx store.Tx) ([]Hit, error) {
		ix, err := readIndex(tx, tenant, index)
		if err != nil {
			return nil, err
		}
		hits := []Hit{}
		if len(terms) == 0 || ix.Chunks == 0 {
			return hits, nil
		}
		best, err := rank(tx, tenant, index, ix, terms, k)
		if err != nil {
			return nil, err
		}
		texts := map[string][]byte{} // texts read so far, by doc_id
		for _, c := range best {
			h, err := hitOf(tx, tenant, index, c, texts)
			if err != nil {
				return nil, err
			}
			hits = append(hits, h)
		}
		return hits, nil
	})
	return res, errcat.FromStore(err)
}

// rank scores the chunks of an index holding any of terms (distinct, sorted)
// by reading only those terms' postings, and returns the k best.
func rank(tx store.Tx, tenant, index string, ix indexRecord, terms []string, k int) ([]scored, error) {
	n := float64(ix.Chunks)
	avgdl := float64(ix.Terms) / n
	scores := map[chunkID]float64{}
	type post struct {
		c      chunkID
		tf, dl int
	}
	var posts []post
	for _, term := range terms {
		prefix := store.AppendString(indexKey(tenant, index), term)
		posts = posts[:0]
		err := tx.Scan(bucketPostings, prefix, false, func(key, v []byte) (bool, error) {
			doc, rest, err := store.ReadString(key[len(prefix):])
			if err != nil {
				return false, err
			}
			cn, _, err := store.ReadUint64(rest)
			if err != nil {
				return false, err
			}
			tf, dl, err := readPosting(v)
			if err != nil {
				return false, err
			}
			posts = append(posts, post{chunkID{doc, int(cn)}, tf, dl})
			return true, nil
		})
		if err != nil {
			return nil, err
		}
		df := float64(len(posts))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for _, p := range posts {
			tf := float64(p.tf)
			norm := 1 - BM25B
			if avgdl > 0 {
				norm += BM25B * float64(p.dl) / avgdl
			}
			scores[p.c] += idf * tf * (BM25K1 + 1) / (tf + BM25K1*norm)
		}
	}
	all := make([]scored, 0, len(scores))
	for c, sc := range scores {
		all = append(all, scored{c, sc})
	}
	sort.Slice(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if a.score != b.score {
			return a.score > b.score
		}
		if a.doc != b.doc {
			return a.doc < b.doc
		}
		return a.n < b.n
	})
	if len(all) > k {
		all = all[:k]
	}
	return all, nil
}

// hitOf reads the text and metadata of a ranked chunk; texts caches the
// documents' texts for the transaction.
func hitOf(tx store.Tx, tenant, index string, c scored, texts map[string][]byte) (Hit, error) {
	var cr chunkRecord
	ok, err := store.GetJSON(tx, bucketChunks, chunkKey(tenant, index, c.doc, c.n), &cr)
	if err != nil {
		return Hit{}, err
	}
	var rec docRecord
	found, err := store.GetJSON(tx, bucketDocs, docKey(tenant, index, c.doc), &rec)
	if err != nil {
		return Hit{}, err
	}
	text, cached := texts[c.doc]
	if !cached {
		text = tx.Get(bucketTexts, docKey(tenant, index, c.doc))
		texts[c.doc] = text
	}
	if !ok || !found || cr.Start < 0 || cr.Start > cr.End || cr.End > len(text) {
		return Hit{}, fmt.Errorf("rag: chunk %d of document %q of index %q is inconsistent", c.n, c.doc, index)
	}
	return Hit{DocID: c.doc, ChunkIndex: c.n, Chunk: string(text[cr.Start:cr.End]), Score: c.score, Metadata: rec.Metadata}, nil
}
