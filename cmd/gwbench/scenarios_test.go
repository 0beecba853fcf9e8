package main

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestReadStream(t *testing.T) {
	long := "data: " + strings.Repeat("x", 40<<10) + "\n\n"
	tests := []struct {
		name      string
		body      io.Reader
		truncated bool
		first     bool // a data event arrived
	}{
		{name: "ends with done", body: strings.NewReader("data: {}\n\ndata: [DONE]\n\n"), first: true},
		{name: "comment first, done", body: strings.NewReader(": keep-alive\n\ndata: {}\n\ndata: [DONE]\n\n"), first: true},
		{name: "line longer than the buffer", body: strings.NewReader(long + "data: [DONE]\n\n"), first: true},
		{name: "done without final newline", body: strings.NewReader("data: {}\n\ndata: [DONE]"), first: true},
		{name: "no done", body: strings.NewReader("data: {}\n\n"), truncated: true, first: true},
		{name: "gw.error after done-less content", body: strings.NewReader("data: {}\n\nevent: gw.error\ndata: {\"error\":{}}\n\n"), truncated: true, first: true},
		{name: "cut in the middle of done", body: strings.NewReader("data: {}\n\ndata: [DO"), truncated: true, first: true},
		{name: "something after done", body: strings.NewReader("data: [DONE]\n\ndata: {}\n\n"), truncated: true, first: true},
		{name: "read error", body: io.MultiReader(strings.NewReader("data: {}\n\n"), iotest.ErrReader(errors.New("connection reset"))), truncated: true, first: true},
		{name: "empty", body: strings.NewReader(""), truncated: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := readStream(tc.body, nil)
			if out.truncated != tc.truncated || (out.err != nil) != tc.truncated {
				t.Errorf("readStream() truncated %v err %v, want truncated %v", out.truncated, out.err, tc.truncated)
			}
			if !out.firstEvent.IsZero() != tc.first {
				t.Errorf("readStream() first event at %v, want one: %v", out.firstEvent, tc.first)
			}
		})
	}
}

func TestContinuing(t *testing.T) {
	tests := []struct {
		f    float64
		want int // of 100 requests
	}{{0, 0}, {0.3, 30}, {0.5, 50}, {1, 100}}
	for _, tc := range tests {
		n := 0
		for i := range 100 {
			if continuing(i, tc.f) {
				n++
			}
		}
		if n != tc.want {
			t.Errorf("continuing(0..99, %v): %d requests, want %d", tc.f, n, tc.want)
		}
	}
	if continuing(0, 0.5) {
		t.Errorf("continuing(0, 0.5) = true, want the first request (the probe) to start a conversation")
	}
}

func TestBodiesAreJSON(t *testing.T) {
	bodies := map[string][]byte{
		"v1":           v1Body(true),
		"completion":   chatCompletionBody(20, false),
		"c1 new":       c1Body("", 0, false),
		"c1 continued": c1Body("gwbench-c1-json-3", 10, true),
	}
	for name, b := range bodies {
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Errorf("%s body %s: %v", name, b, err)
		}
	}
	var c struct{ Messages []struct{ Role string } }
	json.Unmarshal(chatCompletionBody(20, false), &c)
	if len(c.Messages) != 21 || c.Messages[19].Role != "assistant" || c.Messages[20].Role != "user" {
		t.Errorf("chatCompletionBody(20): %d messages ending %+v, want 20 history messages then the user's", len(c.Messages), c.Messages)
	}
}
