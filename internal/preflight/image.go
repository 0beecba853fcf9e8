package preflight

import (
	"bytes"
	"encoding/base64"
	"errors"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/jsonscan"
)

// imageProblem is why an image URL was refused: a code and a message; the
// caller adds the param.
type imageProblem struct {
	code errcat.Code
	msg  string
}

const dataURIForm = "data:image/<jpeg|png|webp|gif>;base64,<data>"

// checkImageURL checks one image URL, raw being its JSON string literal. An
// http(s) URL passes only when acceptsURL. A data URI must be
// data:image/<jpeg|png|webp|gif>;base64,<data> with standard padded base64
// whose bytes start with a header of that image type.
func checkImageURL(raw []byte, acceptsURL bool) *imageProblem {
	url := raw[1 : len(raw)-1]
	if bytes.IndexByte(url, '\\') >= 0 {
		url = []byte(jsonscan.Unquote(raw))
	}
	if hasPrefixFold(url, "http://") || hasPrefixFold(url, "https://") {
		if acceptsURL {
			return nil
		}
		return &imageProblem{errcat.ImageURLNotSupported,
			"This model does not fetch image URLs; send the image inline as " + dataURIForm + "."}
	}
	if !hasPrefixFold(url, "data:") {
		return &imageProblem{errcat.ImageDecodeError, "image_url.url must be a data URI of the form " + dataURIForm + "."}
	}
	head := url[:min(len(url), 256)]
	comma := bytes.IndexByte(head, ',')
	if comma < 0 {
		return &imageProblem{errcat.ImageDecodeError, "The data URI is malformed: no ',' before the data."}
	}
	meta, data := url[len("data:"):comma], url[comma+1:]
	semi := bytes.IndexByte(meta, ';')
	if semi < 0 || !bytes.EqualFold(meta[bytes.LastIndexByte(meta, ';')+1:], []byte("base64")) {
		return &imageProblem{errcat.ImageDecodeError, "The data URI must be base64 encoded (;base64,)."}
	}
	mimeType := meta[:semi]
	if len(mimeType) == 0 {
		return &imageProblem{errcat.ImageDecodeError, "The data URI has no MIME type; use " + dataURIForm + "."}
	}
	var format string
	for _, f := range [...]string{"jpeg", "png", "webp", "gif"} {
		if len(mimeType) == len("image/")+len(f) && hasPrefixFold(mimeType, "image/") && bytes.EqualFold(mimeType[len("image/"):], []byte(f)) {
			format = f
		}
	}
	if format == "" {
		return &imageProblem{errcat.ImageDecodeError,
			"Image type " + string(mimeType) + " is not supported; use image/jpeg, image/png, image/webp or image/gif."}
	}
	if bytes.IndexByte(data, '\n') >= 0 || bytes.IndexByte(data, '\r') >= 0 { // line-wrapped base64 (rare): unwrap
		data = bytes.Map(func(r rune) rune {
			if r == '\r' || r == '\n' {
				return -1
			}
			return r
		}, data)
	}
	d := &b64Reader{src: data}
	headerOK := decodeHeader(format, d)
	if d.drain() != nil {
		return &imageProblem{errcat.ImageBase64Invalid, "The image data is not valid base64."}
	}
	if !headerOK {
		return &imageProblem{errcat.ImageDecodeError, "The image data is not a valid image/" + format + " image."}
	}
	return nil
}

// decodeHeader reports whether r starts with a valid header of format.
func decodeHeader(format string, r io.Reader) bool {
	var err error
	var cfg image.Config
	switch format {
	case "png":
		cfg, err = png.DecodeConfig(r)
	case "jpeg":
		cfg, err = jpeg.DecodeConfig(r)
	case "gif":
		cfg, err = gif.DecodeConfig(r)
	case "webp":
		// No decoder in the standard library: check the RIFF container and the
		// first chunk (lossy, lossless or extended).
		var h [16]byte
		if _, err := io.ReadFull(r, h[:]); err != nil {
			return false
		}
		chunk := string(h[12:16])
		return string(h[0:4]) == "RIFF" && string(h[8:12]) == "WEBP" &&
			(chunk == "VP8 " || chunk == "VP8L" || chunk == "VP8X")
	}
	return err == nil && cfg.Width > 0 && cfg.Height > 0
}

var errBase64 = errors.New("preflight: invalid base64")

// b64Chunk is how much base64 text is decoded at a time (a multiple of 4).
const b64Chunk = 4096

// b64Reader decodes standard padded base64 lazily, a chunk at a time into a
// fixed buffer, so that an image decoder can read the header and drain can check
// the rest without holding the decoded image.
type b64Reader struct {
	src  []byte
	r, w int
	err  error
	buf  [b64Chunk / 4 * 3]byte
}

func (d *b64Reader) fill() {
	n := min(len(d.src), b64Chunk)
	chunk := d.src[:n]
	d.src = d.src[n:]
	// Padding may only end the data, not a chunk in its middle.
	if len(d.src) > 0 && chunk[n-1] == '=' {
		d.err = errBase64
		return
	}
	m, err := base64.StdEncoding.Decode(d.buf[:], chunk)
	d.r, d.w = 0, m
	if err != nil {
		d.err = errBase64
	}
}

// Read implements io.Reader over the decoded bytes.
func (d *b64Reader) Read(p []byte) (int, error) {
	for d.r == d.w {
		if d.err != nil {
			return 0, d.err
		}
		if len(d.src) == 0 {
			return 0, io.EOF
		}
		d.fill()
	}
	n := copy(p, d.buf[d.r:d.w])
	d.r += n
	return n, nil
}

// ReadByte implements io.ByteReader, which spares image/gif a bufio.Reader.
func (d *b64Reader) ReadByte() (byte, error) {
	var b [1]byte
	if _, err := d.Read(b[:]); err != nil {
		return 0, err
	}
	return b[0], nil
}

// drain checks the base64 of everything not read yet.
func (d *b64Reader) drain() error {
	for d.err == nil && len(d.src) > 0 {
		d.fill()
	}
	return d.err
}

func hasPrefixFold(b []byte, prefix string) bool {
	return len(b) >= len(prefix) && bytes.EqualFold(b[:len(prefix)], []byte(prefix))
}
