package preflight_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"strings"
	"testing"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/preflight"
	"github.com/chatgw/gateway/internal/wire"
	"github.com/chatgw/gateway/upstream"
	"github.com/google/go-cmp/cmp"
)

func intp(n int) *int { return &n }

func backends(providers ...string) []upstream.BackendInfo {
	var out []upstream.BackendInfo
	for _, p := range providers {
		out = append(out, upstream.BackendInfo{Provider: p, RouterAlias: p + "/m", Status: upstream.StatusAvailable})
	}
	return out
}

func testCatalog() *upstream.Catalog {
	vision := upstream.Modalities{TextIn: true, TextOut: true, ImageIn: true}
	text := upstream.Modalities{TextIn: true, TextOut: true}
	return &upstream.Catalog{Models: []upstream.ModelInfo{
		{Alias: "lm-4-scout", Kind: upstream.KindChat, ContextWindow: 100000, Modalities: vision, Backends: backends("local", "cloudA", "cloudB")},
		{Alias: "lm-4-scout-local", Kind: upstream.KindChat, ContextWindow: 100000, Modalities: vision, Backends: backends("local")},
		{Alias: "lm-text", Kind: upstream.KindChat, ContextWindow: 100000, Modalities: text, Backends: backends("local")},
		{Alias: "lm-reason", Kind: upstream.KindChat, ContextWindow: 100000, Modalities: text, Backends: backends("cloudA"),
			Constraints: upstream.Constraints{MinMaxTokens: intp(200)}},
		{Alias: "lm-small", Kind: upstream.KindChat, ContextWindow: 100, Modalities: vision, Backends: backends("local")},
		{Alias: "lm-url", Kind: upstream.KindChat, ContextWindow: 100000, Modalities: vision, Backends: backends("local"),
			Constraints: upstream.Constraints{AcceptsImageURL: true}},
		{Alias: "lm-embed", Kind: upstream.KindEmbeddings, ContextWindow: 8192, Backends: backends("local")},
	}}
}

