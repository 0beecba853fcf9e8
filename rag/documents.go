package rag

import (
	"context"
	"fmt"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/store"
)

// The operations behind the document handlers, each one transaction.

// write stores docs into an index in one transaction: replacing every
// document of the index when replace is set, else adding or replacing the
// named ones. A missing index is created. Either everything is written or,
// on any error, nothing.
func (s *Service) write(ctx context.Context, tenant, index string, docs []Document, replace bool) (WriteResult, error) {
	now := s.clk.Now().UTC()
	return inTx(ctx, s.st.Update, func(tx store.Tx) (WriteResult, error) {
		var ix indexRecord
		found, err := getJSON(tx, bucketIndices, indexKey(tenant, index), &ix, "index record")
		if err != nil {
			return WriteResult{}, err
		}
		if !found {
			ix = indexRecord{CreatedAt: now}
		}
		res := WriteResult{}
		old := map[string]docRecord{}
		if replace {
			if old, err = clearIndex(tx, tenant, index); err != nil {
				return WriteResult{}, err
			}
			ix.Documents, ix.Chunks, ix.Terms = 0, 0, 0
		} else {
			for _, d := range docs {
				rec, ok, err := removeDoc(tx, tenant, index, d.DocID)
				if err != nil {
					return WriteResult{}, err
				}
				if ok {
					old[d.DocID] = rec
					ix.add(rec, -1)
				}
			}
		}
		for _, d := range docs {
			created := now
			if rec, ok := old[d.DocID]; ok {
				created = rec.CreatedAt
				res.Replaced++
				delete(old, d.DocID)
			} else {
				res.Added++
			}
			rec, err := putDoc(tx, tenant, index, d, created, now)
			if err != nil {
				return WriteResult{}, err
			}
			ix.add(rec, 1)
		}
		res.Removed = len(old)
		if ix.Documents > MaxDocumentsPerIndex {
			return WriteResult{}, errcat.Newf(errcat.InvalidField, "body.documents",
				"The index would hold %d documents, over the limit of %d; nothing was written.", ix.Documents, MaxDocumentsPerIndex)
		}
		ix.UpdatedAt = now
		if err := putJSON(tx, bucketIndices, indexKey(tenant, index), ix); err != nil {
			return WriteResult{}, err
		}
		res.Index = ix.info(index)
		return res, nil
	})
}

// deleteDoc deletes a document and updates its index.
func (s *Service) deleteDoc(ctx context.Context, tenant, index, doc string) (DeleteResult, error) {
	now := s.clk.Now().UTC()
	return inTx(ctx, s.st.Update, func(tx store.Tx) (DeleteResult, error) {
		ix, err := readIndex(tx, tenant, index)
		if err != nil {
			return DeleteResult{}, err
		}
		if !ValidID(doc) {
			return DeleteResult{}, errDocumentNotFound(index, doc)
		}
		rec, ok, err := removeDoc(tx, tenant, index, doc)
		if err != nil {
			return DeleteResult{}, err
		}
		if !ok {
			return DeleteResult{}, errDocumentNotFound(index, doc)
		}
		ix.add(rec, -1)
		ix.UpdatedAt = now
		if err := putJSON(tx, bucketIndices, indexKey(tenant, index), ix); err != nil {
			return DeleteResult{}, err
		}
		return DeleteResult{Deleted: true, ID: index, DocID: doc}, nil
	})
}

// listIndices returns the indices of a tenant, sorted by id.
func (s *Service) listIndices(ctx context.Context, tenant string) ([]IndexInfo, error) {
	return inTx(ctx, s.st.View, func(tx store.Tx) ([]IndexInfo, error) {
		prefix := store.AppendString(nil, tenant)
		out := []IndexInfo{}
		err := tx.Scan(bucketIndices, prefix, false, func(k, v []byte) (bool, error) {
			id, _, err := store.ReadString(k[len(prefix):])
			if err != nil {
				return false, err
			}
			var rec indexRecord
			if err := decodeJSON(v, &rec, "index record"); err != nil {
				return false, err
			}
			out = append(out, rec.info(id))
			return true, nil
		})
		return out, err
	})
}

// listDocs returns the documents of an index, sorted by doc_id.
func (s *Service) listDocs(ctx context.Context, tenant, index string) ([]DocumentInfo, error) {
	return inTx(ctx, s.st.View, func(tx store.Tx) ([]DocumentInfo, error) {
		if _, err := readIndex(tx, tenant, index); err != nil {
			return nil, err
		}
		prefix := indexKey(tenant, index)
		out := []DocumentInfo{}
		err := tx.Scan(bucketDocs, prefix, false, func(k, v []byte) (bool, error) {
			doc, _, err := store.ReadString(k[len(prefix):])
			if err != nil {
				return false, err
			}
			var rec docRecord
			if err := decodeJSON(v, &rec, "document record"); err != nil {
				return false, err
			}
			out = append(out, rec.info(doc))
			return true, nil
		})
		return out, err
	})
}

// getDoc returns a document with its text.
func (s *Service) getDoc(ctx context.Context, tenant, index, doc string) (DocumentWithText, error) {
	return inTx(ctx, s.st.View, func(tx store.Tx) (DocumentWithText, error) {
		if _, err := readIndex(tx, tenant, index); err != nil {
			return DocumentWithText{}, err
		}
		rec, err := readDoc(tx, tenant, index, doc)
		if err != nil {
			return DocumentWithText{}, err
		}
		text := tx.Get(bucketTexts, docKey(tenant, index, doc))
		if text == nil {
			return DocumentWithText{}, fmt.Errorf("rag: document %q of index %q has no text", doc, index)
		}
		return DocumentWithText{DocumentInfo: rec.info(doc), Text: string(text)}, nil
	})
}
