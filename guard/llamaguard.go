package guard

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// LlamaGuardConfig configures a LlamaGuard classifier.
type LlamaGuardConfig struct {
	// BaseURL is the chat endpoint's base URL, ending in /v1
	// (GATEWAY_GUARD_LLAMA_GUARD_URL); requests go to BaseURL +
	// "/chat/completions". Required.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <key>"; empty sends no
	// Authorization header (GATEWAY_GUARD_LLAMA_GUARD_API_KEY).
	APIKey string
	// Model is the request's "model", the name the server knows the Llama
	// Guard model by; empty omits it, for servers that serve one model
	// (llama.cpp) (GATEWAY_GUARD_LLAMA_GUARD_MODEL).
	Model string
	// Client makes the requests; nil means DefaultClient().
	Client *http.Client
}

// LlamaGuard is the Llama Guard classifier (ClassifierLlamaGuard): a Llama
// Guard 3 (or 4) model served by any OpenAI-compatible chat endpoint, such as
// llama.cpp's server, vLLM or Ollama, which must apply the model's own chat
// template (the one that holds the safety policy and its categories). It
// sends the input's texts, joined by blank lines, as one user message (the
// template wants user and assistant turns to alternate), with temperature 0:
//
//	{"model": "<Model>", "messages": [{"role": "user", "content": "..."}], "temperature": 0, "max_tokens": 64}
//
// and reads the assistant's answer: "safe", or "unsafe" followed by the
// violated categories' codes ("unsafe\nS1,S10"). Case, white space around
// lines and codes, and codes separated by commas, spaces or lines are
// tolerated; anything else (no codes after "unsafe", a word that is not an
// S-code, Llama Guard 1's O-codes) is an ErrMalformed error. Images are not
// sent: Llama Guard 3's text models do not take them.
//
// Each code becomes one Category (Score 1, Native the code in uppercase), in
// code order, named by this table of the Llama Guard 3 and 4 hazard
// categories (MLCommons' taxonomy):
//
//	S1  Violent Crimes            illicit/violent   OpenAI's wrongdoing that includes violence
//	S2  Non-Violent Crimes        illicit           OpenAI's wrongdoing: fraud, theft, drugs, hacking
//	S3  Sex-Related Crimes        sex-crimes        trafficking, assault: neither sexual (content) nor violence (depiction)
//	S4  Child Sexual Exploitation sexual/minors
//	S5  Defamation                defamation
//	S6  Specialized Advice        specialized-advice
//	S7  Privacy                   privacy
//	S8  Intellectual Property     intellectual-property
//	S9  Indiscriminate Weapons    indiscriminate-weapons  chemical, biological, nuclear, explosive: kept apart from illicit/violent
//	S10 Hate                      hate
//	S11 Suicide & Self-Harm       self-harm
//	S12 Sexual Content            sexual
//	S13 Elections                 elections
//	S14 Code Interpreter Abuse    code-interpreter-abuse
//
// A code outside the table (a later model's S15) is kept, named after the
// code lowercased ("s15"). Llama Guard 2 numbers its categories differently
// from S5 on; its codes would be misnamed, so use Llama Guard 3 or later.
//
// An input with nothing to classify makes no request. Errors wrap
// ErrUnavailable or ErrMalformed (see there) and never hold the content or the
// model's answer. LlamaGuard is safe for concurrent use.
type LlamaGuard struct {
	ep    endpoint
	model string
}

var _ Classifier = (*LlamaGuard)(nil)

// llamaGuardName returns the Category.Name of S-code n: the table of
// LlamaGuard's doc comment.
func llamaGuardName(n int) string {
	switch n {
	case 1:
		return CategoryIllicitViolent
	case 2:
		return CategoryIllicit
	case 3:
		return "sex-crimes"
	case 4:
		return CategorySexualMinors
	case 5:
		return "defamation"
	case 6:
		return "specialized-advice"
	case 7:
		return "privacy"
	case 8:
		return "intellectual-property"
	case 9:
		return "indiscriminate-weapons"
	case 10:
		return CategoryHate
	case 11:
		return CategorySelfHarm
	case 12:
		return CategorySexual
	case 13:
		return "elections"
	case 14:
		return "code-interpreter-abuse"
	}
	return "s" + strconv.Itoa(n)
}