func encodeImage(t testing.TB, format string) []byte {
	t.Helper()
	img := image.NewPaletted(image.Rect(0, 0, 4, 3), color.Palette{color.Black, color.White})
	var buf bytes.Buffer
	var err error
	switch format {
	case "png":
		err = png.Encode(&buf, img)
	case "jpeg":
		err = jpeg.Encode(&buf, img, nil)
	case "gif":
		err = gif.Encode(&buf, img, nil)
	case "webp":
		buf.WriteString("RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00\x2f\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00")
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func dataURI(mime string, b []byte) string {
	return "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(b)
}

func imagePart(url string) string {
	return `{"type":"image_url","image_url":{"url":"` + url + `"}}`
}

func userParts(parts ...string) string {
	return `[{"role":"user","content":[` + strings.Join(parts, ",") + `]}]`
}

type errWant struct {
	Code   errcat.Code
	Param  string
	Status int
}

func errOf(err error) errWant {
	if err == nil {
		return errWant{}
	}
	e := errcat.As(err)
	return errWant{Code: e.Code, Param: e.Param, Status: errcat.Status(e)}
}

func check(t *testing.T, req preflight.Request) (*preflight.Result, error) {
	t.Helper()
	if req.Tenant == nil {
		req.Tenant = &auth.Tenant{ID: "acme"}
	}
	if req.Catalog == nil {
		req.Catalog = testCatalog()
	}
	return preflight.Check(context.Background(), &req)
}

func TestCheckErrors(t *testing.T) {
	png := encodeImage(t, "png")
	pngURI := dataURI("image/png", png)
	msgs := `[{"role":"user","content":"hi"}]`
	body := func(model, messages, extra string) string {
		return `{"model":"` + model + `","messages":` + messages + extra + `}`
	}
	const urlParam = "messages[].content[].image_url.url"
	tests := []struct {
		name   string
		body   string
		prefix string
		tenant *auth.Tenant
		want   errWant
	}{
		{"not JSON", `{"model":`, "", nil, errWant{errcat.InvalidJSON, "", 400}},
		{"array body", `[1]`, "", nil, errWant{errcat.InvalidJSON, "", 400}},
		{"trailing garbage", body("lm-4-scout", msgs, "") + "x", "", nil, errWant{errcat.InvalidJSON, "", 400}},
		{"bad escape", `{"model":"a\q","messages":[]}`, "", nil, errWant{errcat.InvalidJSON, "", 400}},
		{"missing messages", `{"model":"lm-4-scout"}`, "", nil, errWant{errcat.MissingField, "messages", 400}},
		{"missing model", `{"messages":` + msgs + `}`, "", nil, errWant{errcat.MissingField, "model", 400}},
		{"missing model c1", `{"messages":` + msgs + `}`, "body.", nil, errWant{errcat.MissingField, "body.model", 400}},
		{"messages not array", body("lm-4-scout", `"hi"`, ""), "", nil, errWant{errcat.InvalidField, "messages", 400}},
		{"messages empty", body("lm-4-scout", `[]`, ""), "", nil, errWant{errcat.InvalidField, "messages", 400}},
		{"message not object", body("lm-4-scout", `["hi"]`, ""), "", nil, errWant{errcat.InvalidField, "messages", 400}},
		{"bad role", body("lm-4-scout", `[{"role":"wizard","content":"x"}]`, ""), "", nil, errWant{errcat.InvalidField, "messages", 400}},
		{"no role", body("lm-4-scout", `[{"content":"x"}]`, ""), "", nil, errWant{errcat.InvalidField, "messages", 400}},
		{"content number", body("lm-4-scout", `[{"role":"user","content":1}]`, ""), "", nil, errWant{errcat.InvalidField, "messages", 400}},
		{"image part without url", body("lm-4-scout", userParts(`{"type":"image_url","image_url":{}}`), ""), "", nil, errWant{errcat.InvalidField, "messages", 400}},
		{"tool_calls not array", body("lm-4-scout", `[{"role":"assistant","tool_calls":{}}]`, ""), "", nil, errWant{errcat.InvalidField, "messages", 400}},
		{"messages c1 prefix", body("lm-4-scout", `[]`, ""), "body.", nil, errWant{errcat.InvalidField, "body.messages", 400}},
		{"model not string", `{"model":1,"messages":` + msgs + `}`, "", nil, errWant{errcat.InvalidField, "model", 400}},
		{"unknown model", body("lm-9", msgs, ""), "", nil, errWant{errcat.ModelNotInAllowlist, "model", 400}},
		{"not a chat model", body("lm-embed", msgs, ""), "", nil, errWant{errcat.ModelNotInAllowlist, "model", 400}},
		{"not in allowlist", body("lm-text", msgs, ""), "", &auth.Tenant{ID: "acme", Models: []string{"lm-4-scout"}}, errWant{errcat.ModelNotInAllowlist, "model", 400}},
		{"not in allowlist c1", body("lm-text", msgs, ""), "body.", &auth.Tenant{ID: "acme", Models: []string{}}, errWant{errcat.ModelNotInAllowlist, "model", 400}},
		{"temperature high", body("lm-4-scout", msgs, `,"temperature":2.5`), "", nil, errWant{errcat.InvalidField, "temperature", 400}},
		{"temperature negative", body("lm-4-scout", msgs, `,"temperature":-0.1`), "", nil, errWant{errcat.InvalidField, "temperature", 400}},
		{"temperature string", body("lm-4-scout", msgs, `,"temperature":"1"`), "", nil, errWant{errcat.InvalidField, "temperature", 400}},
		{"temperature c1", body("lm-4-scout", msgs, `,"temperature":3`), "body.", nil, errWant{errcat.InvalidField, "body.temperature", 400}},
		{"stream not bool", body("lm-4-scout", msgs, `,"stream":"yes"`), "", nil, errWant{errcat.InvalidField, "stream", 400}},
		{"max_tokens fraction", body("lm-4-scout", msgs, `,"max_tokens":1.5`), "", nil, errWant{errcat.InvalidField, "max_tokens", 400}},
		{"max_tokens string c1", body("lm-4-scout", msgs, `,"max_tokens":"9"`), "body.", nil, errWant{errcat.InvalidField, "body.max_tokens", 400}},
		{"max_tokens zero", body("lm-4-scout", msgs, `,"max_tokens":0`), "", nil, errWant{errcat.MaxTokensBelowMinimum, "max_tokens", 400}},
		{"max_tokens negative", body("lm-reason", msgs, `,"max_tokens":-5`), "", nil, errWant{errcat.MaxTokensBelowMinimum, "max_tokens", 400}},
		{"max_tokens zero c1", body("lm-4-scout", msgs, `,"max_tokens":0`), "body.", nil, errWant{errcat.MaxTokensBelowMinimum, "max_tokens", 400}},
		{"max_completion_tokens zero", body("lm-4-scout", msgs, `,"max_completion_tokens":0`), "", nil, errWant{errcat.MaxTokensBelowMinimum, "max_tokens", 400}},
		{"tool args not string", body("lm-4-scout", `[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":{"a":1}}}]}]`, ""), "", nil,
			errWant{errcat.ToolCallArgumentsInvalid, "messages[].tool_calls[].function.arguments", 400}},
		{"tool args bad JSON", body("lm-4-scout", `[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{a:1}"}}]}]`, ""), "", nil,
			errWant{errcat.ToolCallArgumentsInvalid, "messages[].tool_calls[].function.arguments", 400}},
		{"tool args empty", body("lm-4-scout", `[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":""}}]}]`, ""), "", nil,
			errWant{errcat.ToolCallArgumentsInvalid, "messages[].tool_calls[].function.arguments", 400}},
		{"tool args missing", body("lm-4-scout", `[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f"}}]}]`, ""), "", nil,
			errWant{errcat.ToolCallArgumentsInvalid, "messages[].tool_calls[].function.arguments", 400}},
		{"http image url", body("lm-4-scout", userParts(imagePart("https://example.com/cat.png")), ""), "", nil, errWant{errcat.ImageURLNotSupported, urlParam, 400}},
		{"http image url bare string", body("lm-4-scout", userParts(`{"type":"image_url","image_url":"http://x/y.png"}`), ""), "", nil, errWant{errcat.ImageURLNotSupported, urlParam, 400}},
		{"image to text model", body("lm-text", userParts(imagePart(pngURI)), ""), "", nil, errWant{errcat.ModelNotVisionCapable, "messages[].content[].image_url", 400}},
		{"not a data uri", body("lm-4-scout", userParts(imagePart("ftp://x/y.png")), ""), "", nil, errWant{errcat.ImageDecodeError, urlParam, 400}},
		{"data uri without comma", body("lm-4-scout", userParts(imagePart("data:image/png;base64")), ""), "", nil, errWant{errcat.ImageDecodeError, urlParam, 400}},
		{"data uri without mime", body("lm-4-scout", userParts(imagePart("data:;base64,AAAA")), ""), "", nil, errWant{errcat.ImageDecodeError, urlParam, 400}},
		{"data uri not base64", body("lm-4-scout", userParts(imagePart("data:image/png,abc")), ""), "", nil, errWant{errcat.ImageDecodeError, urlParam, 400}},
		{"data uri bmp", body("lm-4-scout", userParts(imagePart(dataURI("image/bmp", png))), ""), "", nil, errWant{errcat.ImageDecodeError, urlParam, 400}},
		{"base64 invalid", body("lm-4-scout", userParts(imagePart("data:image/png;base64,iVBOR*w0KGgo=")), ""), "", nil, errWant{errcat.ImageBase64Invalid, urlParam, 400}},
		{"base64 bad padding", body("lm-4-scout", userParts(imagePart("data:image/png;base64,iVBORw0KGgo")), ""), "", nil, errWant{errcat.ImageBase64Invalid, urlParam, 400}},
		{"base64 invalid late", body("lm-4-scout", userParts(imagePart(pngURI+strings.Repeat("A", 8000)+"!!!!")), ""), "", nil, errWant{errcat.ImageBase64Invalid, urlParam, 400}},
		{"png labelled jpeg", body("lm-4-scout", userParts(imagePart(dataURI("image/jpeg", png))), ""), "", nil, errWant{errcat.ImageDecodeError, urlParam, 400}},
		{"not an image", body("lm-4-scout", userParts(imagePart(dataURI("image/png", []byte("hello world, not a picture")))), ""), "", nil, errWant{errcat.ImageDecodeError, urlParam, 400}},
		{"not a webp", body("lm-4-scout", userParts(imagePart(dataURI("image/webp", png))), ""), "", nil, errWant{errcat.ImageDecodeError, urlParam, 400}},
		{"second image bad", body("lm-4-scout", userParts(imagePart(pngURI), imagePart("data:image/gif;base64,R0lG")), ""), "", nil, errWant{errcat.ImageDecodeError, urlParam, 400}},
		{"context window", body("lm-small", `[{"role":"user","content":"`+strings.Repeat("x", 300)+`"}]`, ""), "", nil, errWant{errcat.ContextWindowExceeded, "messages", 400}},
		{"context window with max_tokens", body("lm-small", msgs, `,"max_tokens":96`), "", nil, errWant{errcat.ContextWindowExceeded, "messages", 400}},
		{"context window image", body("lm-small", userParts(imagePart(pngURI)), ""), "", nil, errWant{errcat.ContextWindowExceeded, "messages", 400}},
		{"attachments not array", body("lm-4-scout", msgs, `,"attachments":{}`), "", nil, errWant{errcat.InvalidField, "attachments", 400}},
		{"attachment bad kind", body("lm-4-scout", msgs, `,"attachments":[{"kind":"video"}]`), "", nil, errWant{errcat.InvalidField, "attachments[0].kind", 400}},
		{"attachment no kind", body("lm-4-scout", msgs, `,"attachments":[{"url":"x"}]`), "", nil, errWant{errcat.MissingField, "attachments[0].kind", 400}},
		{"attachment unknown field", body("lm-4-scout", msgs, `,"attachments":[{"kind":"image","url":"`+pngURI+`","size":3}]`), "", nil, errWant{errcat.InvalidField, "attachments[0].size", 400}},
		{"attachment image no url", body("lm-4-scout", msgs, `,"attachments":[{"kind":"image"}]`), "", nil, errWant{errcat.MissingField, "attachments[0].url", 400}},
		{"attachment doc no content", body("lm-4-scout", msgs, `,"attachments":[{"kind":"document","doc_name":"a"}]`), "body.", nil, errWant{errcat.MissingField, "body.attachments[0].content", 400}},
		{"attachment doc content not string", body("lm-4-scout", msgs, `,"attachments":[{"kind":"document","doc_name":"a","content":5}]`), "", nil, errWant{errcat.InvalidField, "attachments[0].content", 400}},
		{"attachment hash mismatch", body("lm-4-scout", msgs, `,"attachments":[{"kind":"image","url":"`+pngURI+`"},{"kind":"document","doc_name":"a","content":"x","content_hash":"sha256:00"}]`), "", nil,
			errWant{errcat.InvalidField, "attachments[1].content_hash", 400}},
		{"attachment hash mismatch c1", body("lm-4-scout", msgs, `,"attachments":[{"kind":"document","doc_name":"a","content":"x","content_hash":"sha256:00"}]`), "body.", nil,
			errWant{errcat.InvalidField, "body.attachments[0].content_hash", 400}},
		{"attachment image to text model", body("lm-text", msgs, `,"attachments":[{"kind":"image","url":"`+pngURI+`"}]`), "", nil,
			errWant{errcat.ModelNotVisionCapable, "messages[].content[].image_url", 400}},
		{"attachment http image", body("lm-4-scout", msgs, `,"attachments":[{"kind":"image","url":"https://x/y.png"}]`), "", nil,
			errWant{errcat.ImageURLNotSupported, urlParam, 400}},
		{"attachment base64 invalid", body("lm-4-scout", msgs, `,"attachments":[{"kind":"image","url":"data:image/png;base64,@@@@"}]`), "", nil,
			errWant{errcat.ImageBase64Invalid, "attachments[0].url", 400}},
		{"attachment decode error c1", body("lm-4-scout", msgs, `,"attachments":[{"kind":"image","url":"`+dataURI("image/gif", png)+`"}]`), "body.", nil,
			errWant{errcat.ImageDecodeError, "body.attachments[0].url", 400}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := check(t, preflight.Request{Body: []byte(tt.body), ParamPrefix: tt.prefix, Tenant: tt.tenant})
			if diff := cmp.Diff(tt.want, errOf(err)); diff != "" {
				t.Errorf("Check() error mismatch (-want +got):\n%s\nerror: %v", diff, err)
			}
		})
	}
}

func TestCheckImagesAccepted(t *testing.T) {
	for _, format := range []string{"png", "jpeg", "gif", "webp"} {
		t.Run(format, func(t *testing.T) {
			uri := dataURI("image/"+format, encodeImage(t, format))
			body := `{"model":"lm-4-scout","messages":` + userParts(`{"type":"text","text":"what is it?"}`, imagePart(uri)) + `}`
			res, err := check(t, preflight.Request{Body: []byte(body)})
			if err != nil {
				t.Fatalf("Check() = %v", err)
			}
			if !bytes.Equal(res.Body, []byte(body)) {
				t.Errorf("Check() body changed:\n%s", res.Body)
			}
		})
	}
	t.Run("http URL to a model that fetches URLs", func(t *testing.T) {
		body := `{"model":"lm-url","messages":` + userParts(imagePart("https://example.com/a.png")) + `}`
		if _, err := check(t, preflight.Request{Body: []byte(body)}); err != nil {
			t.Fatalf("Check() = %v", err)
		}
	})
	t.Run("escaped slashes and wrapped base64", func(t *testing.T) {
		b64 := base64.StdEncoding.EncodeToString(encodeImage(t, "png"))
		url := `data:image\/png;base64,` + b64[:20] + `\n` + b64[20:]
		body := `{"model":"lm-4-scout","messages":` + userParts(imagePart(url)) + `}`
		if _, err := check(t, preflight.Request{Body: []byte(body)}); err != nil {
			t.Fatalf("Check() = %v", err)
		}
	})
}

func TestCheckRewrite(t *testing.T) {
	png := dataURI("image/png", encodeImage(t, "png"))
	docHash := preflight.DocumentHash("line 1\nline \"2\"")
	tests := []struct {
		name   string
		body   string
		model  string
		system string
		want   string
	}{{
		name: "model first, unknown fields verbatim",
		body: `{"messages":[{"role":"user","content":"hi"}], "x_custom": {"a" : [1, 2.50, true]}, "user":"u-1", "model":"lm-4-scout", "logit_bias":{"50256":-100}}`,
		want: `{"model":"lm-4-scout","messages":[{"role":"user","content":"hi"}],"x_custom":{"a" : [1, 2.50, true]},"user":"u-1","logit_bias":{"50256":-100}}`,
	}, {
		name: "repeated member keeps the last",
		body: `{"model":"lm-4-scout","temperature":1,"messages":[{"role":"user","content":"hi"}],"temperature":0.5}`,
		want: `{"model":"lm-4-scout","messages":[{"role":"user","content":"hi"}],"temperature":0.5}`,
	}, {
		name:   "system message inserted first",
		body:   `{"model":"lm-4-scout","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}]}`,
		system: "Memory:\n- likes \"tea\"\t\u00e9",
		want:   `{"model":"lm-4-scout","messages":[{"role":"system","content":"Memory:\n- likes \"tea\"\t` + "\u00e9" + `"},{"role":"system","content":"be brief"},{"role":"user","content":"hi"}]}`,
	}, {
		name: "max_tokens floored",
		body: `{"model":"lm-reason","max_tokens":16,"max_completion_tokens":300,"messages":[{"role":"user","content":"hi"}]}`,
		want: `{"model":"lm-reason","max_tokens":200,"max_completion_tokens":300,"messages":[{"role":"user","content":"hi"}]}`,
	}, {
		name: "attachments into a string content",
		body: `{"model":"lm-4-scout","attachments":[{"kind":"image","url":"` + png + `","detail":"low"},{"kind":"document","doc_name":"plan.txt","content":"line 1\nline \"2\"","content_hash":"` + docHash + `"}],"messages":[{"role":"user","content":"first"},{"role":"assistant","content":"ok"},{"role":"user","content":"look"}]}`,
		want: `{"model":"lm-4-scout","messages":[{"role":"user","content":"first"},{"role":"assistant","content":"ok"},{"role":"user","content":[{"type":"text","text":"look"},` +
			`{"type":"image_url","image_url":{"url":"` + png + `","detail":"low"}},{"type":"text","text":"Document plan.txt:\nline 1\nline \"2\""}]}]}`,
	}, {
		name: "attachments into a parts content",
		body: `{"model":"lm-4-scout","messages":[{"role":"user","content":[{"type":"text","text":"look"} ]}],"attachments":[{"kind":"document","doc_name":"a","content":"b"}]}`,
		want: `{"model":"lm-4-scout","messages":[{"role":"user","content":[{"type":"text","text":"look"} ,{"type":"text","text":"Document a:\nb"}]}]}`,
	}, {
		name: "attachments with empty content",
		body: `{"model":"lm-4-scout","messages":[{"role":"user","content":""}],"attachments":[{"kind":"document","doc_name":"a","content":"b"}]}`,
		want: `{"model":"lm-4-scout","messages":[{"role":"user","content":[{"type":"text","text":"Document a:\nb"}]}]}`,
	}, {
		name: "attachments without a user message",
		body: `{"model":"lm-4-scout","messages":[{"role":"system","content":"s"}],"attachments":[{"kind":"document","doc_name":"a","content":"b"}]}`,
		want: `{"model":"lm-4-scout","messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"Document a:\nb"}]}]}`,
	}, {
		name:   "system and attachments, user without content",
		body:   `{"model":"lm-4-scout","messages":[{"role":"user"}],"attachments":[{"kind":"document","doc_name":"a","content":"b"}]}`,
		system: "S",
		want:   `{"model":"lm-4-scout","messages":[{"role":"system","content":"S"},{"role":"user","content":[{"type":"text","text":"Document a:\nb"}]}]}`,
	}, {
		name: "null attachments dropped",
		body: `{"model":"lm-4-scout","messages":[{"role":"user","content":"x"}],"attachments":null}`,
		want: `{"model":"lm-4-scout","messages":[{"role":"user","content":"x"}]}`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := preflight.Request{Body: []byte(tt.body)}
			if tt.system != "" {
				req.System = func(context.Context) (string, error) { return tt.system, nil }
			}
			res, err := check(t, req)
			if err != nil {
				t.Fatalf("Check() = %v", err)
			}
			if diff := cmp.Diff(tt.want, string(res.Body)); diff != "" {
				t.Errorf("Check() body mismatch (-want +got):\n%s", diff)
			}
			if !json.Valid(res.Body) {
				t.Errorf("Check() body is not JSON: %s", res.Body)
			}
		})
	}
}

