package agents_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chatgw/gateway/agents"
	"github.com/chatgw/gateway/tools"
	"github.com/google/go-cmp/cmp"
)

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoad(t *testing.T) {
	reg, err := tools.NewRegistry(tools.CurrentTime(nil))
	if err != nil {
		t.Fatal(err)
	}
	dir := writeFiles(t, map[string]string{
		"b.json":     `{"name":"bob","description":"B","model":"lm-4-scout","system_prompt":"Hi","tools":["current_time","agent_call"],"max_tool_rounds":3}`,
		"a.json":     `{"name":"alice","model":"lm-4-scout","tools":["nope"],"rag_index":"docs"}`,
		"notes.txt":  `not an agent`,
		".hid.json":  `{`,
		"upper.JSON": `{`,
	})
	got, warnings, err := agents.Load(dir, reg)
	if err != nil {
		t.Fatal(err)
	}
	want := []agents.Agent{
		{Name: "alice", Model: "lm-4-scout", Tools: []string{"nope"}, RAGIndex: "docs", File: filepath.Join(dir, "a.json")},
		{Name: "bob", Description: "B", Model: "lm-4-scout", SystemPrompt: "Hi", Tools: []string{"current_time", "agent_call"}, MaxToolRounds: 3, File: filepath.Join(dir, "b.json")},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Load() mismatch (-want +got):\n%s", diff)
	}
	var ws []string
	for _, w := range warnings {
		ws = append(ws, w.File+" "+w.Tool)
	}
	wantWarn := []string{filepath.Join(dir, "a.json") + " nope", filepath.Join(dir, "a.json") + " rag_search"}
	if diff := cmp.Diff(wantWarn, ws); diff != "" {
		t.Errorf("warnings mismatch (-want +got):\n%s", diff)
	}
}

func TestLoadWarnsOfUnknownFieldsAndRepeatedTools(t *testing.T) {
	reg, err := tools.NewRegistry(tools.CurrentTime(nil))
	if err != nil {
		t.Fatal(err)
	}
	dir := writeFiles(t, map[string]string{
		"x.json": `{"name":"a","model":"m","temperature":0.2,"tools":["current_time","current_time"],"owner":"ops"}`,
	})
	got, warnings, err := agents.Load(dir, reg)
	if err != nil {
		t.Fatalf("Load() = %v; an unknown field or a repeated tool must not stop start-up", err)
	}
	path := filepath.Join(dir, "x.json")
	want := []agents.Agent{{Name: "a", Model: "m", Tools: []string{"current_time"}, File: path}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Load() mismatch (-want +got):\n%s", diff)
	}
	var ws []string
	for _, w := range warnings {
		ws = append(ws, w.String())
	}
	wantWarn := []string{
		path + `: agent a: unknown field "owner" is ignored`,
		path + `: agent a: unknown field "temperature" is ignored`,
		path + `: agent a: tool "current_time" is listed twice; once is kept`,
	}
	if diff := cmp.Diff(wantWarn, ws); diff != "" {
		t.Errorf("warnings mismatch (-want +got):\n%s", diff)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string // substrings of the error
	}{
		{"bad JSON", map[string]string{"x.json": `{"name":`}, []string{"x.json", "not a valid agent file"}},
		{"not an object", map[string]string{"x.json": `[1]`}, []string{"x.json"}},
		{"trailing data", map[string]string{"x.json": `{"name":"a","model":"m"} {}`}, []string{"x.json"}},
		{"no name", map[string]string{"x.json": `{"model":"m"}`}, []string{"x.json", "name is required"}},
		{"no model", map[string]string{"x.json": `{"name":"a"}`}, []string{"x.json", "model is required"}},
		{"bad name", map[string]string{"x.json": `{"name":"a/b","model":"m"}`}, []string{"x.json", "name"}},
		{"rounds over cap", map[string]string{"x.json": `{"name":"a","model":"m","max_tool_rounds":17}`}, []string{"x.json", "max_tool_rounds"}},
		{"empty tool name", map[string]string{"x.json": `{"name":"a","model":"m","tools":[""]}`}, []string{"x.json", "empty"}},
		{"a field of the wrong type", map[string]string{"x.json": `{"name":"a","model":"m","tools":"t"}`}, []string{"x.json", "not a valid agent file"}},
		{"duplicate name", map[string]string{"x.json": `{"name":"a","model":"m"}`, "y.json": `{"name":"a","model":"m"}`}, []string{"y.json", "x.json", `"a"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := agents.Load(writeFiles(t, tt.files), nil)
			if err == nil {
				t.Fatal("Load() = nil error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Load() error %q does not mention %q", err, w)
				}
			}
		})
	}
	if _, _, err := agents.Load(filepath.Join(t.TempDir(), "absent"), nil); err == nil {
		t.Error("Load(absent dir) = nil error")
	}
	if got, _, err := agents.Load("", nil); err != nil || got != nil {
		t.Errorf(`Load("") = %v, %v; want nothing`, got, err)
	}
}

func TestNewErrors(t *testing.T) {
	reg, _ := tools.NewRegistry()
	base := agents.Config{Tools: reg, Upstream: &fakeUpstream{}, Catalog: testCatalog(), Store: nil}
	if _, err := agents.New(base); err == nil {
		t.Error("New without Store = nil error")
	}
	e := newEnv(t, nil)
	base.Store = e.st
	base.Agents = []agents.Agent{{Name: "a", Model: "m"}, {Name: "a", Model: "m"}}
	if _, err := agents.New(base); err == nil {
		t.Error("New with a duplicate agent = nil error")
	}
	base.Agents = []agents.Agent{{Name: "a"}}
	if _, err := agents.New(base); err == nil {
		t.Error("New with an agent without model = nil error")
	}
}
