package upstream_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/upstream"
)

func TestDefaultCatalog(t *testing.T) {
	t.Parallel()
	cat, err := upstream.DefaultCatalog()
	if err != nil {
		t.Fatalf("DefaultCatalog: %v", err)
	}
	type summary struct {
		Kind          string
		ContextWindow int
		ImageIn       bool
		Reasoning     bool
		MinMaxTokens  int
		Chain         string
	}
	sum := func(alias string) summary {
		m := cat.Lookup(alias)
		if m == nil {
			t.Fatalf("Lookup(%q) = nil", alias)
		}
		s := summary{Kind: m.Kind, ContextWindow: m.ContextWindow, ImageIn: m.Modalities.ImageIn, Reasoning: m.ReasoningMode}
		if m.Constraints.MinMaxTokens != nil {
			s.MinMaxTokens = *m.Constraints.MinMaxTokens
		}
		var chain []string
		for _, b := range m.Backends {
			chain = append(chain, b.Provider)
		}
		s.Chain = strings.Join(chain, ">")
		return s
	}
	want := map[string]summary{
		"lm-4-scout":        {"chat", 131072, true, false, 0, "local>cloudA>cloudB"},
		"lm-4-scout-local":  {"chat", 131072, true, false, 0, "local"},
		"lm-4-scout-cloudA": {"chat", 131072, true, false, 0, "cloudA"},
		"lm-4-scout-cloudB": {"chat", 131072, true, false, 0, "cloudB"},
		"lm-vision":         {"chat", 131072, true, false, 0, "local>cloudA"},
		"lm-text-8k":        {"chat", 8192, false, false, 0, "local>cloudB"},
		"lm-reasoner":       {"chat", 65536, false, true, 200, "cloudA>cloudB"},
		"lm-embed":          {"embeddings", 8192, false, false, 0, "local>cloudA"},
		"lm-image":          {"image_generation", 512, false, false, 0, "cloudA>cloudB"},
		"lm-transcribe":     {"audio_transcription", 448, false, false, 0, "local>cloudA"},
	}
	got := map[string]summary{}
	for _, a := range cat.Aliases() {
		got[a] = sum(a)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("catalog mismatch (-want +got):\n%s", diff)
	}
	for _, m := range cat.Models {
		if m.Constraints.AcceptsImageURL {
			t.Errorf("%s: accepts_image_url true, want false everywhere", m.Alias)
		}
		for _, b := range m.Backends {
			if b.BaseURLEnv != b.Provider || b.Status != upstream.StatusAvailable {
				t.Errorf("%s/%s: base_url_env %q status %q", m.Alias, b.Provider, b.BaseURLEnv, b.Status)
			}
			if (b.Provider == "local") != (b.Pricing == nil) {
				t.Errorf("%s/%s: pricing %v, want null only for local", m.Alias, b.Provider, b.Pricing)
			}
		}
	}
}

