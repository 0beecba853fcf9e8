package guard

import (
	"context"
	"slices"
	"strings"
)

// Classifier classifies the content of one request. Implementations are safe
// for concurrent use.
//
// Classify returns the categories in flags; a Verdict without categories is
// clean. It returns an error when it could not classify (an endpoint that did
// not answer, answered non-2xx or malformed, ctx done); the error never holds
// the content of in. On error the Verdict may still list what was flagged
// before the failure (see Chain); the caller's fail-open or fail-closed policy
// decides what an error means for the request.
type Classifier interface {
	Classify(ctx context.Context, in Input) (Verdict, error)
}

// Input is what is classified of one request: on /v1 the text of every user
// message and of document attachments, on /c1 and agent chat the new message
// and its attachments. Classifiers read it and never change it.
type Input struct {
	// Texts are the texts to classify, each on its own: a rule matches within
	// one text, never across two. Empty texts are skipped.
	Texts []string
	// Images are the URLs (https: or data:) of image parts. Only Moderation
	// sends them (as image_url parts, which OpenAI's omni moderation models
	// classify); Rules and LlamaGuard ignore them.
	Images []string
}

// empty reports whether in has nothing to classify.
func (in Input) empty() bool {
	if len(in.Images) > 0 {
		return false
	}
	for _, t := range in.Texts {
		if t != "" {
			return false
		}
	}
	return true
}

// Verdict is a classifier's answer: the categories it flags, none when the
// input is clean.
type Verdict struct {
	// Categories lists every flagged category, in an order fixed by the
	// classifier (Chain: classifier by classifier, in chain order). Two
	// classifiers flagging the same category give two entries.
	Categories []Category
}

// Category is one flagged category.
type Category struct {
	// Name is the canonical name: OpenAI's moderation name where one fits
	// (the Category* constants), else a stable lowercase name of the
	// classifier's (privacy, elections, ...; for Rules the rule file's
	// category, lowercased). It never contains a comma.
	Name string
	// Score is the classifier's confidence in 0..1: 1 for Rules and
	// LlamaGuard, the category score for Moderation.
	Score float64
	// Native is the classifier's own code: the rule file's category as
	// written, the moderation answer's key, the Llama Guard S-code (S10).
	Native string
	// Classifier names the classifier that flagged it: ClassifierRules,
	// ClassifierModeration or ClassifierLlamaGuard (or an embedder's own).
	Classifier string
}

// The names of the classifiers that ship with the gateway, as Category.Classifier
// and gatewayd's configuration (docs/contract.md#91-content-guard-configuration) call them.
const (
	ClassifierRules      = "rules"
	ClassifierModeration = "moderation"
	ClassifierLlamaGuard = "llama_guard"
)

// The canonical category names: OpenAI's moderation categories. Categories
// with no OpenAI equivalent keep a stable lowercase name of their own.
const (
	CategoryHarassment            = "harassment"
	CategoryHarassmentThreatening = "harassment/threatening"
	CategoryHate                  = "hate"
	CategoryHateThreatening       = "hate/threatening"
	CategoryIllicit               = "illicit"
	CategoryIllicitViolent        = "illicit/violent"
	CategorySelfHarm              = "self-harm"
	CategorySelfHarmIntent        = "self-harm/intent"
	CategorySelfHarmInstructions  = "self-harm/instructions"
	CategorySexual                = "sexual"
	CategorySexualMinors          = "sexual/minors"
	CategoryViolence              = "violence"
	CategoryViolenceGraphic       = "violence/graphic"
)

// Flagged reports whether any category is flagged.
func (v Verdict) Flagged() bool { return len(v.Categories) > 0 }

// Param returns the flagged category names sorted, without duplicates, joined
// by commas without spaces: the param of the 422 content_blocked answer
// ("hate,violence"). It is "" for a clean verdict.
func (v Verdict) Param() string {
	names := make([]string, len(v.Categories))
	for i, c := range v.Categories {
		names[i] = c.Name
	}
	slices.Sort(names)
	return strings.Join(slices.Compact(names), ",")
}

// clone returns a copy of v that shares no memory with it.
func (v Verdict) clone() Verdict {
	return Verdict{Categories: slices.Clone(v.Categories)}
}

// canonicalName returns a classifier's own category name as a Category.Name:
// trimmed, lowercased, with commas (which would split Param) replaced by '_'.
func canonicalName(s string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), ",", "_")
}