// NewLlamaGuard returns a LlamaGuard classifier. It fails when BaseURL is not
// an absolute http(s) URL (or already ends in /chat/completions).
func NewLlamaGuard(cfg LlamaGuardConfig) (*LlamaGuard, error) {
	ep, err := newEndpoint(ClassifierLlamaGuard, cfg.BaseURL, "/chat/completions", cfg.APIKey, cfg.Client)
	if err != nil {
		return nil, err
	}
	return &LlamaGuard{ep: ep, model: cfg.Model}, nil
}

type llamaGuardRequest struct {
	Model       string              `json:"model,omitempty"`
	Messages    []llamaGuardMessage `json:"messages"`
	Temperature float64             `json:"temperature"`
	MaxTokens   int                 `json:"max_tokens"`
}

type llamaGuardMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type llamaGuardAnswer struct {
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
}

// Classify asks the model about in's texts.
func (g *LlamaGuard) Classify(ctx context.Context, in Input) (Verdict, error) {
	texts := slices.DeleteFunc(slices.Clone(in.Texts), func(s string) bool { return s == "" })
	if len(texts) == 0 {
		return Verdict{}, nil
	}
	req := llamaGuardRequest{
		Model:     g.model,
		Messages:  []llamaGuardMessage{{Role: "user", Content: strings.Join(texts, "\n\n")}},
		MaxTokens: 64,
	}
	var ans llamaGuardAnswer
	if err := g.ep.post(ctx, req, &ans); err != nil {
		return Verdict{}, err
	}
	if len(ans.Choices) == 0 || ans.Choices[0].Message.Content == nil {
		return Verdict{}, fmt.Errorf("guard: llama_guard: %w: no choices[0].message.content", ErrMalformed)
	}
	codes, err := parseLlamaGuard(*ans.Choices[0].Message.Content)
	if err != nil {
		return Verdict{}, fmt.Errorf("guard: llama_guard: %w: %v", ErrMalformed, err)
	}
	var v Verdict
	for _, n := range codes {
		v.Categories = append(v.Categories, Category{
			Name: llamaGuardName(n), Score: 1, Native: "S" + strconv.Itoa(n), Classifier: ClassifierLlamaGuard,
		})
	}
	return v, nil
}

// parseLlamaGuard reads a Llama Guard answer: nil for "safe", the code
// numbers, sorted and without duplicates, for "unsafe" and its codes. Its
// errors say what is wrong without quoting the answer.
func parseLlamaGuard(answer string) ([]int, error) {
	fields := strings.FieldsFunc(strings.ToLower(answer), func(r rune) bool {
		return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r'
	})
	switch {
	case len(fields) == 0:
		return nil, fmt.Errorf("empty answer")
	case fields[0] == "safe" && len(fields) == 1:
		return nil, nil
	case fields[0] != "unsafe":
		return nil, fmt.Errorf("answer of %d bytes is neither safe nor unsafe", len(answer))
	case len(fields) == 1:
		return nil, fmt.Errorf("unsafe without category codes")
	}
	var codes []int
	for i, f := range fields[1:] {
		n, err := strconv.Atoi(strings.TrimPrefix(f, "s"))
		if !strings.HasPrefix(f, "s") || err != nil || n < 1 || n > 999 || f[1] == '+' || f[1] == '-' {
			return nil, fmt.Errorf("word %d after unsafe is not an S-code", i+1)
		}
		codes = append(codes, n)
	}
	slices.Sort(codes)
	return slices.Compact(codes), nil
}
