package preflight

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/guard"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/internal/metrics"
	"github.com/chatgw/gateway/internal/redact"
)

// The tenant's content_guard modes that classify ("off", or "", does not).
const (
	GuardAudit = "audit"
	GuardBlock = "block"
)

// Guard is the content guard of one request (check 11 of the package doc).
// A nil *Guard classifies nothing: the requests the gateway makes for itself
// (an agent's compaction) carry none.
type Guard struct {
	// Classifier classifies the request. Nil means the gateway has none:
	// "A tenant with content_guard set and no classifier configured is a
	// start-up error" for gatewayd, but an embedder's token catalog may still
	// name one, so a block tenant then fails closed and an audit tenant is let
	// through, as when the classifier cannot answer.
	Classifier guard.Classifier
	// NewOnly classifies only the last message, the new turn of a stored
	// conversation or session: "stored history was classified when it was
	// written". Otherwise the text of every user message is classified.
	NewOnly bool
	// User is the caller's GW-User-Id, or "", for the log line.
	User string
}

// guardRequest is the classification of one request in flight.
type guardRequest struct {
	g    *Guard
	mode string
	in   guard.Input
}

// newGuard returns the classification of res for tenant t, or nil when
// nothing is to be classified: no Guard, the tenant's guard is off, or the
// request has no user text or image.
func newGuard(g *Guard, t *auth.Tenant, res *Result) (*guardRequest, error) {
	if g == nil || t == nil || (t.Settings.ContentGuard != GuardAudit && t.Settings.ContentGuard != GuardBlock) {
		return nil, nil
	}
	msgs, err := res.Messages()
	if err != nil {
		return nil, errcat.Internal(err)
	}
	in := guardInput(msgs, g.NewOnly)
	if len(in.Texts) == 0 && len(in.Images) == 0 {
		return nil, nil
	}
	return &guardRequest{g: g, mode: t.Settings.ContentGuard, in: in}, nil
}

// block classifies a block tenant's request before anything is forwarded:
// content_blocked when flagged, upstream_unavailable when the classifier
// cannot answer ("A block tenant whose guard cannot answer gets 503
// upstream_unavailable"). A flagged partial verdict of a chain is conclusive
// ("flagged by any is flagged"), so it blocks even beside a failure.
func (gr *guardRequest) block(ctx context.Context) error {
	v, err := gr.classify(ctx)
	switch {
	case v.Flagged():
		gr.logFlagged(ctx, v)
		gr.count(ctx, metrics.GuardFlagged)
		return errcat.New(errcat.ContentBlocked, v.Param(),
			"The tenant's content guard flagged the input ("+v.Param()+"); it was not sent to the model.")
	case err != nil:
		gr.logFailed(ctx, err)
		gr.count(ctx, metrics.GuardFailed)
		return &errcat.Error{Code: errcat.UpstreamUnavailable, Cause: err,
			Message: "The content guard could not classify the request, so it was not sent to the model; retry later."}
	}
	gr.count(ctx, metrics.GuardAllowed)
	return nil
}

// audit classifies an audit tenant's request alongside the upstream call, so
// that it adds no latency, and logs what it flags; a failure lets the
// request through ("an audit tenant is let through") and is logged. The
// classification outlives the request (its own deadline bounds it: the
// gateway wraps the classifier in guard.WithTimeout), so that a client that
// hangs up early is still audited.
func (gr *guardRequest) audit(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	go func() {
		v, err := gr.classify(ctx)
		if v.Flagged() {
			gr.logFlagged(ctx, v)
		}
		if err != nil {
			gr.logFailed(ctx, err)
		}
		switch {
		case v.Flagged():
			gr.count(ctx, metrics.GuardFlagged)
		case err != nil:
			gr.count(ctx, metrics.GuardFailed)
		default:
			gr.count(ctx, metrics.GuardAllowed)
		}
	}()
}

// count counts the decision in the gateway's metrics: a flagged verdict wins
// over a failure, as it does for the answer.
func (gr *guardRequest) count(ctx context.Context, decision string) {
	info := httpx.InfoFrom(ctx)
	info.Metrics.GuardDecision(info.Tenant, gr.mode, decision)
}

