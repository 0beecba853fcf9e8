package rag

// Tokenize exposes the tokenizer to the black-box tests.
func Tokenize(s string) []string { return tokenize(s) }

// Chunk exposes the chunker to the black-box tests: the texts of the chunks.
func Chunk(text string) []string {
	var out []string
	for _, c := range chunk(text) {
		out = append(out, text[c.start:c.end])
	}
	return out
}
