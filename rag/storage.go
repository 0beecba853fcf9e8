package rag

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"sort"
	"time"

	"github.com/chatgw/gateway/store"
)

// indexRecord is the stored record of an index: its times and the totals BM25
// needs (number of chunks, sum of the chunks' term counts).
type indexRecord struct {
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Documents int       `json:"documents"`
	Chunks    int       `json:"chunks"`
	Terms     int       `json:"terms"`
}

// docRecord is the stored record of a document, without its text (bucket
// rag/texts), so that listing documents does not read texts.
type docRecord struct {
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	Size      int             `json:"size"`
	Chunks    int             `json:"chunks"`
	Terms     int             `json:"terms"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// chunkRecord is the stored record of a chunk: its byte range in the
// document's text, its number of terms, and its distinct terms (the postings
// to delete with it).
type chunkRecord struct {
	Start int      `json:"start"`
	End   int      `json:"end"`
	Len   int      `json:"len"`
	Terms []string `json:"terms"`
}

// readIndex returns the record of an index, or index_not_found.
func readIndex(tx store.Tx, tenant, index string) (indexRecord, error) {
	var rec indexRecord
	if !ValidID(index) {
		return rec, errIndexNotFound(index)
	}
	ok, err := store.GetJSON(tx, bucketIndices, indexKey(tenant, index), &rec)
	if err == nil && !ok {
		err = errIndexNotFound(index)
	}
	return rec, err
}

// readDoc returns the record of a document, or document_not_found.
func readDoc(tx store.Tx, tenant, index, doc string) (docRecord, error) {
	var rec docRecord
	if !ValidID(doc) {
		return rec, errDocumentNotFound(index, doc)
	}
	ok, err := store.GetJSON(tx, bucketDocs, docKey(tenant, index, doc), &rec)
	if err == nil && !ok {
		err = errDocumentNotFound(index, doc)
	}
	return rec, err
}

// posting encodes the value of a posting: the term's frequency in the chunk
// and the chunk's number of terms.
func posting(tf, dl int) []byte {
	return binary.AppendUvarint(binary.AppendUvarint(nil, uint64(tf)), uint64(dl))
}

// readPosting decodes a posting value.
func readPosting(v []byte) (tf, dl int, err error) {
	a, n := binary.Uvarint(v)
	if n <= 0 {
		return 0, 0, errors.New("rag: malformed posting")
	}
	b, m := binary.Uvarint(v[n:])
	if m <= 0 || n+m != len(v) {
		return 0, 0, errors.New("rag: malformed posting")
	}
	return int(a), int(b), nil
}

// putDoc writes document d into an index (which holds no document d.DocID):
// its text, record, chunks and postings. created is the document's creation
// time. It returns the document's record.
func putDoc(tx store.Tx, tenant, index string, d Document, created, now time.Time) (docRecord, error) {
	rec := docRecord{Metadata: d.Metadata, Size: len(d.Text), CreatedAt: created, UpdatedAt: now}
	for n, c := range chunk(d.Text) {
		tf, dl := termFreqs(d.Text[c.start:c.end])
		cr := chunkRecord{Start: c.start, End: c.end, Len: dl, Terms: make([]string, 0, len(tf))}
		for term, f := range tf {
			cr.Terms = append(cr.Terms, term)
			if err := tx.Put(bucketPostings, postingKey(tenant, index, term, d.DocID, n), posting(f, dl)); err != nil {
				return rec, err
			}
		}
		sort.Strings(cr.Terms)
		if err := store.PutJSON(tx, bucketChunks, chunkKey(tenant, index, d.DocID, n), cr); err != nil {
			return rec, err
		}
		rec.Chunks++
		rec.Terms += dl
	}
	if err := tx.Put(bucketTexts, docKey(tenant, index, d.DocID), []byte(d.Text)); err != nil {
		return rec, err
	}
	return rec, store.PutJSON(tx, bucketDocs, docKey(tenant, index, d.DocID), rec)
}

// removeDoc deletes document doc of an index with its text, chunks and
// postings, and returns its record; ok is false when there was none.
func removeDoc(tx store.Tx, tenant, index, doc string) (rec docRecord, ok bool, err error) {
	if ok, err = store.GetJSON(tx, bucketDocs, docKey(tenant, index, doc), &rec); !ok || err != nil {
		return rec, false, err
	}
	prefix := docKey(tenant, index, doc)
	var chunkKeys [][]byte
	var postings [][]byte
	err = store.ScanJSON(tx, bucketChunks, prefix, false, func(k []byte, cr chunkRecord) (bool, error) {
		n, _, err := store.ReadUint64(k[len(prefix):])
		if err != nil {
			return false, err
		}
		chunkKeys = append(chunkKeys, bytes.Clone(k))
		for _, term := range cr.Terms {
			postings = append(postings, postingKey(tenant, index, term, doc, int(n)))
		}
		return true, nil
	})
	if err != nil {
		return rec, false, err
	}
	for _, k := range postings {
		if err := tx.Delete(bucketPostings, k); err != nil {
			return rec, false, err
		}
	}
	for _, k := range chunkKeys {
		if err := tx.Delete(bucketChunks, k); err != nil {
			return rec, false, err
		}
	}
	if err := tx.Delete(bucketTexts, prefix); err != nil {
		return rec, false, err
	}
	return rec, true, tx.Delete(bucketDocs, prefix)
}

// clearIndex deletes every document of an index and returns the records of
// the documents it held, by doc_id.
func clearIndex(tx store.Tx, tenant, index string) (map[string]docRecord, error) {
	prefix := indexKey(tenant, index)
	old := map[string]docRecord{}
	err := store.ScanJSON(tx, bucketDocs, prefix, false, func(k []byte, rec docRecord) (bool, error) {
		doc, _, err := store.ReadString(k[len(prefix):])
		if err != nil {
			return false, err
		}
		old[doc] = rec
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	for _, b := range [][]byte{bucketDocs, bucketTexts, bucketChunks, bucketPostings} {
		if err := store.DeleteMatching(tx, b, prefix, nil); err != nil {
			return nil, err
		}
	}
	return old, nil
}

// add counts rec into the totals of the index (sign -1 takes it out).
func (ix *indexRecord) add(rec docRecord, sign int) {
	ix.Documents += sign
	ix.Chunks += sign * rec.Chunks
	ix.Terms += sign * rec.Terms
}
