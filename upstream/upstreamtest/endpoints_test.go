package upstreamtest_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/chatgw/gateway/upstream/upstreamtest"
)

func TestOtherEndpoints(t *testing.T) {
	t.Parallel()
	s := upstreamtest.New(t, upstreamtest.WithReply(upstreamtest.Reply{Dimensions: 3, Content: "transcribed"}))

	var emb struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		} `json:"data"`
		Model string `json:"model"`
	}
	json.NewDecoder(post(t, s.URL+"/embeddings", `{"model":"e","input":["a","b"]}`).Body).Decode(&emb)
	if len(emb.Data) != 2 || len(emb.Data[1].Embedding) != 3 || emb.Data[1].Index != 1 || emb.Model != "e" {
		t.Errorf("embeddings = %+v", emb)
	}
	json.NewDecoder(post(t, s.URL+"/embeddings", `{"model":"e","input":[1,2,3]}`).Body).Decode(&emb)
	if len(emb.Data) != 1 {
		t.Errorf("a token array gave %d embeddings, want 1", len(emb.Data))
	}

	var img struct {
		Data []struct {
			B64 string `json:"b64_json"`
		} `json:"data"`
	}
	json.NewDecoder(post(t, s.URL+"/images/generations", `{"model":"i","prompt":"cat","n":2}`).Body).Decode(&img)
	if len(img.Data) != 2 {
		t.Fatalf("images = %+v", img)
	}
	raw, err := base64.StdEncoding.DecodeString(img.Data[0].B64)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(bytes.NewReader(raw)); err != nil {
		t.Errorf("b64_json is not a PNG: %v", err)
	}

	data, _ := io.ReadAll(post(t, s.URL+"/audio/transcriptions", ``).Body)
	if string(data) != `{"text":"transcribed"}` {
		t.Errorf("transcription = %s", data)
	}
	resp, err := http.Get(s.URL + "/models")
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("GET /models = %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	if r := post(t, s.URL+"/nope", `{}`); r.StatusCode != 404 {
		t.Errorf("unknown path status %d", r.StatusCode)
	}
}

func TestRawBodyAndEvents(t *testing.T) {
	t.Parallel()
	h := upstreamtest.NewHandler(upstreamtest.Config{DiscardCalls: true, Script: []upstreamtest.Reply{
		{Body: []byte(`{"custom":true}`), Status: 201},
		{Events: []string{`{"a":1}`, `{"b":2}`}},
	}})
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer h.Close()
	resp := post(t, srv.URL+"/chat/completions", `{}`)
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 201 || string(data) != `{"custom":true}` {
		t.Errorf("raw body = %d %s", resp.StatusCode, data)
	}
	stream, err := io.ReadAll(post(t, srv.URL+"/chat/completions", `{}`).Body)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	events := sseData(t, stream)
	if diff := cmp.Diff([]string{`{"a":1}`, `{"b":2}`, "[DONE]"}, events); diff != "" {
		t.Errorf("events mismatch (-want +got):\n%s", diff)
	}
	if len(h.Calls()) != 0 || h.CallCount() != 2 {
		t.Errorf("DiscardCalls: %d recorded, count %d", len(h.Calls()), h.CallCount())
	}
}

// BenchmarkStream measures the fake serving 8-chunk streams over real HTTP.
func BenchmarkStream(b *testing.B) {
	s := upstreamtest.Start(upstreamtest.Config{DiscardCalls: true, Reply: upstreamtest.Reply{Chunks: 8}})
	defer s.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: 256}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	body := []byte(`{"model":"m","stream":true,"stream_options":{"include_usage":true}}`)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Post(s.URL+"/chat/completions", "application/json", bytes.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
}
