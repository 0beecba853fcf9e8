package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Where a learned context window comes from (ModelInfo.WindowSource).
const (
	// SourceLlamaCpp: llama.cpp's GET /props, default_generation_settings.n_ctx
	// (the context of one of its slots, what one request gets).
	SourceLlamaCpp = "llama.cpp:/props"
	// SourceVLLM: vLLM's GET /v1/models, the model's max_model_len.
	SourceVLLM = "vllm:/v1/models"
	// SourceOllama: Ollama's POST /api/show, the model's num_ctx parameter,
	// or else model_info["<architecture>.context_length"], which only bounds
	// what Ollama serves (its default context is smaller), so that the
	// catalog's value stays when it is smaller.
	SourceOllama = "ollama:/api/show"
)

// LearnUserAgent is the User-Agent of a Learner's requests, so that a
// server's log (and upstreamtest's fake) can tell them from model calls.
const LearnUserAgent = "chatgw-learn"

// DefaultLearnTimeout bounds each request a Learner sends.
const DefaultLearnTimeout = 2 * time.Second

// maxLearnBody bounds what a Learner reads of one answer (an /api/show
// answer holds the model's template and license: some KiB).
const maxLearnBody = 4 << 20

// Learner asks the model servers behind a catalog's backends what context
// window they serve, where a server says (llama.cpp's /props, Ollama's
// /api/show, vLLM's max_model_len), so that the pre-flight check refuses what
// the server would refuse, not what a catalog file claimed. A Learner is safe
// for concurrent use.
type Learner struct {
	client  *http.Client
	timeout time.Duration
}

// NewLearner returns a Learner sending its requests with client (nil is
// http.DefaultClient), each bounded by timeout (<= 0 is DefaultLearnTimeout).
func NewLearner(client *http.Client, timeout time.Duration) *Learner {
	if client == nil {
		client = http.DefaultClient
	}
	if timeout <= 0 {
		timeout = DefaultLearnTimeout
	}
	return &Learner{client: client, timeout: timeout}
}

// Learned is what Learn found for one chat model.
type Learned struct {
	Alias string
	// Window and Source are the model's context window after Learn
	// (ModelInfo.Window and WindowSource).
	Window int
	Source string
	// Errors say why a backend told nothing, by provider ("local: ..."):
	// a server that answers none of the three is not an error.
	Errors []string
}

// Learn asks the servers of the configured backends of cat's chat models,
// in parallel, what context window each serves, and sets each model's
// Window to the smallest one a server said (so that a request fits every
// backend of its chain), keeping the catalog's value where no server said
// one. Nothing is learned through an external router (b.RouterURL), which
// may serve a model from anywhere. Each request is bounded by the Learner's
// time-out and by ctx; Learn returns when all are done, with what it found
// in catalog order. Learning again replaces what was learned before.
func (l *Learner) Learn(ctx context.Context, cat *Catalog, b Backends) []Learned {
	cat.ensureCells()
	servers := map[string]*server{}
	type job struct {
		model int
		srv   *server
		alias string
		label string
	}
	var jobs []job
	for i := range cat.Models {
		m := &cat.Models[i]
		if m.Kind != KindChat && m.Kind != "" || b.RouterURL != "" {
			continue
		}
		for _, be := range m.Backends {
			base := b.URL(be.urlProvider())
			if base == "" || be.Status == StatusPlanned || be.Status == StatusUnconfigured {
				continue
			}
			srv := servers[base]
			if srv == nil {
				srv = &server{l: l, base: base, key: b.APIKey(be.urlProvider())}
				servers[base] = srv
			}
			jobs = append(jobs, job{model: i, srv: srv, alias: be.RouterAlias, label: be.Provider})
		}
	}
	found := make([][]window, len(cat.Models))
	errs := make([][]string, len(cat.Models))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Go(func() {
			w, err := j.srv.window(ctx, j.alias)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs[j.model] = append(errs[j.model], j.label+": "+err.Error())
			} else if w.tokens > 0 {
				found[j.model] = append(found[j.model], w)
			}
		})
	}
	wg.Wait()
	out := make([]Learned, 0, len(cat.Models))
	for i := range cat.Models {
		m := &cat.Models[i]
		if m.Kind != KindChat && m.Kind != "" {
			continue
		}
		m.learned.v.Store(smallest(m.ContextWindow, found[i]))
		out = append(out, Learned{Alias: m.Alias, Window: m.Window(), Source: m.WindowSource(), Errors: errs[i]})
	}
	return out
}

// ensureCells gives every model a learned-window cell (a catalog decoded
// from JSON directly has none).
func (c *Catalog) ensureCells() {
	for i := range c.Models {
		if c.Models[i].learned == nil {
			c.Models[i].learned = new(learnedCell)
		}
	}
}

// window is what one server said: a context window, and whether it only
// bounds the one served (upper).
type window struct {
	tokens int
	source string
	upper  bool
}

