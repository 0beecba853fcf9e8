package rag

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
)

// writeRequest is the body of both document writes.
type writeRequest struct {
	Documents json.RawMessage `json:"documents"`
}

// writeInput is a validated document write.
type writeInput struct {
	tenant, index string
	docs          []Document
}

// docInput names a document of an index.
type docInput struct {
	tenant, index, doc string
}

// searchInput is a validated search.
type searchInput struct {
	tenant, index, q string
	k                int
}

// ListIndices handles GET /a1/rag/indices (scope rag:read):
// {"object":"list","data":[IndexInfo...]} sorted by id.
func (s *Service) ListIndices(w http.ResponseWriter, r *http.Request) {
	httpx.Handle(w, r, httpx.TenantID, func(ctx context.Context, tenant string) (list[IndexInfo], error) {
		ixs, err := s.listIndices(ctx, tenant)
		return newList(ixs), err
	})
}

// ReplaceDocuments handles POST /a1/rag/indices/:id/documents (scope
// rag:write): {"documents":[{"doc_id","text","metadata"?}...]} becomes the
// whole content of the index, which is created when missing; 200 WriteResult.
func (s *Service) ReplaceDocuments(w http.ResponseWriter, r *http.Request) {
	httpx.Handle(w, r, decodeWrite, func(ctx context.Context, in writeInput) (WriteResult, error) {
		return s.write(ctx, in.tenant, in.index, in.docs, true)
	})
}

// AppendDocuments handles POST /a1/rag/indices/:id/documents/append (scope
// rag:write): the named documents are added to the index, replacing those
// with the same doc_id; the index is created when missing; 200 WriteResult.
func (s *Service) AppendDocuments(w http.ResponseWriter, r *http.Request) {
	httpx.Handle(w, r, decodeWrite, func(ctx context.Context, in writeInput) (WriteResult, error) {
		return s.write(ctx, in.tenant, in.index, in.docs, false)
	})
}

// ListDocuments handles GET /a1/rag/indices/:id/documents (scope rag:read):
// {"object":"list","data":[DocumentInfo...]} sorted by doc_id, without texts.
func (s *Service) ListDocuments(w http.ResponseWriter, r *http.Request) {
	httpx.Handle(w, r, pathIndex, func(ctx context.Context, in docInput) (list[DocumentInfo], error) {
		docs, err := s.listDocs(ctx, in.tenant, in.index)
		return newList(docs), err
	})
}

// GetDocument handles GET /a1/rag/indices/:id/documents/:doc_id (scope
// rag:read): the DocumentWithText.
func (s *Service) GetDocument(w http.ResponseWriter, r *http.Request) {
	httpx.Handle(w, r, pathDoc, func(ctx context.Context, in docInput) (DocumentWithText, error) {
		return s.getDoc(ctx, in.tenant, in.index, in.doc)
	})
}

// DeleteDocument handles DELETE /a1/rag/indices/:id/documents/:doc_id (scope
// rag:write): {"deleted":true,"id","doc_id"}; the index stays, even empty.
func (s *Service) DeleteDocument(w http.ResponseWriter, r *http.Request) {
	httpx.Handle(w, r, pathDoc, func(ctx context.Context, in docInput) (DeleteResult, error) {
		return s.deleteDoc(ctx, in.tenant, in.index, in.doc)
	})
}

// SearchIndex handles GET /a1/rag/indices/:id/search?q=&k= (scope rag:read):
// {"object":"list","data":[Hit...]}, the k best chunks (default DefaultK, 1 to
// MaxK) for q; see Search.
func (s *Service) SearchIndex(w http.ResponseWriter, r *http.Request) {
	httpx.Handle(w, r, decodeSearch, func(ctx context.Context, in searchInput) (list[Hit], error) {
		hits, err := s.Search(ctx, in.tenant, in.index, in.q, in.k)
		return newList(hits), err
	})
}

// pathIndex reads the tenant and the index id of the path. An id that could
// not have been written is left for the lookup to answer index_not_found.
func pathIndex(r *http.Request) (docInput, error) {
	tenant, err := httpx.TenantID(r)
	return docInput{tenant: tenant, index: httpx.Param(r, "id")}, err
}

// pathDoc reads the tenant, the index id and the doc_id of the path.
func pathDoc(r *http.Request) (docInput, error) {
	in, err := pathIndex(r)
	in.doc = httpx.Param(r, "doc_id")
	return in, err
}

// decodeWrite reads a document write: the index id of the path (invalid_field
// "id" when it is not a valid id, see ValidID), then the body.
func decodeWrite(r *http.Request) (writeInput, error) {
	tenant, err := httpx.TenantID(r)
	if err != nil {
		return writeInput{}, err
	}
	in := writeInput{tenant: tenant, index: httpx.Param(r, "id")}
	if !ValidID(in.index) {
		return in, errcat.Newf(errcat.InvalidField, "id",
			"An index id is 1 to %d ASCII letters, digits, '.', '_', '-' or ':', starting with a letter or digit.", MaxIDBytes)
	}
	var req writeRequest
	if err := httpx.Decode(r, &req); err != nil {
		return in, err
	}
	in.docs, err = decodeDocuments(req.Documents)
	return in, err
}

