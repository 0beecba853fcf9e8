package rag

import (
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/store"
)

// Limits of the RAG family (sizes in UTF-8 bytes). The request body limit of
// the gateway (32 MiB by default, 413 body_too_large) applies on top of them.
const (
	// MaxIDBytes bounds an index id and a doc_id (see ValidID for the charset).
	MaxIDBytes = 128
	// MaxDocumentsPerRequest bounds the documents array of one write.
	MaxDocumentsPerRequest = 1000
	// MaxDocumentsPerIndex bounds the documents an index holds; a write that
	// would leave more is 400 invalid_field body.documents and changes nothing.
	MaxDocumentsPerIndex = 10000
	// MaxTextBytes bounds the text of one document.
	MaxTextBytes = 1 << 20
	// MaxMetadataBytes bounds the metadata object of one document (as compact JSON).
	MaxMetadataBytes = 16384
	// MaxQueryBytes bounds a search query.
	MaxQueryBytes = 4096
	// DefaultK is the number of hits of a search that names no k.
	DefaultK = 5
	// MaxK is the largest k of a search.
	MaxK = 50
	// ChunkRunes is the largest chunk, in characters (runes).
	ChunkRunes = 500
	// MaxTermBytes bounds an indexed term; longer words are cut (on a character
	// boundary) to their first MaxTermBytes bytes, in documents and queries alike.
	MaxTermBytes = 64
)

// BM25 parameters.
const (
	BM25K1 = 1.2
	BM25B  = 0.75
)

// Config configures a Service.
type Config struct {
	// Store holds the indices (buckets rag/*). It must not be nil.
	Store store.Store
	// Clock times indices and documents. Nil means clock.Wall.
	Clock clock.Clock
}

// Service serves the RAG indices of every tenant, searches them and provides
// the rag_search tool. Create it with New; it is safe for concurrent use.
type Service struct {
	st  store.Store
	clk clock.Clock
}

// New returns a Service over c. It panics when c.Store is nil (a wiring bug,
// not a run-time condition).
func New(c Config) *Service {
	if c.Store == nil {
		panic("rag.New: Config.Store is nil")
	}
	if c.Clock == nil {
		c.Clock = clock.Wall{}
	}
	return &Service{st: c.Store, clk: c.Clock}
}

// Buckets of the RAG layout; the package owns every bucket named rag/*. Every
// key starts with str(tenant) str(index) (store.AppendString), so one tenant's
// data is one key range, an index is a sub-range, and no list or search ever
// reads another tenant's or index's keys.
var (
	// bucketIndices: str(tenant) str(index) -> indexRecord (JSON).
	bucketIndices = []byte("rag/indices")
	// bucketDocs: str(tenant) str(index) str(doc_id) -> docRecord (JSON, no text).
	bucketDocs = []byte("rag/docs")
	// bucketTexts: str(tenant) str(index) str(doc_id) -> the text, raw bytes.
	bucketTexts = []byte("rag/texts")
	// bucketChunks: str(tenant) str(index) str(doc_id) u64(n) -> chunkRecord (JSON).
	bucketChunks = []byte("rag/chunks")
	// bucketPostings: str(tenant) str(index) str(term) str(doc_id) u64(n)
	// -> uvarint(tf) uvarint(chunk length): the inverted index.
	bucketPostings = []byte("rag/postings")
)

// indexKey is the key of an index and the scan prefix of its records.
func indexKey(tenant, index string) []byte {
	return store.AppendString(store.AppendString(nil, tenant), index)
}

// docKey is the key of a document (and the scan prefix of its chunks).
func docKey(tenant, index, doc string) []byte {
	return store.AppendString(indexKey(tenant, index), doc)
}

// chunkKey is the key of chunk n of a document.
func chunkKey(tenant, index, doc string, n int) []byte {
	return store.AppendUint64(docKey(tenant, index, doc), uint64(n))
}

// postingKey is the key of the posting of term in chunk n of a document.
func postingKey(tenant, index, term, doc string, n int) []byte {
	k := store.AppendString(indexKey(tenant, index), term)
	k = store.AppendString(k, doc)
	return store.AppendUint64(k, uint64(n))
}

// ValidID reports whether s is a valid index id or doc_id: 1 to MaxIDBytes
// bytes of ASCII letters, digits, '.', '_', '-' and ':', starting with a
// letter or digit. Ids travel in URL paths, so they hold no '/', space or
// escape-worthy character, and "." or ".." cannot occur.
func ValidID(s string) bool {
	if len(s) == 0 || len(s) > MaxIDBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-' && c != ':') {
			return false
		}
	}
	return true
}

// errIndexNotFound is 404 index_not_found (param "id").
func errIndexNotFound(index string) *errcat.Error {
	if !ValidID(index) {
		return errcat.New(errcat.IndexNotFound, "id", "No RAG index with this id for this tenant.")
	}
	return errcat.Newf(errcat.IndexNotFound, "id", "No RAG index %q for this tenant.", index)
}

// errDocumentNotFound is 404 document_not_found (param "doc_id").
func errDocumentNotFound(index, doc string) *errcat.Error {
	if !ValidID(doc) {
		return errcat.Newf(errcat.DocumentNotFound, "doc_id", "No document with this doc_id in RAG index %q.", index)
	}
	return errcat.Newf(errcat.DocumentNotFound, "doc_id", "No document %q in RAG index %q.", doc, index)
}