// smallest is the learned window of a model whose catalog says catalog and
// whose servers said found: the smallest value, where an upper bound larger
// than the catalog's value counts as the catalog's; nil (keep the catalog's)
// when none said one or the catalog's is the smallest.
func smallest(catalog int, found []window) *learnedWindow {
	var best *learnedWindow
	for _, w := range found {
		c := learnedWindow{tokens: w.tokens, source: w.source}
		if w.upper && catalog > 0 && catalog <= w.tokens {
			c = learnedWindow{tokens: catalog, source: SourceCatalog}
		}
		if best == nil || c.tokens < best.tokens {
			best = &c
		}
	}
	if best != nil && best.source == SourceCatalog {
		return nil
	}
	return best
}

// server is one model server, asked once for what does not depend on the
// model (its /v1/models list and /props) however many backends use it.
type server struct {
	l         *Learner
	base, key string

	once   sync.Once
	models map[string]int // vLLM: max_model_len by model id
	props  int            // llama.cpp: n_ctx; 0 when it has no /props
	err    error          // why neither could be read, when neither could
}

// window is the context window the server serves for the model it knows as
// alias, trying vLLM's list, llama.cpp's /props and Ollama's /api/show in
// turn; a zero window when it says none.
func (s *server) window(ctx context.Context, alias string) (window, error) {
	s.once.Do(func() { s.survey(ctx) })
	if n := s.models[alias]; n > 0 {
		return window{tokens: n, source: SourceVLLM}, nil
	}
	if s.props > 0 {
		return window{tokens: s.props, source: SourceLlamaCpp}, nil
	}
	if s.err != nil {
		return window{}, s.err
	}
	return s.ollama(ctx, alias)
}

// survey reads the server's /v1/models and /props.
func (s *server) survey(ctx context.Context) {
	var list struct {
		Data []struct {
			ID          string `json:"id"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	errList := s.get(ctx, http.MethodGet, joinURL(s.base, "/models"), nil, &list)
	s.models = map[string]int{}
	for _, m := range list.Data {
		s.models[m.ID] = m.MaxModelLen
	}
	var props struct {
		Settings struct {
			NCtx int `json:"n_ctx"`
		} `json:"default_generation_settings"`
	}
	if err := s.get(ctx, http.MethodGet, joinURL(serverRoot(s.base), "/props"), nil, &props); err == nil {
		s.props = props.Settings.NCtx
	} else if errList != nil && !errors.Is(err, errNotThere) {
		s.err = errList // the server did not answer at all
	}
}

// ollama reads Ollama's /api/show for alias.
func (s *server) ollama(ctx context.Context, alias string) (window, error) {
	body, _ := json.Marshal(map[string]string{"model": alias})
	var show struct {
		Parameters string         `json:"parameters"`
		ModelInfo  map[string]any `json:"model_info"`
	}
	if err := s.get(ctx, http.MethodPost, joinURL(serverRoot(s.base), "/api/show"), body, &show); err != nil {
		if errors.Is(err, errNotThere) {
			return window{}, nil
		}
		return window{}, err
	}
	if n := numCtx(show.Parameters); n > 0 {
		return window{tokens: n, source: SourceOllama}, nil
	}
	arch, _ := show.ModelInfo["general.architecture"].(string)
	if n, ok := show.ModelInfo[arch+".context_length"].(float64); ok && n > 0 {
		return window{tokens: int(n), source: SourceOllama, upper: true}, nil
	}
	return window{}, nil
}

// numCtx is the num_ctx of Ollama's parameters text ("num_ctx 8192" on a
// line of its own), 0 when absent.
func numCtx(params string) int {
	for line := range strings.Lines(params) {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "num_ctx" {
			if n, err := strconv.Atoi(f[1]); err == nil && n > 0 {
				return n
			}
		}
	}
	return 0
}

// errNotThere is an answer that says the server has no such endpoint (any
// 4xx, or an answer that is not the JSON asked for): a server of another
// kind, not a failure.
var errNotThere = errors.New("not served here")

// get sends one request bounded by the time-out and decodes a 2xx JSON
// answer into v. Errors never name the host (a message may reach the log
// only).
func (s *server) get(ctx context.Context, method, url string, body []byte, v any) error {
	ctx, cancel := context.WithTimeout(ctx, s.l.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("invalid URL")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", LearnUserAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if s.key != "" {
		req.Header.Set("Authorization", "Bearer "+s.key)
	}
	resp, err := s.l.client.Do(req)
	if err != nil {
		return errors.New(connectReason(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		if resp.StatusCode/100 == 4 {
			return errNotThere
		}
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxLearnBody)).Decode(v); err != nil {
		return errNotThere
	}
	return nil
}

// serverRoot is the root of an OpenAI-compatible base URL ("…/v1"), where
// llama.cpp's /props and Ollama's /api/show live.
func serverRoot(base string) string {
	base = strings.TrimRight(base, "/")
	return strings.TrimSuffix(base, "/v1")
}