func TestCheckResult(t *testing.T) {
	body := []byte(`{"model":"lm-reason","stream":true,"stream_options":{"include_usage":true},"max_tokens":20,` +
		`"messages":[{"role":"user","content":"hello"}],"attachments":[{"kind":"document","doc_name":"d.txt","content":"abc"}]}`)
	res, err := check(t, preflight.Request{Body: body})
	if err != nil {
		t.Fatalf("Check() = %v", err)
	}
	got := struct {
		Alias         string
		Stream        bool
		StreamOptions string
		Floored       int
		Applied       string
		MaxOutput     int64
		Documents     []preflight.Document
	}{res.Model.Alias, res.Stream, string(res.StreamOptions), res.FlooredMaxTokens, res.Applied(), res.MaxOutputTokens, res.Documents}
	want := struct {
		Alias         string
		Stream        bool
		StreamOptions string
		Floored       int
		Applied       string
		MaxOutput     int64
		Documents     []preflight.Document
	}{"lm-reason", true, `{"include_usage":true}`, 200, "max_tokens_floored=200", 200,
		[]preflight.Document{{Name: "d.txt", ContentHash: preflight.DocumentHash("abc")}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Check() result mismatch (-want +got):\n%s", diff)
	}
}

func TestCheckBodyUnchangedShared(t *testing.T) {
	body := []byte(`{"model":"lm-4-scout","messages":[{"role":"user","content":"hi"}],"n":1}`)
	res, err := check(t, preflight.Request{Body: body})
	if err != nil {
		t.Fatal(err)
	}
	if &res.Body[0] != &body[0] {
		t.Errorf("Check() copied a body that needed no rewrite")
	}
}

func TestCheckEstimate(t *testing.T) {
	// Two messages of 30 and 6 decoded bytes (the \u00e9 escape is 2 UTF-8 bytes,
	// "\n" is one), one image, a 12-byte system message:
	// (4 + 10) + (4 + 2 + 1000) + (4 + 4) = 1028.
	png := dataURI("image/png", encodeImage(t, "png"))
	body := `{"model":"lm-4-scout","messages":[{"role":"user","content":"` + strings.Repeat("a", 27) + `\u00e9\n"},` +
		`{"role":"user","content":[{"type":"text","text":"abcdef"},` + imagePart(png) + `]}]}`
	res, err := check(t, preflight.Request{Body: []byte(body), System: func(context.Context) (string, error) { return "twelve bytes", nil }})
	if err != nil {
		t.Fatal(err)
	}
	if res.PromptTokens != 1028 {
		t.Errorf("PromptTokens = %d, want 1028", res.PromptTokens)
	}
}

// TestCount: Count's estimate is Check's, injected text included; a
// request's own faults answer as in Check, but what is about sending it
// (the context window, the guard, consent) does not.
func TestCount(t *testing.T) {
	system := func(context.Context) (string, error) { return "twelve bytes", nil }
	png := dataURI("image/png", encodeImage(t, "png"))
	body := `{"model":"lm-4-scout","messages":[{"role":"user","content":"` + strings.Repeat("a", 27) + `\u00e9\n"},` +
		`{"role":"user","content":[{"type":"text","text":"abcdef"},` + imagePart(png) + `]}]}`
	count := func(body string, guarded bool) (int, error) {
		tenant := &auth.Tenant{ID: "acme"}
		if guarded {
			tenant.Settings.ContentGuard = preflight.GuardBlock // no classifier: Check would answer 503
			tenant.Settings.CloudDocConsent = true
		}
		return preflight.Count(context.Background(), &preflight.Request{Body: []byte(body), Tenant: tenant, Catalog: testCatalog(), System: system})
	}
	if n, err := count(body, true); err != nil || n != 1028 {
		t.Errorf("Count() = %d, %v; want 1028 (TestCheckEstimate's), with no guard or consent", n, err)
	}
	small := `{"model":"lm-small","max_tokens":5,"messages":[{"role":"user","content":"` + strings.Repeat("a", 600) + `"}]}`
	if n, err := count(small, false); err != nil || n != 4+200+4+4 {
		t.Errorf("Count(over the window) = %d, %v; want %d, not context_window_exceeded", n, err, 4+200+4+4)
	}
	for _, tc := range []struct {
		body string
		want errWant
	}{
		{`{"messages":[{"role":"user","content":"x"}]}`, errWant{errcat.MissingField, "model", 400}},
		{`{"model":"lm-embed","messages":[{"role":"user","content":"x"}]}`, errWant{errcat.ModelNotInAllowlist, "model", 400}},
		{`{"model":"lm-text","messages":` + userParts(imagePart(png)) + `}`, errWant{errcat.ModelNotVisionCapable, "messages[].content[].image_url", 400}},
		{`{"model":"lm-4-scout","max_tokens":0,"messages":[{"role":"user","content":"x"}]}`, errWant{errcat.MaxTokensBelowMinimum, "max_tokens", 400}},
	} {
		_, err := count(tc.body, false)
		if diff := cmp.Diff(tc.want, errOf(err)); diff != "" {
			t.Errorf("Count(%s) mismatch (-want +got):\n%s", tc.body, diff)
		}
	}
}

func TestCheckSystemError(t *testing.T) {
	want := errcat.Storage(errors.New("disk"))
	body := `{"model":"lm-4-scout","messages":[{"role":"user","content":"hi"}]}`
	_, err := check(t, preflight.Request{Body: []byte(body), System: func(context.Context) (string, error) { return "", want }})
	if !errors.Is(err, want) {
		t.Errorf("Check() = %v, want the System error", err)
	}
	// System is not called for an invalid request.
	called := false
	_, err = check(t, preflight.Request{Body: []byte(`{"model":"lm-4-scout"}`), System: func(context.Context) (string, error) { called = true; return "", nil }})
	if err == nil || called {
		t.Errorf("Check() = %v, System called %v; want an error and no call", err, called)
	}
}

// roundTrip marshals v and unmarshals it into out, to compare wire shapes.
func roundTrip(t *testing.T, v, out any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
}

func TestResultMessages(t *testing.T) {
	body := []byte(`{"model":"lm-4-scout","messages":[{"role":"user","content":"hello"}],` +
		`"attachments":[{"kind":"document","doc_name":"d.txt","content":"abc"}]}`)
	res, err := check(t, preflight.Request{Body: body, System: func(context.Context) (string, error) { return "SYS", nil }})
	if err != nil {
		t.Fatalf("Check() = %v", err)
	}
	msgs, err := res.Messages()
	if err != nil {
		t.Fatalf("Messages() = %v", err)
	}
	var got []map[string]any
	for _, m := range msgs {
		var v map[string]any
		if err := json.Unmarshal(m, &v); err != nil {
			t.Fatalf("message %s: %v", m, err)
		}
		got = append(got, v)
	}
	want := []map[string]any{
		{"role": "system", "content": "SYS"},
		{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "hello"},
			map[string]any{"type": "text", "text": "Document d.txt:\nabc"},
		}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Messages() mismatch (-want +got):\n%s", diff)
	}
}