// classify asks the classifier; without one it fails like an unreachable one.
func (gr *guardRequest) classify(ctx context.Context) (guard.Verdict, error) {
	if gr.g.Classifier == nil {
		return guard.Verdict{}, errNoClassifier
	}
	return gr.g.Classifier.Classify(ctx, gr.in)
}

var errNoClassifier = errors.New("preflight: no content guard classifier is configured")

// logFlagged writes the one line of a flagged request: who, where, the
// categories, the classifiers and their scores, never the content.
func (gr *guardRequest) logFlagged(ctx context.Context, v guard.Verdict) {
	info := httpx.InfoFrom(ctx)
	// One score per category, the highest, in name order: two classifiers
	// that flag the same category must not repeat a key of the line.
	cats := slices.Clone(v.Categories)
	slices.SortFunc(cats, func(a, b guard.Category) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), cmp.Compare(b.Score, a.Score))
	})
	cats = slices.CompactFunc(cats, func(a, b guard.Category) bool { return a.Name == b.Name })
	scores := make([]any, len(cats))
	for i, c := range cats {
		scores[i] = slog.Float64(c.Name, c.Score)
	}
	classifiers := make([]string, len(v.Categories))
	for i, c := range v.Categories {
		classifiers[i] = c.Classifier
	}
	slices.Sort(classifiers)
	info.Logger.LogAttrs(ctx, slog.LevelWarn, "content guard flagged the request",
		slog.String("mode", gr.mode),
		slog.String("tenant", info.Tenant),
		slog.String("user", gr.g.User),
		slog.String("route", info.Route),
		slog.String("categories", v.Param()),
		slog.String("classifier", strings.Join(slices.Compact(classifiers), ",")),
		slog.Group("scores", scores...))
}

// logFailed logs a classification that had no verdict.
func (gr *guardRequest) logFailed(ctx context.Context, err error) {
	info := httpx.InfoFrom(ctx)
	outcome := "let through"
	if gr.mode == GuardBlock {
		outcome = "refused"
	}
	info.Logger.LogAttrs(ctx, slog.LevelError, "content guard could not classify the request: "+outcome,
		slog.String("mode", gr.mode),
		slog.String("tenant", info.Tenant),
		slog.String("user", gr.g.User),
		slog.String("route", info.Route),
		slog.String("error", redact.Error(err)))
}

// guardInput returns what is classified of msgs, the messages of a checked
// body: the texts and image URLs of every user message, or of the last
// message only when newOnly. Document attachments are text parts of the last
// user message by then, so they are classified with it, each part a text of
// its own.
func guardInput(msgs []json.RawMessage, newOnly bool) guard.Input {
	if newOnly {
		msgs = msgs[len(msgs)-1:]
	}
	var in guard.Input
	for _, raw := range msgs {
		var m struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(raw, &m) != nil || (m.Role != "user" && !newOnly) {
			continue
		}
		addContent(&in, m.Content)
	}
	return in
}

// addContent appends the texts and image URLs of a message's content: a
// string, or content parts of type text and image_url.
func addContent(in *guard.Input, content json.RawMessage) {
	var s string
	if json.Unmarshal(content, &s) == nil {
		if s != "" {
			in.Texts = append(in.Texts, s)
		}
		return
	}
	// Part by part: one part of an unexpected shape must not hide the others.
	var parts []json.RawMessage
	if json.Unmarshal(content, &parts) != nil {
		return
	}
	for _, raw := range parts {
		var p struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			ImageURL struct {
				URL string `json:"url"`
			} `json:"image_url"`
		}
		_ = json.Unmarshal(raw, &p) // what did not decode stays empty
		switch {
		case p.Type == "text" && p.Text != "":
			in.Texts = append(in.Texts, p.Text)
		case p.Type == "image_url" && p.ImageURL.URL != "":
			in.Images = append(in.Images, p.ImageURL.URL)
		}
	}
}