func TestDefaultCatalogIsAFreshCopy(t *testing.T) {
	t.Parallel()
	a, _ := upstream.DefaultCatalog()
	b, _ := upstream.DefaultCatalog()
	a.Models[0].Alias = "changed"
	a.Models[0].Backends[0].RouterAlias = "changed"
	*a.Lookup("lm-reasoner").Constraints.MinMaxTokens = 1
	if b.Models[0].Alias != "lm-4-scout" || b.Models[0].Backends[0].RouterAlias != scoutLocal ||
		*b.Lookup("lm-reasoner").Constraints.MinMaxTokens != 200 {
		t.Error("DefaultCatalog copies share memory")
	}
	if a.Lookup("lm-4-scout") != nil {
		t.Error("Lookup finds an alias that was renamed in place")
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	cat, _ := upstream.DefaultCatalog()
	if m := cat.Lookup("lm-embed"); m == nil || m.Alias != "lm-embed" {
		t.Errorf("Lookup(lm-embed) = %v", m)
	}
	if m := cat.Lookup("nope"); m != nil {
		t.Errorf("Lookup(nope) = %v, want nil", m)
	}
	// A catalog decoded directly (no index) still works.
	data, _ := json.Marshal(cat)
	var decoded upstream.Catalog
	if err := json.Unmarshal(data, &decoded); err != nil {
		t.Fatal(err)
	}
	if m := decoded.Lookup("lm-image"); m == nil || m.Kind != upstream.KindImageGeneration {
		t.Errorf("Lookup on a decoded catalog = %v", m)
	}
	var nilCat *upstream.Catalog
	if nilCat.Lookup("lm-4-scout") != nil {
		t.Error("nil catalog Lookup != nil")
	}
}

func TestLookupKind(t *testing.T) {
	t.Parallel()
	cat, _ := upstream.DefaultCatalog()
	all, noImage := &auth.Tenant{ID: "acme"}, &auth.Tenant{ID: "acme", Models: []string{"lm-embed"}}
	tests := []struct {
		tenant      *auth.Tenant
		alias, kind string
		want        string // the alias found, or the error message
	}{
		{all, "lm-image", upstream.KindImageGeneration, "lm-image"},
		{all, "lm-embed", upstream.KindEmbeddings, "lm-embed"},
		{all, "lm-embed", upstream.KindImageGeneration,
			`Model "lm-embed" is not an image generation model this tenant may use; GET /v1/models lists them.`},
		{noImage, "lm-image", upstream.KindImageGeneration,
			`Model "lm-image" is not an image generation model this tenant may use; GET /v1/models lists them.`},
		{all, "nope", upstream.KindAudioTranscription,
			`Model "nope" is not an audio transcription model this tenant may use; GET /v1/models lists them.`},
		{all, "nope", upstream.KindChat, `Model "nope" is not a chat model this tenant may use; GET /v1/models lists them.`},
	}
	for _, tt := range tests {
		m, err := cat.LookupKind(tt.tenant, tt.alias, tt.kind)
		var got string
		switch e := errcat.As(err); {
		case err == nil:
			got = m.Alias
		case e.Code != errcat.ModelNotInAllowlist || e.Param != "model":
			t.Errorf("LookupKind(%s, %s) error %v, want model_not_in_allowlist (model)", tt.alias, tt.kind, err)
		default:
			got = e.Message
		}
		if got != tt.want {
			t.Errorf("LookupKind(%s, %s) = %q, want %q", tt.alias, tt.kind, got, tt.want)
		}
	}
}

const validModel = `{"alias":"m","description":"d","family":"f","kind":"chat","context_window":4096,
 "modalities":{"text_in":true,"text_out":true,"image_in":false,"audio_in":false,"video_in":false,"image_out":false},
 "tools":false,"json_mode":false,"reasoning_mode":false,"license":"MIT",
 "backends":[{"provider":"local","router_alias":"m:latest","status":"available","notes":null,"pricing":null}],
 "constraints":{"accepts_image_url":false,"min_max_tokens":null,"typical_response_seconds":null},"notes":""}`

// catalogFiles is the table of catalog files that ParseCatalog and the
// JSON Schema (models.schema.json) must judge alike: TestParseCatalog checks
// the loader's errors, TestSchemaAgrees the schema. goOnly marks the rules a
// schema cannot say (unique aliases) and text that is not one JSON value.
var catalogFiles = func() []struct {
	name    string
	data    string
	wantErr string // "" means valid
	goOnly  bool
} {
	with := func(old, new string) string { return strings.Replace(validModel, old, new, 1) }
	return []struct {
		name    string
		data    string
		wantErr string
		goOnly  bool
	}{
		{"object", `{"models":[` + validModel + `],"notes":"n"}`, "", false},
		{"bare array", `[` + validModel + `]`, "", false},
		{"base_url_env", `[` + with(`"status"`, `"base_url_env":"cloudA","status"`) + `]`, "", false},
		{"nulls where the loader takes them", `[` + with(`"description":"d"`, `"description":null,"modalities":null`) + `]`, "", false},
		{"an embeddings model without a window", `[` + with(`"kind":"chat","context_window":4096,`, `"kind":"embeddings",`) + `]`, "", false},
		{"no models", `{"models":[]}`, "line 1, column 11: models: no models", false},
		{"duplicate alias", `[` + validModel + `,` + validModel + `]`, `line 5, column 119: models[1].alias: alias "m" already used by models[0]`, true},
		{"empty alias", `[` + with(`"alias":"m"`, `"alias":""`) + `]`, `line 1, column 11: models[0].alias: alias must be non-empty without spaces (model "")`, false},
		{"alias with a space", `[` + with(`"alias":"m"`, `"alias":"m x"`) + `]`, `line 1, column 11: models[0].alias: alias must be non-empty`, false},
		{"unknown kind", `[` + with(`"kind":"chat"`, `"kind":"video"`) + `]`, `line 1, column 53: models[0].kind: unknown kind "video"`, false},
		{"missing kind", `[` + with(`"kind":"chat",`, ``) + `]`, `line 1, column 2: models[0].kind: unknown kind ""`, false},
		{"zero chat window", `[` + with(`4096`, `0`) + `]`, "line 1, column 77: models[0].context_window: context_window 0 must be positive", false},
		{"missing chat window", `[` + with(`"context_window":4096,`, ``) + `]`, "line 1, column 2: models[0].context_window: context_window 0 must be positive", false},
		{"negative floor", `[` + with(`"min_max_tokens":null`, `"min_max_tokens":-1`) + `]`, "line 5, column 60: models[0].constraints.min_max_tokens: constraints.min_max_tokens must not be negative", false},
		{"empty chain", `[` + with(`[{"provider":"local","router_alias":"m:latest","status":"available","notes":null,"pricing":null}]`, `[]`) + `]`, "line 4, column 13: models[0].backends: backends: empty chain", false},
		{"unknown provider", `[` + with(`"provider":"local"`, `"provider":"cloudC"`) + `]`, `line 4, column 26: models[0].backends[0].provider: unknown provider "cloudC"`, false},
		{"unknown base_url_env", `[` + with(`"status"`, `"base_url_env":"GATEWAY_LOCAL_URL","status"`) + `]`, `line 4, column 75: models[0].backends[0].base_url_env: unknown base_url_env "GATEWAY_LOCAL_URL"`, false},
		{"empty router_alias", `[` + with(`"m:latest"`, `""`) + `]`, "line 4, column 49: models[0].backends[0].router_alias: router_alias is empty", false},
		{"unknown status", `[` + with(`"available"`, `"up"`) + `]`, `line 4, column 69: models[0].backends[0].status: unknown status "up"`, false},
		{"unknown field", `[` + with(`"tools"`, `"tool":true,"tools"`) + `]`, `line 3, column 2: models[0].tool: unknown field "tool"`, false},
		{"a field in another case", `[` + with(`"alias"`, `"Alias"`) + `]`, `line 1, column 3: models[0].Alias: unknown field "Alias"`, false},
		{"unknown backend field", `[` + with(`"pricing":null`, `"price":null`) + `]`, `line 4, column 94: models[0].backends[0].price: unknown field "price"`, false},
		{"unknown top-level field", `{"models":[` + validModel + `],"note":"n"}`, `line 5, column 111: note: unknown field "note"`, false},
		{"a string where a number goes", `[` + with(`4096`, `"4096"`) + `]`, "line 1, column 83: context_window: a string where int goes", false},
		{"trailing data", `[` + validModel + `] []`, "line 5, column 112: unexpected data after the catalog", true},
		{"not JSON", `models: []`, "line 1, column 1: not JSON: invalid character 'm'", true},
	}
}()

func TestParseCatalog(t *testing.T) {
	t.Parallel()
	for _, tt := range catalogFiles {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cat, err := upstream.ParseCatalog([]byte(tt.data))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ParseCatalog: %v", err)
				}
				if cat.Lookup("m") == nil {
					t.Error("Lookup(m) = nil")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "catalog: "+tt.wantErr) {
				t.Errorf("ParseCatalog error = %v, want it to contain %q", err, "catalog: "+tt.wantErr)
			}
		})
	}
}

