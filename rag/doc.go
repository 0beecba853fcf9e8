// Package rag serves the gateway's RAG indices (/a1/rag/indices*): named,
// tenant-scoped collections of text documents with built-in lexical retrieval
// (BM25 over passages of the documents, no external service), and provides
// the rag_search tool that models and agents use to query them.
//
// It is a top-level package, like the other API families (the module's agreed
// layout puts rag/ at the top level), because two families use it without
// importing each other: the /a1/rag routes the root wires, and agents, whose
// agent files name a rag_index and whose tool loop runs rag_search. The root
// builds one Service and hands Search and Tool to the agents package; rag
// itself imports only leaf packages (store, clock, auth, errcat, tools).
//
// Every handler is a plain http.HandlerFunc; the root middleware has already
// checked the token and the route's scope. Indices belong to the tenant
// (auth.FromContext), not to a user: GW-User-Id is optional and ignored.
//
// # Routes
//
//	GET    /a1/rag/indices                          rag:read   {"object":"list","data":[IndexInfo...]} by id
//	POST   /a1/rag/indices/:id/documents            rag:write  full replace; 200 WriteResult
//	POST   /a1/rag/indices/:id/documents/append     rag:write  add or replace by doc_id; 200 WriteResult
//	GET    /a1/rag/indices/:id/documents            rag:read   {"object":"list","data":[DocumentInfo...]} by doc_id
//	GET    /a1/rag/indices/:id/documents/:doc_id    rag:read   DocumentWithText
//	DELETE /a1/rag/indices/:id/documents/:doc_id    rag:write  {"deleted":true,"id","doc_id"}
//	GET    /a1/rag/indices/:id/search?q=&k=         rag:read   {"object":"list","data":[Hit...]} best first
//
// An index is created by its first write (either POST) and is never removed:
// deleting its last document leaves it listed with document_count 0. A write
// body is {"documents":[{"doc_id","text","metadata"?}...]}. The full replace
// makes these documents the whole index (documents not named are dropped);
// the append adds them, replacing documents with the same doc_id. Either way
// the answer is
//
//	{"index":{"id","document_count","chunk_count","created_at","updated_at"},
//	 "added":N,"replaced":N,"removed":N}
//
// where added counts new doc_ids, replaced doc_ids that were already there
// (their created_at is kept) and removed the documents a full replace dropped.
// A document as listed is {"doc_id","metadata"?,"size","chunk_count",
// "created_at","updated_at"} (size: UTF-8 bytes of the text); GET of one
// document adds "text". A hit is {"doc_id","chunk_index","chunk","score",
// "metadata"?}: the passage's text, its 0-based position in the document, its
// BM25 score and the document's metadata. Times are RFC 3339 UTC.
//
// # Validation and errors
//
// Writes are checked in this order, the first failure answering:
//
//   - the path id must be a valid id (ValidID: 1 to 128 ASCII letters, digits,
//     '.', '_', '-', ':', starting with a letter or digit), else invalid_field "id";
//   - the body is decoded with the gateway's rules (invalid_json; an unknown
//     top-level field is invalid_field body.<name>);
//   - documents absent or null: missing_field body.documents; not an array, empty,
//     or over MaxDocumentsPerRequest (1000) entries: invalid_field body.documents;
//   - each entry, in order, must be an object with only doc_id, text and metadata
//     (invalid_field body.documents[N] or body.documents[N].<field>); doc_id
//     and text are required strings (missing_field / invalid_field
//     body.documents[N].doc_id / .text); doc_id must be a valid id; text must
//     hold a non-space character and be at most MaxTextBytes (1 MiB); metadata,
//     when present and not null, must be an object of at most MaxMetadataBytes
//     (16 KiB, compacted);
//   - a doc_id used twice in one request: invalid_field body.documents[N].doc_id
//     (the later entry);
//   - an index may hold at most MaxDocumentsPerIndex (10000) documents: a write
//     that would leave more is invalid_field body.documents.
//
// Reads: an index the tenant does not have (never written, another tenant's,
// or an id that is not valid) is 404 index_not_found (param "id"); a document
// the index does not hold is 404 document_not_found (param "doc_id"), checked
// after the index. Search: q absent is missing_field query.q, blank or over
// MaxQueryBytes (4096) is invalid_field query.q; k, when given, must be an
// integer from 1 to MaxK (50), else invalid_field query.k (default DefaultK, 5).
// The query is checked before the index is looked up. A store failure is 500
// storage_error.
//
// # Retrieval
//
// Documents are cut into passages ("chunks") of at most ChunkRunes (500)
// characters on paragraph and word boundaries (see chunk in text.go), and
// passages into terms by a lower-casing Unicode word tokenizer (runs of
// letters, digits and marks; terms cut at MaxTermBytes). Search ranks passages
// with BM25 (k1 = 1.2, b = 0.75, Lucene's non-negative idf) over the passages
// of the index; equal scores are ordered by doc_id, then chunk_index. See
// Service.Search for the formula.
//
// Term statistics are kept at write time in an inverted index: one posting
// per (term, passage) holding the term's frequency and the passage's length,
// and per index the number of passages and the sum of their lengths. A search
// reads the postings of the query's terms only (each term one key range), so
// its cost grows with how often the query's terms occur, not with the size of
// the index; writes pay for it with one key per distinct term of each passage.
//
// # Storage
//
// Buckets rag/indices, rag/docs, rag/texts, rag/chunks and rag/postings (see
// service.go). Every key starts with the tenant and the index id, encoded
// with store.AppendString, so listing a tenant's indices scans that tenant's
// key range only and an index's documents and postings are one range each.
// Every write (a full replace, an append, a delete) is one Update transaction:
// a failure (500 storage_error, or a validation error found inside the
// transaction) leaves what was stored untouched, and a new Service over the
// same store sees everything.
package rag
