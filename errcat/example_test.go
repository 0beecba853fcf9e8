package errcat_test

import (
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/chatgw/gateway/errcat"
)

func ExampleWrite() {
	rec := httptest.NewRecorder()
	errcat.Write(rec, errcat.New(errcat.ModelNotInAllowlist, "model", "Model lm-9 is not allowed for this tenant."))
	fmt.Println(rec.Code)
	fmt.Print(rec.Body.String())
	// Output:
	// 400
	// {"error":{"type":"invalid_request_error","code":"model_not_in_allowlist","message":"Model lm-9 is not allowed for this tenant.","param":"model","doc_url":"/docs/errors#model_not_in_allowlist"},"gw_code":"model_not_in_allowlist"}
}

func ExampleWrite_rateLimit() {
	rec := httptest.NewRecorder()
	errcat.Write(rec, &errcat.Error{Code: errcat.RateLimitExceeded, RetryAfter: errcat.RetryAfterSeconds(1200 * time.Millisecond)})
	fmt.Println(rec.Code, rec.Header().Get("Retry-After"))
	fmt.Print(rec.Body.String())
	// Output:
	// 429 2
	// {"error":{"type":"rate_limit_error","code":"rate_limit_exceeded","message":"Rate limit exceeded","param":null,"doc_url":"/docs/errors#rate_limit_exceeded"},"gw_code":"rate_limit_exceeded"}
}
