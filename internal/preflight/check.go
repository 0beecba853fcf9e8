package preflight

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/jsonscan"
	"github.com/chatgw/gateway/internal/wire"
	"github.com/chatgw/gateway/upstream"
)

// Params as the Codes table names them (docs/contract.md#codes), the same on /v1 and /c1.
const (
	paramModel         = "model"
	paramMaxTokens     = "max_tokens"
	paramMessages      = "messages"
	paramImageURL      = "messages[].content[].image_url"
	paramImageURLURL   = "messages[].content[].image_url.url"
	paramToolArguments = "messages[].tool_calls[].function.arguments"
)

// Check runs the pre-flight checks of a chat-completions request in the order
// of the package doc and returns the body to forward. Errors are *errcat.Error
// values to send as they are, or what Request.System returned.
func Check(ctx context.Context, req *Request) (*Result, error) {
	r, err := parseRequired(req)
	if err != nil {
		return nil, err
	}
	m, alias, err := lookupModel(req, r.member(r.model))
	if err != nil {
		return nil, err
	}
	res := &Result{Model: m}
	limits, err := r.readFields(res)
	if err != nil {
		return nil, err
	}
	floors, err := limits.floor(m, res)
	if err != nil {
		return nil, err
	}
	if err := r.checkContent(m); err != nil {
		return nil, err
	}
	system := ""
	if req.System != nil {
		if system, err = req.System(ctx); err != nil {
			return nil, err
		}
	}
	if err := r.checkWindow(res, system, limits, alias); err != nil {
		return nil, err
	}
	res.Body = r.build(alias, system, floors)
	// The guard before consent, whose ;persist grants are stored: a blocked
	// request stores nothing. An audit starts last, once the request passed.
	gr, err := newGuard(req.Guard, req.Tenant, res)
	if err != nil {
		return nil, err
	}
	if gr != nil && gr.mode == GuardBlock {
		if err := gr.block(ctx); err != nil {
			return nil, err
		}
	}
	if err := checkConsent(ctx, req, m, res.Documents); err != nil {
		return nil, err
	}
	if gr != nil && gr.mode == GuardAudit {
		gr.audit(ctx)
	}
	return res, nil
}

// Count runs the checks of a request that are about the request itself (1
// to 8 of the package doc: its shape, model, fields and images), calls
// Request.System (9), and returns the prompt's context-window estimate with
// the injected text, as Result.PromptTokens would be. It leaves out what is
// about sending the request (the context window, the content guard, cloud
// consent), so that a client may count a prompt too large to send:
// POST /v1/messages/count_tokens answers it.
func Count(ctx context.Context, req *Request) (int, error) {
	r, err := parseRequired(req)
	if err != nil {
		return 0, err
	}
	m, _, err := lookupModel(req, r.member(r.model))
	if err != nil {
		return 0, err
	}
	res := &Result{Model: m}
	limits, err := r.readFields(res)
	if err != nil {
		return 0, err
	}
	if _, err := limits.floor(m, res); err != nil {
		return 0, err
	}
	if err := r.checkContent(m); err != nil {
		return 0, err
	}
	system := ""
	if req.System != nil {
		if system, err = req.System(ctx); err != nil {
			return 0, err
		}
	}
	return r.estimate(system), nil
}

// CheckBuilt is Check for a request the gateway built itself from what its
// client sent (a /c1 turn, an agent's chat or compaction): it marshals built
// into req.Body and, as the client's fields sit in the client's JSON body,
// sets req.ParamPrefix to "body.". A request that does not marshal (a
// verbatim member or message that is not JSON) is internal_error: the
// gateway built it.
func CheckBuilt(ctx context.Context, built *wire.Request, req *Request) (*Result, error) {
	body, err := built.Marshal()
	if err != nil {
		return nil, errcat.Internal(fmt.Errorf("preflight: built request: %w", err))
	}
	req.Body, req.ParamPrefix = body, "body."
	res, err := Check(ctx, req)
	if errcat.CodeOf(err) == errcat.InvalidJSON {
		// Marshal copies the messages unchecked: one of them is not JSON.
		return nil, errcat.Internal(fmt.Errorf("preflight: built request: %w", err))
	}
	return res, err
}