// decodeDocuments validates the documents array of a write body.
func decodeDocuments(raw json.RawMessage) ([]Document, error) {
	const param = "body.documents"
	if len(raw) == 0 || string(raw) == "null" {
		return nil, errcat.New(errcat.MissingField, param, "documents is required: an array of {\"doc_id\",\"text\",\"metadata\"?}.")
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, errcat.New(errcat.InvalidField, param, "documents must be an array of {\"doc_id\",\"text\",\"metadata\"?}.")
	}
	switch {
	case len(entries) == 0:
		return nil, errcat.New(errcat.InvalidField, param, "documents must not be empty.")
	case len(entries) > MaxDocumentsPerRequest:
		return nil, errcat.Newf(errcat.InvalidField, param, "documents holds %d documents, over the limit of %d per request.",
			len(entries), MaxDocumentsPerRequest)
	}
	docs := make([]Document, len(entries))
	seen := make(map[string]int, len(entries))
	for i, e := range entries {
		d, err := decodeDocument(e, fmt.Sprintf("%s[%d]", param, i))
		if err != nil {
			return nil, err
		}
		if j, dup := seen[d.DocID]; dup {
			return nil, errcat.Newf(errcat.InvalidField, fmt.Sprintf("%s[%d].doc_id", param, i),
				"doc_id %q is already used by documents[%d] of this request.", d.DocID, j)
		}
		seen[d.DocID] = i
		docs[i] = d
	}
	return docs, nil
}

// decodeDocument validates one entry of the documents array; param names it
// ("body.documents[3]").
func decodeDocument(raw json.RawMessage, param string) (Document, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return Document{}, errcat.Newf(errcat.InvalidField, param, "%s must be an object {\"doc_id\",\"text\",\"metadata\"?}.", httpx.FieldName(param))
	}
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if name != "doc_id" && name != "text" && name != "metadata" {
			return Document{}, errcat.Newf(errcat.InvalidField, param+"."+name, "Unknown field %s.", name)
		}
	}
	var d Document
	var err error
	if d.DocID, err = stringField(fields, param, "doc_id"); err != nil {
		return d, err
	}
	if !ValidID(d.DocID) {
		return d, errcat.Newf(errcat.InvalidField, param+".doc_id",
			"A doc_id is 1 to %d ASCII letters, digits, '.', '_', '-' or ':', starting with a letter or digit.", MaxIDBytes)
	}
	if d.Text, err = stringField(fields, param, "text"); err != nil {
		return d, err
	}
	switch {
	case strings.TrimSpace(d.Text) == "":
		return d, errcat.New(errcat.InvalidField, param+".text", "text must hold some non-space text.")
	case len(d.Text) > MaxTextBytes:
		return d, errcat.Newf(errcat.InvalidField, param+".text", "text is %d bytes, over the limit of %d.", len(d.Text), MaxTextBytes)
	}
	d.Text = strings.ToValidUTF8(d.Text, "\uFFFD")
	d.Metadata, err = metadataField(fields["metadata"], param+".metadata")
	return d, err
}

// stringField returns the required string field name of an entry.
func stringField(fields map[string]json.RawMessage, param, name string) (string, error) {
	raw, ok := fields[name]
	if !ok || string(raw) == "null" {
		return "", errcat.Newf(errcat.MissingField, param+"."+name, "%s is required.", name)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", errcat.Newf(errcat.InvalidField, param+"."+name, "%s must be a string.", name)
	}
	return s, nil
}

// metadataField validates optional metadata: absent or null is none, anything
// else must be a JSON object of at most MaxMetadataBytes (compacted).
func metadataField(raw json.RawMessage, param string) (json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, errcat.New(errcat.InvalidField, param, "metadata must be a JSON object.")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, errcat.New(errcat.InvalidField, param, "metadata must be a JSON object.")
	}
	if buf.Len() > MaxMetadataBytes {
		return nil, errcat.Newf(errcat.InvalidField, param, "metadata is %d bytes, over the limit of %d.", buf.Len(), MaxMetadataBytes)
	}
	return json.RawMessage(buf.Bytes()), nil
}

// decodeSearch reads the query of a search: q required and not blank (at
// most MaxQueryBytes), k an integer from 1 to MaxK (default DefaultK).
func decodeSearch(r *http.Request) (searchInput, error) {
	tenant, err := httpx.TenantID(r)
	if err != nil {
		return searchInput{}, err
	}
	in := searchInput{tenant: tenant, index: httpx.Param(r, "id")}
	query := r.URL.Query()
	if !query.Has("q") {
		return in, errcat.New(errcat.MissingField, "query.q", "q (the search text) is required.")
	}
	in.q = query.Get("q")
	switch {
	case strings.TrimSpace(in.q) == "":
		return in, errcat.New(errcat.InvalidField, "query.q", "q must not be empty.")
	case len(in.q) > MaxQueryBytes:
		return in, errcat.Newf(errcat.InvalidField, "query.q", "q is %d bytes, over the limit of %d.", len(in.q), MaxQueryBytes)
	}
	in.k, err = httpx.QueryInt(r, "k", DefaultK, 1, MaxK)
	return in, err
}
