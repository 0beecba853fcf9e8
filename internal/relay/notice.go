package relay

import (
	"github.com/chatgw/gateway/upstream"
)

// Notice is a note about how a successful (HTTP 200) answer came about; notices
// "are not errors".
type Notice struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Notice codes: every code the contract gives GW-Notice and gw.notice events.
const (
	NoticeToolLoopCapped   = "tool_loop_capped"
	NoticeToolCallStripped = "tool_call_stripped"
	NoticeSafetyFallback   = "safety_fallback"
	NoticeHistoryTrimmed   = "history_trimmed"
	NoticeBackendFallback  = "backend_fallback"
)

// BackendFallback returns the backend_fallback notice for an answer that came
// from a later backend of the chain. Its message names the backend alias and
// provider that answered (both public in /v1/info), never a URL or a key.
func BackendFallback(resp *upstream.Response) Notice {
	msg := "The answer came from a fallback backend"
	if resp.RouterAlias != "" {
		msg += " (" + resp.RouterAlias
		if resp.Provider != "" {
			msg += " on " + resp.Provider
		}
		msg += ")"
	}
	return Notice{Code: NoticeBackendFallback, Message: msg + "."}
}
