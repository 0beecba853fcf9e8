package rag

import (
	"encoding/json"
	"time"
)

// Document is one document of a write: its id, its text and optional
// metadata (a JSON object, returned as is with the document and its hits).
type Document struct {
	DocID    string          `json:"doc_id"`
	Text     string          `json:"text"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// IndexInfo is an index as GET /a1/rag/indices lists it.
type IndexInfo struct {
	ID            string    `json:"id"`
	DocumentCount int       `json:"document_count"`
	ChunkCount    int       `json:"chunk_count"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// DocumentInfo is a document as GET /a1/rag/indices/{id}/documents lists it:
// everything but the text. Size is the text's length in UTF-8 bytes.
type DocumentInfo struct {
	DocID      string          `json:"doc_id"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
	Size       int             `json:"size"`
	ChunkCount int             `json:"chunk_count"`
	CreatedAt  time.Time       `json:"created_at"`
	UpdatedAt  time.Time       `json:"updated_at"`
}

// DocumentWithText is a document as GET /a1/rag/indices/{id}/documents/{doc_id}
// answers it.
type DocumentWithText struct {
	DocumentInfo
	Text string `json:"text"`
}

// WriteResult is the answer of a document write: the index after the write
// and what changed. Added counts doc_ids new to the index, Replaced those that
// were there and were overwritten, Removed those a full replace dropped
// (always 0 for an append).
type WriteResult struct {
	Index    IndexInfo `json:"index"`
	Added    int       `json:"added"`
	Replaced int       `json:"replaced"`
	Removed  int       `json:"removed"`
}

// DeleteResult is the answer of DELETE /a1/rag/indices/{id}/documents/{doc_id}.
type DeleteResult struct {
	Deleted bool   `json:"deleted"`
	ID      string `json:"id"`
	DocID   string `json:"doc_id"`
}

// Hit is one ranked chunk of a search: the document it comes from, its
// position in the document (0-based), its text, its BM25 score and the
// document's metadata.
type Hit struct {
	DocID      string          `json:"doc_id"`
	ChunkIndex int             `json:"chunk_index"`
	Chunk      string          `json:"chunk"`
	Score      float64         `json:"score"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
}

// list is the {"object":"list","data":[...]} wrapper of every list answer.
type list[T any] struct {
	Object string `json:"object"`
	Data   []T    `json:"data"`
}

func newList[T any](data []T) list[T] {
	if data == nil {
		data = []T{}
	}
	return list[T]{Object: "list", Data: data}
}

// info is the index as the API shows it.
func (ix indexRecord) info(id string) IndexInfo {
	return IndexInfo{ID: id, DocumentCount: ix.Documents, ChunkCount: ix.Chunks, CreatedAt: ix.CreatedAt, UpdatedAt: ix.UpdatedAt}
}

// info is the document as the API lists it.
func (rec docRecord) info(doc string) DocumentInfo {
	return DocumentInfo{DocID: doc, Metadata: rec.Metadata, Size: rec.Size, ChunkCount: rec.Chunks,
		CreatedAt: rec.CreatedAt, UpdatedAt: rec.UpdatedAt}
}