// parseRequired parses the body and checks the members every request needs.
func parseRequired(req *Request) (*request, error) {
	p := req.ParamPrefix
	r, err := parse(req.Body, p)
	switch {
	case err != nil:
		return nil, &errcat.Error{Code: errcat.InvalidJSON, Message: "The request body must be one JSON object.", Cause: err}
	case r.messages < 0:
		return nil, errcat.New(errcat.MissingField, p+"messages", "messages is required.")
	case r.model < 0:
		return nil, errcat.New(errcat.MissingField, p+"model", "model is required.")
	case r.msgsBad:
		return nil, errcat.New(errcat.InvalidField, p+"messages",
			"messages must be a non-empty array of message objects, each with a role (system, developer, user, assistant, tool) "+
				"and a content that is a string, an array of content parts or null.")
	}
	return r, nil
}

// outputLimits are the request's max_tokens and max_completion_tokens (nil
// when absent or null).
type outputLimits struct {
	maxTokens, maxCompletion *int64
}

// readFields checks the scalar members and the attachments and records in res
// what the caller needs of them.
func (r *request) readFields(res *Result) (outputLimits, error) {
	var l outputLimits
	if err := r.checkTemperature(); err != nil {
		return l, err
	}
	if raw := r.member(r.stream); raw != nil && !bytes.Equal(raw, []byte("null")) {
		if !bytes.Equal(raw, []byte("true")) && !bytes.Equal(raw, []byte("false")) {
			return l, errcat.New(errcat.InvalidField, r.paramPrefix+"stream", "stream must be a boolean.")
		}
		res.Stream = raw[0] == 't'
	}
	if raw := r.member(r.streamOptions); raw != nil {
		res.StreamOptions = raw
	}
	var err error
	if l.maxTokens, err = r.intMember(r.maxTokens, "max_tokens"); err != nil {
		return l, err
	}
	if l.maxCompletion, err = r.intMember(r.maxCompletionTokens, "max_completion_tokens"); err != nil {
		return l, err
	}
	if r.attachBad != nil {
		return l, r.attachBad
	}
	res.Documents, err = r.checkHashes()
	return l, err
}

// floor applies the model's min_max_tokens: a value
// below 1 is max_tokens_below_minimum, a value below the minimum is raised to
// it. It returns the replacement values of max_tokens and
// max_completion_tokens (nil: unchanged) and sets res.FlooredMaxTokens and
// res.MaxOutputTokens.
func (l outputLimits) floor(m *upstream.ModelInfo, res *Result) ([2][]byte, error) {
	var floors [2][]byte
	for i, v := range [2]*int64{l.maxTokens, l.maxCompletion} {
		if v == nil {
			continue
		}
		if *v < 1 {
			return floors, errcat.Newf(errcat.MaxTokensBelowMinimum, paramMaxTokens,
				"max_tokens must be at least 1 (got %d).", *v)
		}
		if minimum := m.Constraints.MinMaxTokens; minimum != nil && *v < int64(*minimum) {
			*v = int64(*minimum)
			floors[i] = strconv.AppendInt(nil, *v, 10)
			res.FlooredMaxTokens = *minimum
		}
	}
	res.MaxOutputTokens = -1
	if l.maxTokens != nil || l.maxCompletion != nil {
		res.MaxOutputTokens = max(deref(l.maxTokens), deref(l.maxCompletion))
	}
	return floors, nil
}

// checkContent checks the messages' tool-call arguments and images.
func (r *request) checkContent(m *upstream.ModelInfo) error {
	for _, args := range r.toolArgs {
		if !validArguments(r.b, args) {
			return errcat.New(errcat.ToolCallArgumentsInvalid, paramToolArguments,
				"tool_calls[].function.arguments must be a JSON string holding valid JSON, such as \"{}\".")
		}
	}
	return r.checkImages(m)
}

// checkWindow estimates the prompt (with the injected system text) into
// res.PromptTokens and refuses a request whose prompt and output cap exceed
// the model's context window.
func (r *request) checkWindow(res *Result, system string, l outputLimits, alias string) error {
	res.PromptTokens = r.estimate(system)
	limit := max(deref(l.maxTokens), deref(l.maxCompletion))
	window := res.Model.Window() // learned from its servers, else the catalog's
	if window > 0 && int64(res.PromptTokens)+limit > int64(window) {
		return errcat.Newf(errcat.ContextWindowExceeded, paramMessages,
			"The request needs about %d tokens (a prompt estimate of %d plus max_tokens %d), more than the context window of %s (%d tokens).",
			int64(res.PromptTokens)+limit, res.PromptTokens, limit, alias, window)
	}
	return nil
}