// TestSchemaAgrees: the JSON Schema of the models file accepts exactly the
// files of catalogFiles that ParseCatalog accepts, the built-in catalog and
// the documented examples: one format, said twice, checked to agree.
func TestSchemaAgrees(t *testing.T) {
	t.Parallel()
	c := jsonschema.NewCompiler()
	doc, err := loadJSON("models.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("models.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile("models.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, tt := range catalogFiles {
		if !tt.goOnly {
			files[tt.name] = tt.data
		}
	}
	paths, _ := filepath.Glob("../docs/models/*.json")
	for _, p := range append(paths, "catalog.json") {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files[p] = string(b)
	}
	for name, data := range files {
		_, loadErr := upstream.ParseCatalog([]byte(data))
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		schemaErr := schema.Validate(inst)
		if (loadErr == nil) != (schemaErr == nil) {
			t.Errorf("%s: the loader says %v, the schema says %v", name, loadErr, schemaErr)
		}
	}
}

func loadJSON(path string) (any, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return jsonschema.UnmarshalJSON(f)
}

func TestLoadCatalog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "models.json")
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(good, []byte(`[`+validModel+`]`), 0o600)
	os.WriteFile(bad, []byte(`[]`), 0o600)
	if cat, err := upstream.LoadCatalog(good); err != nil || len(cat.Models) != 1 {
		t.Errorf("LoadCatalog(good) = %v, %v", cat, err)
	}
	if _, err := upstream.LoadCatalog(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("LoadCatalog(bad) error = %v, want it to name the file", err)
	}
	if _, err := upstream.LoadCatalog(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("LoadCatalog(missing) succeeded")
	}
}