func TestCheckBuilt(t *testing.T) {
	req := func() *preflight.Request {
		return &preflight.Request{Tenant: &auth.Tenant{ID: "acme"}, Catalog: testCatalog()}
	}
	hi := []json.RawMessage{wire.TextMessage("user", "hi")}
	ctx := context.Background()
	res, err := preflight.CheckBuilt(ctx, &wire.Request{Model: "lm-4-scout", Messages: hi}, req())
	if err != nil {
		t.Fatalf("CheckBuilt = %v", err)
	}
	if want := `{"model":"lm-4-scout","messages":[{"role":"user","content":"hi"}],"stream":false}`; string(res.Body) != want {
		t.Errorf("Body = %s, want %s", res.Body, want)
	}
	tests := []struct {
		name  string
		built wire.Request
		want  errWant
	}{
		{"params name the client's body", wire.Request{Model: "lm-4-scout", Messages: hi, Attachments: json.RawMessage(`5`)},
			errWant{Code: errcat.InvalidField, Param: "body.attachments", Status: 400}},
		{"a member that is not JSON", wire.Request{Model: "lm-4-scout", Messages: hi, ToolChoice: json.RawMessage(`{`)},
			errWant{Code: errcat.InternalError, Status: 500}},
		// Messages are copied unchecked into the body (wire.Request.Marshal):
		// the walk that follows finds one that is not JSON, which is the
		// gateway's fault, not the client's.
		{"a message that is not JSON", wire.Request{Model: "lm-4-scout", Messages: []json.RawMessage{hi[0], json.RawMessage(`{"role":`)}},
			errWant{Code: errcat.InternalError, Status: 500}},
	}
	for _, tt := range tests {
		_, err := preflight.CheckBuilt(ctx, &tt.built, req())
		if diff := cmp.Diff(tt.want, errOf(err)); diff != "" {
			t.Errorf("%s: CheckBuilt error mismatch (-want +got):\n%s", tt.name, diff)
		}
	}
}
