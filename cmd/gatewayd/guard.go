package main

import (
	"fmt"

	"github.com/chatgw/gateway"
	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/guard"
)

// contentGuard builds the classifiers the configuration names, chained
// ("flagged by any is flagged") in a fixed order: rules, moderation,
// llama_guard. It returns nil when none is configured, and the reload of the
// rules file (nil without one).
func contentGuard(cfg *config) (gateway.Classifier, func() error, error) {
	var chain guard.Chain
	var reload func() error
	if cfg.GuardRules != "" {
		rf, err := guard.NewRulesFile(cfg.GuardRules)
		if err != nil {
			return nil, nil, fmt.Errorf("content guard rules: %w", err)
		}
		chain, reload = append(chain, rf), rf.Reload
	}
	if cfg.GuardModURL != "" {
		if th := cfg.GuardThreshold; !(th > 0 && th <= 1) {
			return nil, nil, fmt.Errorf("GATEWAY_GUARD_THRESHOLD: %v is not in (0, 1]", th)
		}
		m, err := guard.NewModeration(guard.ModerationConfig{BaseURL: cfg.GuardModURL, APIKey: cfg.GuardModAPIKey,
			Model: cfg.GuardModModel, Threshold: cfg.GuardThreshold})
		if err != nil {
			return nil, nil, fmt.Errorf("GATEWAY_GUARD_MODERATION_URL: %w", err)
		}
		chain = append(chain, m)
	}
	if cfg.GuardLlamaURL != "" {
		lg, err := guard.NewLlamaGuard(guard.LlamaGuardConfig{BaseURL: cfg.GuardLlamaURL, APIKey: cfg.GuardLlamaAPIKey,
			Model: cfg.GuardLlamaModel})
		if err != nil {
			return nil, nil, fmt.Errorf("GATEWAY_GUARD_LLAMA_GUARD_URL: %w", err)
		}
		chain = append(chain, lg)
	}
	if cfg.GuardTimeout <= 0 {
		return nil, nil, fmt.Errorf("GATEWAY_GUARD_TIMEOUT: %v is not positive", cfg.GuardTimeout)
	}
	switch len(chain) {
	case 0:
		return nil, nil, nil
	case 1:
		return chain[0], reload, nil
	}
	return chain, reload, nil
}

// guardCheck refuses a token catalog with a tenant whose content_guard is set
// when no classifier is configured: "A tenant with content_guard set and no
// classifier configured is a start-up error" (and a SIGHUP reload that would
// bring one in keeps the old catalog).
func guardCheck(c gateway.Classifier) func(*auth.Catalog) error {
	return func(cat *auth.Catalog) error {
		if c != nil {
			return nil
		}
		for _, t := range cat.Tenants() {
			if g := t.Settings.ContentGuard; g != "" && g != "off" {
				return fmt.Errorf("tenant %q has content_guard %q but no content guard classifier is configured: "+
					"set GATEWAY_GUARD_RULES, GATEWAY_GUARD_MODERATION_URL or GATEWAY_GUARD_LLAMA_GUARD_URL", t.ID, g)
			}
		}
		return nil
	}
}