func TestNewCatalog(t *testing.T) {
	t.Parallel()
	def, _ := upstream.DefaultCatalog()
	cat, err := upstream.NewCatalog(def.Models[:2], "two")
	if err != nil {
		t.Fatalf("NewCatalog: %v", err)
	}
	def.Models[0].Backends[0].RouterAlias = "changed"
	if cat.Lookup("lm-4-scout").Backends[0].RouterAlias != scoutLocal {
		t.Error("NewCatalog shares memory with its argument")
	}
	if _, err := upstream.NewCatalog([]upstream.ModelInfo{def.Models[0], def.Models[0]}, ""); err == nil {
		t.Error("NewCatalog accepted duplicate aliases")
	}
}

func TestWithStatus(t *testing.T) {
	t.Parallel()
	cat, _ := upstream.DefaultCatalog()
	view := cat.WithStatus(upstream.Backends{LocalURL: "http://127.0.0.1:11434/v1", CloudBURL: "https://b.example/v1"})
	got := map[string][]upstream.Status{}
	for _, m := range view.Models {
		for _, b := range m.Backends {
			got[m.Alias] = append(got[m.Alias], b.Status)
			if b.BaseURLEnv != "" {
				t.Errorf("%s: base_url_env %q, want omitted", m.Alias, b.BaseURLEnv)
			}
		}
	}
	A, U := upstream.StatusAvailable, upstream.StatusUnconfigured
	want := map[string][]upstream.Status{
		"lm-4-scout": {A, U, A}, "lm-4-scout-local": {A}, "lm-4-scout-cloudA": {U}, "lm-4-scout-cloudB": {A},
		"lm-vision": {A, U}, "lm-text-8k": {A, A}, "lm-reasoner": {U, A}, "lm-embed": {A, U},
		"lm-image": {U, A}, "lm-transcribe": {A, U},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("statuses mismatch (-want +got):\n%s", diff)
	}
	data, _ := json.Marshal(view)
	if strings.Contains(string(data), "base_url_env") {
		t.Error("/v1/info JSON carries base_url_env")
	}
	// The original is unchanged.
	fresh, _ := upstream.DefaultCatalog()
	if diff := cmp.Diff(fresh, cat, cmpopts.IgnoreUnexported(upstream.Catalog{}, upstream.ModelInfo{})); diff != "" {
		t.Errorf("WithStatus changed its receiver (-want +got):\n%s", diff)
	}
	if view.Lookup("lm-image") == nil {
		t.Error("WithStatus result has no working Lookup")
	}
}

