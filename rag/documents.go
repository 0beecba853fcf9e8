package rag

import (
	"context"
	"fmt"
	"time"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/store"
)

// The operations behind the document handlers, each one transaction.

// write stores docs into an index in one transaction: replacing every
// document of the index when replace is set, else adding or replacing the
// named ones. A missing index is created. Either everything is written or,
// on any error, nothing.
func (s *Service) write(ctx context.Context, tenant, index string, docs []Document, replace bool) (WriteResult, error) {
	now := s.clk.Now().UTC().Truncate(time.Second) // to the second, as every time the API shows
	wr, err := store.UpdateValue(ctx, s.st, func(tx store.Tx) (WriteResult, error) {
		var ix indexRecord
		found, err := store.GetJSON(tx, bucketIndices, indexKey(tenant, index), &ix)
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
		if err := store.PutJSON(tx, bucketIndices, indexKey(tenant, index), ix); err != nil {
			return WriteResult{}, err
		}
		res.Index = ix.info(index)
		return res, nil
	})
	return wr, errcat.FromStore(err)
}

// deleteDoc deletes a document and updates its index.
func (s *Service) deleteDoc(ctx context.Context, tenant, index, doc string) (DeleteResult, error) {
	now := s.clk.Now().UTC().Truncate(time.Second) // to the second, as every time the API shows
	res, err := store.UpdateValue(ctx, s.st, func(tx store.Tx) (DeleteResult, error) {
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
		if err := store.PutJSON(tx, bucketIndices, indexKey(tenant, index), ix); err != nil {
			return DeleteResult{}, err
		}
		return DeleteResult{Deleted: true, ID: index, DocID: doc}, nil
	})
	return res, errcat.FromStore(err)
}

// listIndices returns the indices of a tenant, sorted by id.
func (s *Service) listIndices(ctx context.Context, tenant string) ([]IndexInfo, error) {
	res, err := store.ViewValue(ctx, s.st, func(tx store.Tx) ([]IndexInfo, error) {
		prefix := store.AppendString(nil, tenant)
		out := []IndexInfo{}
		err := store.ScanJSON(tx, bucketIndices, prefix, false, func(k []byte, rec indexRecord) (bool, error) {
			id, _, err := store.ReadString(k[len(prefix):])
			if err != nil {
				return false, err
			}
			out = append(out, rec.info(id))
			return true, nil
		})
		return out, err
	})
	return res, errcat.FromStore(err)
}

// listDocs returns the documents of an index, sorted by doc_id.
func (s *Service) listDocs(ctx context.Context, tenant, index string) ([]DocumentInfo, error) {
	res, err := store.ViewValue(ctx, s.st, func(tx store.Tx) ([]DocumentInfo, error) {
		if _, err := readIndex(tx, tenant, index); err != nil {
			return nil, err
		}
		prefix := indexKey(tenant, index)
		out := []DocumentInfo{}
		err := store.ScanJSON(tx, bucketDocs, prefix, false, func(k []byte, rec docRecord) (bool, error) {
			doc, _, err := store.ReadString(k[len(prefix):])
			if err != nil {
				return false, err
			}
			out = append(out, rec.info(doc))
			return true, nil
		})
		return out, err
	})
	return res, errcat.FromStore(err)
}

// getDoc returns a document with its text.
func (s *Service) getDoc(ctx context.Context, tenant, index, doc string) (DocumentWithText, error) {
	res, err := store.ViewValue(ctx, s.st, func(tx store.Tx) (DocumentWithText, error) {
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
	return res, errcat.FromStore(err)
}