// member returns the raw value of member idx, or nil when absent.
func (r *request) member(idx int) []byte {
	if idx < 0 {
		return nil
	}
	return r.raw(r.members[idx].val)
}

// lookupModel resolves the model member to a chat alias the tenant may use
// (model_not_in_allowlist) and that has a configured backend
// (model_not_configured).
func lookupModel(req *Request, raw []byte) (*upstream.ModelInfo, string, error) {
	if raw[0] != '"' {
		return nil, "", errcat.New(errcat.InvalidField, req.ParamPrefix+"model", "model must be a string: a model alias.")
	}
	alias := jsonscan.Unquote(raw)
	m := req.Catalog.Lookup(alias)
	if m == nil || (m.Kind != "" && m.Kind != upstream.KindChat) || !req.Tenant.AllowsModel(alias) {
		return nil, "", errcat.Newf(errcat.ModelNotInAllowlist, paramModel,
			"Model %q is not a chat model this tenant may use; GET /v1/models lists them.", alias)
	}
	// Before any quota or upstream work: a model without a configured
	// backend cannot be served, whatever the request says.
	if err := m.NotConfigured(); err != nil {
		return nil, "", err
	}
	return m, alias, nil
}

func (r *request) checkTemperature() error {
	raw := r.member(r.temperature)
	if raw == nil || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	if raw[0] == '-' || isDigit(raw[0]) {
		if t, err := strconv.ParseFloat(string(raw), 64); err == nil && t >= 0 && t <= 2 {
			return nil
		}
	}
	return errcat.New(errcat.InvalidField, r.paramPrefix+"temperature", "temperature must be a number from 0 to 2.")
}

// intMember reads an integer member; nil when absent or null.
func (r *request) intMember(idx int, name string) (*int64, error) {
	raw := r.member(idx)
	if raw == nil || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	if raw[0] == '-' || isDigit(raw[0]) {
		if f, err := strconv.ParseFloat(string(raw), 64); err == nil && f == math.Trunc(f) {
			v := int64(max(min(f, 1e12), -1e12))
			return &v, nil
		}
	}
	return nil, errcat.Newf(errcat.InvalidField, r.paramPrefix+name, "%s must be an integer.", name)
}

func deref(v *int64) int64 {
	if v == nil {
		return 0
	}
	return *v
}

// validArguments reports whether a tool call's arguments is a JSON string that
// holds valid JSON.
func validArguments(b []byte, args span) bool {
	if !args.present() || b[args.s] != '"' {
		return false
	}
	raw := b[args.s:args.e]
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') >= 0 {
		inner = []byte(jsonscan.Unquote(raw))
	}
	return jsonscan.Valid(inner)
}

// checkImages checks the content-part images, then the image attachments.
func (r *request) checkImages(m *upstream.ModelInfo) error {
	check := func(url span, decodeParam string) error {
		if !m.Modalities.ImageIn {
			return errcat.New(errcat.ModelNotVisionCapable, paramImageURL,
				"The model does not accept images (modalities.image_in is false); use a vision model.")
		}
		prob := checkImageURL(r.raw(url), m.Constraints.AcceptsImageURL)
		if prob == nil {
			return nil
		}
		param := decodeParam
		if prob.code == errcat.ImageURLNotSupported {
			param = paramImageURLURL
		}
		return errcat.New(prob.code, param, prob.msg)
	}
	for _, im := range r.images {
		if err := check(im.url, paramImageURLURL); err != nil {
			return err
		}
	}
	for n, a := range r.attach {
		if a.document {
			continue
		}
		if err := check(a.url, r.paramPrefix+"attachments["+strconv.Itoa(n)+"].url"); err != nil {
			return err
		}
	}
	return nil
}

// estimate is the prompt's token estimate (package doc).
func (r *request) estimate(system string) int {
	tokens := 0
	for _, m := range r.msgs {
		tokens += TokensPerMessage + ceilDiv(m.textBytes, BytesPerToken) + TokensPerImage*m.images
	}
	text, images := r.attachmentsSize()
	tokens += ceilDiv(text, BytesPerToken) + TokensPerImage*images
	if system != "" {
		tokens += TokensPerMessage + ceilDiv(len(system), BytesPerToken)
	}
	tools := 0
	for _, mem := range r.members {
		if string(mem.name) == "tools" || string(mem.name) == "functions" {
			tools += mem.val.len()
		}
	}
	return tokens + ceilDiv(tools, BytesPerToken)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