// TestNotConfigured: a model none of whose backends can be tried answers
// model_not_configured, its message naming what to set; any backend with
// an address (or an external router) makes it configured.
func TestNotConfigured(t *testing.T) {
	t.Parallel()
	chain := func(bs ...upstream.BackendInfo) []upstream.ModelInfo {
		return []upstream.ModelInfo{{Alias: "m", Kind: upstream.KindChat, ContextWindow: 8, Backends: bs}}
	}
	be := func(provider, env string, st upstream.Status) upstream.BackendInfo {
		return upstream.BackendInfo{Provider: provider, BaseURLEnv: env, RouterAlias: "x", Status: st}
	}
	A, P := upstream.StatusAvailable, upstream.StatusPlanned
	for _, tc := range []struct {
		name     string
		models   []upstream.ModelInfo
		backends upstream.Backends
		want     string // the message's reason, "" when configured
	}{
		{"local set", chain(be("local", "", A)), upstream.Backends{LocalURL: "http://l/v1"}, ""},
		{"local unset", chain(be("local", "", A)), upstream.Backends{},
			"set GATEWAY_LOCAL_URL (or GATEWAY_ROUTER_URL, an external router) and restart the gateway"},
		{"a chain, each unset once", chain(be("cloudA", "", A), be("cloudB", "", A), be("cloudA", "", A)), upstream.Backends{LocalURL: "http://l/v1"},
			"set GATEWAY_CLOUDA_URL or GATEWAY_CLOUDB_URL (or GATEWAY_ROUTER_URL, an external router) and restart the gateway"},
		{"base_url_env names the URL", chain(be("cloudA", "local", A)), upstream.Backends{},
			"set GATEWAY_LOCAL_URL (or GATEWAY_ROUTER_URL, an external router) and restart the gateway"},
		{"external router", chain(be("cloudB", "", A)), upstream.Backends{RouterURL: "http://r/v1"}, ""},
		{"planned only", chain(be("local", "", P)), upstream.Backends{LocalURL: "http://l/v1"},
			"the models file (GATEWAY_MODELS_FILE) marks each of its backends planned or unconfigured; mark one available"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cat, err := upstream.NewCatalog(tc.models, "")
			if err != nil {
				t.Fatal(err)
			}
			m := cat.WithStatus(tc.backends).Lookup("m")
			want, got := "", ""
			if tc.want != "" {
				want = `model_not_configured model Model "m" has no configured backend: ` + tc.want + "."
			}
			if err := m.NotConfigured(); err != nil {
				e := asErr(t, err)
				got = string(e.Code) + " " + e.Param + " " + e.Message
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("NotConfigured() mismatch (-want +got):\n%s", diff)
			}
			if m.Configured() != (tc.want == "") {
				t.Errorf("Configured() = %v, want %v", m.Configured(), tc.want == "")
			}
			if !cat.Lookup("m").Configured() {
				t.Error("the catalog WithStatus copied says it is not configured")
			}
		})
	}
}

func TestNewRouterValidation(t *testing.T) {
	t.Parallel()
	cat, _ := upstream.DefaultCatalog()
	tests := []struct {
		name string
		cat  *upstream.Catalog
		b    upstream.Backends
		opts []upstream.Option
	}{
		{"nil catalog", nil, upstream.Backends{}, nil},
		{"relative URL", cat, upstream.Backends{LocalURL: "localhost:11434"}, nil},
		{"ftp URL", cat, upstream.Backends{CloudAURL: "ftp://x/v1"}, nil},
		{"negative time-out", cat, upstream.Backends{TotalTimeout: -1}, nil},
		{"invalid catalog", &upstream.Catalog{}, upstream.Backends{}, nil},
		{"zero probe time-out", cat, upstream.Backends{}, []upstream.Option{upstream.WithProbeTimeout(0)}},
	}
	for _, tt := range tests {
		if _, err := upstream.NewRouter(tt.cat, tt.b, tt.opts...); err == nil {
			t.Errorf("%s: NewRouter succeeded", tt.name)
		}
	}
}

// TestDocumentedModelFiles: the example model files of docs/backends.md
// load as GATEWAY_MODELS_FILE would, so that the recipes stay true.
func TestDocumentedModelFiles(t *testing.T) {
	paths, err := filepath.Glob("../docs/models/*.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no example model files (%v)", err)
	}
	for _, p := range paths {
		if _, err := upstream.LoadCatalog(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}
