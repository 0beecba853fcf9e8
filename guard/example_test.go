package guard_test

import (
	"context"
	"fmt"

	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/guard"
)

func ExampleParseRules() {
	rules, err := guard.ParseRules([]byte(`{"categories": {
	  "violence":  {"terms": ["massacre"]},
	  "self-harm": {"patterns": ["(?i)\\bend\\s+my\\s+life\\b"]}
	}}`))
	if err != nil {
		panic(err)
	}
	v, _ := rules.Classify(context.Background(), guard.Input{Texts: []string{"ＭＡＳＳＡＣＲＥ, then END MY LIFE"}})
	fmt.Println(v.Flagged(), v.Param())

	_, err = guard.ParseRules([]byte(`{"categories": {"privacy": {"patterns": ["(\\d{3}"]}}}`))
	fmt.Println(err)
	// Output:
	// true self-harm,violence
	// guard: rules file 1:42: categories["privacy"].patterns[0]: invalid pattern: error parsing regexp: missing closing ): `(\d{3}`
}

// The classifier gatewayd builds: the configured classifiers chained, under
// one time-out, behind a verdict cache.
func ExampleChain() {
	rules, err := guard.ParseRules([]byte(`{"categories": {"violence": {"terms": ["massacre"]}}}`))
	if err != nil {
		panic(err)
	}
	moderation, err := guard.NewModeration(guard.ModerationConfig{BaseURL: "http://127.0.0.1:1/v1"})
	if err != nil {
		panic(err)
	}
	c := guard.Cached(guard.WithTimeout(guard.Chain{rules, moderation}, guard.DefaultTimeout),
		clock.Wall{}, guard.DefaultCacheTTL, guard.DefaultCacheSize)

	// Nothing listens on the moderation endpoint: the verdict of the rules
	// comes with the moderation classifier's error.
	v, err := c.Classify(context.Background(), guard.Input{Texts: []string{"a massacre"}})
	fmt.Println(v.Param(), err != nil)
	// Output: violence true
}
