package guard

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
)

// DefaultThreshold is the category score at or above which Moderation flags a
// category (GATEWAY_GUARD_THRESHOLD's default).
const DefaultThreshold = 0.5

// ModerationConfig configures a Moderation classifier.
type ModerationConfig struct {
	// BaseURL is the endpoint's base URL, ending in /v1
	// (GATEWAY_GUARD_MODERATION_URL); requests go to BaseURL + "/moderations".
	// Required.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <key>"; empty sends no
	// Authorization header (GATEWAY_GUARD_MODERATION_API_KEY).
	APIKey string
	// Model is the request's "model"; empty omits it, and the endpoint uses
	// its default (GATEWAY_GUARD_MODERATION_MODEL).
	Model string
	// Threshold flags a category whose score is at or above it, in (0, 1];
	// zero means DefaultThreshold (GATEWAY_GUARD_THRESHOLD).
	Threshold float64
	// Client makes the requests; nil means DefaultClient().
	Client *http.Client
}

// Moderation is the moderation classifier (ClassifierModeration): any
// OpenAI-compatible POST /v1/moderations endpoint. It sends
//
//	{"model": "<Model>", "input": ["<text>", ...]}
//
// with the input's texts (empty ones left out), or, when the input has
// images, the multimodal form of OpenAI's omni models:
//
//	{"input": [{"type": "text", "text": "..."}, {"type": "image_url", "image_url": {"url": "..."}}]}
//
// and reads OpenAI's answer:
//
//	{"results": [{"flagged": true, "categories": {"hate": true, ...}, "category_scores": {"hate": 0.93, ...}}]}
//
// A category is flagged when some result has categories[c] true or
// category_scores[c] >= Threshold. Its Name is the answer's key lowercased
// (OpenAI's names are the canonical names; another endpoint's keys stay as
// they are, lowercased), Native the key as sent, Score the highest score of
// the results (1 when flagged by categories[c] without a score; scores are
// clamped to 0..1). A result whose "flagged" is true but which flags no
// category by these rules gives the category "flagged" (Score 1): the
// endpoint's word is kept. Categories come in Name order.
//
// An input with nothing to classify makes no request. Errors wrap
// ErrUnavailable or ErrMalformed (see there) and never hold the content.
// Moderation is safe for concurrent use.
type Moderation struct {
	ep        endpoint
	model     string
	threshold float64
}

var _ Classifier = (*Moderation)(nil)

// NewModeration returns a Moderation classifier. It fails when BaseURL is not
// an absolute http(s) URL (or already ends in /moderations) or Threshold is
// outside [0, 1].
func NewModeration(cfg ModerationConfig) (*Moderation, error) {
	ep, err := newEndpoint(ClassifierModeration, cfg.BaseURL, "/moderations", cfg.APIKey, cfg.Client)
	if err != nil {
		return nil, err
	}
	th := cfg.Threshold
	if math.IsNaN(th) || th < 0 || th > 1 {
		return nil, fmt.Errorf("guard: moderation: threshold %v is not in (0, 1] (0 means the default, 0.5)", th)
	}
	if th == 0 {
		th = DefaultThreshold
	}
	return &Moderation{ep: ep, model: cfg.Model, threshold: th}, nil
}

type moderationRequest struct {
	Model string `json:"model,omitempty"`
	Input any    `json:"input"`
}

type moderationPart struct {
	Type     string         `json:"type"`
	Text     string         `json:"text,omitempty"`
	ImageURL *moderationURL `json:"image_url,omitempty"`
}

type moderationURL struct {
	URL string `json:"url"`
}

type moderationAnswer struct {
	Results []struct {
		Flagged        bool               `json:"flagged"`
		Categories     map[string]bool    `json:"categories"`
		CategoryScores map[string]float64 `json:"category_scores"`
	} `json:"results"`
}

// Classify asks the endpoint about in.
func (m *Moderation) Classify(ctx context.Context, in Input) (Verdict, error) {
	if in.empty() {
		return Verdict{}, nil
	}
	req := moderationRequest{Model: m.model}
	texts := slices.DeleteFunc(slices.Clone(in.Texts), func(s string) bool { return s == "" })
	if len(in.Images) == 0 {
		req.Input = texts
	} else {
		parts := make([]moderationPart, 0, len(texts)+len(in.Images))
		for _, t := range texts {
			parts = append(parts, moderationPart{Type: "text", Text: t})
		}
		for _, u := range in.Images {
			parts = append(parts, moderationPart{Type: "image_url", ImageURL: &moderationURL{URL: u}})
		}
		req.Input = parts
	}
	var ans moderationAnswer
	if err := m.ep.post(ctx, req, &ans); err != nil {
		return Verdict{}, err
	}
	if len(ans.Results) == 0 {
		return Verdict{}, fmt.Errorf("guard: moderation: %w: no results", ErrMalformed)
	}
	flagged := map[string]Category{}
	flag := func(native string, score float64) {
		c := Category{Name: canonicalName(native), Score: min(max(score, 0), 1), Native: native, Classifier: ClassifierModeration}
		if old, ok := flagged[c.Name]; !ok || c.Score > old.Score {
			flagged[c.Name] = c
		}
	}
	for _, r := range ans.Results {
		hit := false
		for native, on := range r.Categories {
			score, scored := r.CategoryScores[native]
			if on && !scored {
				score = 1
			}
			if on || score >= m.threshold {
				flag(native, score)
				hit = true
			}
		}
		for native, score := range r.CategoryScores {
			if _, listed := r.Categories[native]; !listed && score >= m.threshold {
				flag(native, score)
				hit = true
			}
		}
		if r.Flagged && !hit {
			flag("flagged", 1)
		}
	}
	var v Verdict
	for _, c := range flagged {
		v.Categories = append(v.Categories, c)
	}
	slices.SortFunc(v.Categories, func(a, b Category) int { return strings.Compare(a.Name, b.Name) })
	return v, nil
}
