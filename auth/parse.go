package auth

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
)

// ParseError is a problem in a token file, with the line it is on.
type ParseError struct {
	// File is the path given to LoadFile; empty for ParseCatalog.
	File string
	// Line is the 1-based line of the offending JSON value or member.
	Line int
	// Msg says what is wrong, naming the JSON path (tokens[2].role).
	Msg string
}

// Error returns "file:line: msg", or "line N: msg" without a file.
func (e *ParseError) Error() string {
	if e.File == "" {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// LoadFile reads and parses the token file at path (see ParseCatalog). A parse
// error is a *ParseError whose File is path; a read error is returned as is.
func LoadFile(path string) (*Catalog, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := ParseCatalog(data)
	if pe, ok := errors.AsType[*ParseError](err); ok {
		pe.File = path
	}
	return c, err
}

// ParseCatalog parses a token file (docs/contract.md#3-token-catalog-file, plus quotas):
//
//	{
//	  "tenants": [{"id": "acme", "models": ["lm-4-scout"],
//	               "settings": {"c1_cloud_doc_consent": true, "content_guard": "block",
//	                            "coding_agent_repos": ["https://github.com/acme/app"]},
//	               "config_caps": {"image_gen_rate_per_hour": 500},
//	               "quotas": {"lm-4-scout-cloudB": {"tokens_per_day": 100000, "requests_per_day": 500}}}],
//	  "tokens": [{"token": "plain-secret", "tenant": "acme", "role": "tenant_admin"},
//	             {"sha256": "<64 hex digits>", "tenant": "acme", "role": "member",
//	              "scopes": ["tenant_config:read"], "deny": ["chat:write"],
//	              "rate": {"per_second": 5, "burst": 50}}]
//	}
//
// Only id (tenants) and tenant plus exactly one of token and sha256 (tokens) are
// required; a null member counts as absent. models absent allows every alias,
// models [] allows none. role defaults to member.
//
// Parsing is strict, and every problem is a *ParseError naming the line: invalid
// JSON, unknown or repeated members, wrong types, an empty or repeated tenant id,
// a token bound to an unknown tenant, a token with both or neither of token and
// sha256, sha256 not 64 hex digits, two tokens with the same digest, an unknown
// role, a scope not of the form resource:action[:qualifier], a rate without
// per_second > 0 and burst >= 1, an unknown content_guard (want audit or block),
// a config_caps key that is not a capped tenant config key or a cap below 1, a
// negative quota. Plain tokens are hashed at once and not kept.
func ParseCatalog(data []byte) (*Catalog, error) {
	p := &parser{data: data}
	root, err := p.document()
	if err != nil {
		return nil, err
	}
	fields, err := p.object(root, "file")
	if err != nil {
		return nil, err
	}
	var tenants, tokens *jfield
	for i := range fields {
		switch f := &fields[i]; f.name {
		case "tenants":
			tenants = f
		case "tokens":
			tokens = f
		default:
			return nil, p.errAt(f.keyOff, "unknown field %q at top level (want tenants, tokens)", f.name)
		}
	}
	c := &Catalog{tokens: map[Digest]*Principal{}, tenants: map[string]*Tenant{}}
	if tenants != nil {
		elems, err := p.array(tenants.v, "tenants")
		if err != nil {
			return nil, err
		}
		idLine := map[string]int{}
		for i, e := range elems {
			t, idOff, err := p.tenant(e, fmt.Sprintf("tenants[%d]", i))
			if err != nil {
				return nil, err
			}
			if first, dup := idLine[t.ID]; dup {
				return nil, p.errAt(idOff, "tenants[%d].id: duplicate tenant id %q (first at line %d)", i, t.ID, first)
			}
			idLine[t.ID] = p.line(idOff)
			c.tenants[t.ID] = t
			c.order = append(c.order, t)
		}
	}
	if tokens != nil {
		elems, err := p.array(tokens.v, "tokens")
		if err != nil {
			return nil, err
		}
		digestLine := map[Digest]int{}
		for i, e := range elems {
			path := fmt.Sprintf("tokens[%d]", i)
			pr, err := p.token(e, path, c.tenants)
			if err != nil {
				return nil, err
			}
			if first, dup := digestLine[pr.Digest]; dup {
				return nil, p.errAt(e.off, "%s: duplicate token (same digest as the token at line %d)", path, first)
			}
			digestLine[pr.Digest] = p.line(e.off)
			c.tokens[pr.Digest] = pr
		}
	}
	return c, nil
}

// tenant parses one element of tenants. It returns the offset of its id for
// duplicate reporting.
func (p *parser) tenant(v jval, path string) (*Tenant, int, error) {
	fields, err := p.object(v, path)
	if err != nil {
		return nil, 0, err
	}
	t := &Tenant{}
	idOff := -1
	for _, f := range fields {
		fp := path + "." + f.name
		switch f.name {
		case "id":
			if t.ID, err = p.str(f.v, fp); err == nil && t.ID == "" {
				err = p.errAt(f.v.off, "%s: empty tenant id", fp)
			}
			idOff = f.keyOff
		case "models":
			var offs []int
			if t.Models, offs, err = p.strs(f.v, fp); err == nil {
				for i, m := range t.Models {
					if m == "" {
						err = p.errAt(offs[i], "%s[%d]: empty alias", fp, i)
						break
					}
				}
			}
		case "settings":
			err = p.settings(f.v, fp, &t.Settings)
		case "config_caps":
			t.ConfigCaps, err = p.configCaps(f.v, fp)
		case "quotas":
			t.Quotas, err = p.quotas(f.v, fp)
		default:
			err = p.errAt(f.keyOff, "%s: unknown field %q (want id, models, settings, config_caps, quotas)", path, f.name)
		}
		if err != nil {
			return nil, 0, err
		}
	}
	if idOff < 0 {
		return nil, 0, p.errAt(v.off, "%s: missing field \"id\"", path)
	}
	return t, idOff, nil
}

func (p *parser) settings(v jval, path string, s *Settings) error {
	fields, err := p.object(v, path)
	if err != nil {
		return err
	}
	for _, f := range fields {
		fp := path + "." + f.name
		switch f.name {
		case "c1_cloud_doc_consent":
			s.CloudDocConsent, err = p.boolean(f.v, fp)
		case "content_guard":
			if s.ContentGuard, err = p.str(f.v, fp); err == nil {
				if cerr := checkContentGuard(s.ContentGuard); cerr != nil {
					err = p.errAt(f.v.off, "%s: %v", path, cerr)
				}
			}
		case "coding_agent_repos":
			s.CodingAgentRepos, _, err = p.strs(f.v, fp)
		default:
			err = p.errAt(f.keyOff, "%s: unknown field %q (want c1_cloud_doc_consent, content_guard, coding_agent_repos)", path, f.name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (p *parser) configCaps(v jval, path string) (map[string]int, error) {
	fields, err := p.object(v, path)
	if err != nil {
		return nil, err
	}
	caps := make(map[string]int, len(fields))
	for _, f := range fields {
		n, err := p.integer(f.v, path+"."+f.name)
		if err != nil {
			return nil, err
		}
		if err := checkCap(f.name, n); err != nil {
			return nil, p.errAt(f.keyOff, "%s: %v", path, err)
		}
		if n > 1<<31-1 {
			return nil, p.errAt(f.v.off, "%s.%s: cap too large", path, f.name)
		}
		caps[f.name] = int(n)
	}
	return caps, nil
}

func (p *parser) quotas(v jval, path string) (map[string]Quota, error) {
	fields, err := p.object(v, path)
	if err != nil {
		return nil, err
	}
	qs := make(map[string]Quota, len(fields))
	for _, f := range fields {
		ap := fmt.Sprintf("%s[%q]", path, f.name)
		if f.name == "" {
			return nil, p.errAt(f.keyOff, "%s: empty alias", path)
		}
		members, err := p.object(f.v, ap)
		if err != nil {
			return nil, err
		}
		var q Quota
		for _, m := range members {
			var dst *int64
			switch m.name {
			case "tokens_per_day":
				dst = &q.TokensPerDay
			case "requests_per_day":
				dst = &q.RequestsPerDay
			default:
				return nil, p.errAt(m.keyOff, "%s: unknown field %q (want tokens_per_day, requests_per_day)", ap, m.name)
			}
			if *dst, err = p.integer(m.v, ap+"."+m.name); err != nil {
				return nil, err
			}
			if *dst < 0 {
				return nil, p.errAt(m.v.off, "%s.%s: negative budget (0 is unlimited)", ap, m.name)
			}
		}
		qs[f.name] = q
	}
	return qs, nil
}

// token parses one element of tokens into a Principal bound to one of tenants.
func (p *parser) token(v jval, path string, tenants map[string]*Tenant) (*Principal, error) {
	fields, err := p.object(v, path)
	if err != nil {
		return nil, err
	}
	pr := &Principal{Role: RoleMember}
	var haveToken, haveSHA, haveTenant bool
	for _, f := range fields {
		fp := path + "." + f.name
		switch f.name {
		case "token":
			var tok string
			if tok, err = p.str(f.v, fp); err == nil {
				if cerr := checkToken(tok); cerr != nil {
					err = p.errAt(f.v.off, "%s: %v", fp, cerr)
				}
			}
			pr.Digest, haveToken = DigestOf(tok), true
		case "sha256":
			var h string
			if h, err = p.str(f.v, fp); err == nil {
				if len(h) != hex.EncodedLen(len(pr.Digest)) {
					err = p.errAt(f.v.off, "%s: want the 64 hex digits of the token's SHA-256", fp)
				} else if _, herr := hex.Decode(pr.Digest[:], []byte(h)); herr != nil {
					err = p.errAt(f.v.off, "%s: want the 64 hex digits of the token's SHA-256", fp)
				}
			}
			haveSHA = true
		case "tenant":
			var id string
			if id, err = p.str(f.v, fp); err == nil {
				t, ok := tenants[id]
				if !ok {
					err = p.errAt(f.v.off, "%s: token bound to unknown tenant %q", path, id)
				}
				pr.Tenant = t
			}
			haveTenant = true
		case "role":
			if pr.Role, err = p.str(f.v, fp); err == nil {
				if cerr := checkRole(pr.Role); cerr != nil {
					err = p.errAt(f.v.off, "%s: %v", fp, cerr)
				}
			}
		case "scopes":
			pr.Scopes, err = p.scopes(f.v, fp)
		case "deny":
			pr.Deny, err = p.scopes(f.v, fp)
		case "rate":
			pr.Rate, err = p.rate(f.v, fp)
		default:
			err = p.errAt(f.keyOff, "%s: unknown field %q (want token, sha256, tenant, role, scopes, deny, rate)", path, f.name)
		}
		if err != nil {
			return nil, err
		}
	}
	switch {
	case haveToken && haveSHA:
		return nil, p.errAt(v.off, "%s: both \"token\" and \"sha256\" given; give exactly one", path)
	case !haveToken && !haveSHA:
		return nil, p.errAt(v.off, "%s: neither \"token\" nor \"sha256\" given; give exactly one", path)
	case !haveTenant:
		return nil, p.errAt(v.off, "%s: missing field \"tenant\"", path)
	}
	pr.TokenID = hex.EncodeToString(pr.Digest[:6])
	return pr, nil
}

func (p *parser) scopes(v jval, path string) ([]string, error) {
	ss, offs, err := p.strs(v, path)
	if err != nil {
		return nil, err
	}
	for i, s := range ss {
		if err := checkScope(s); err != nil {
			return nil, p.errAt(offs[i], "%s[%d]: %v", path, i, err)
		}
	}
	return ss, nil
}

func (p *parser) rate(v jval, path string) (*Rate, error) {
	fields, err := p.object(v, path)
	if err != nil {
		return nil, err
	}
	r := &Rate{}
	var havePS, haveBurst bool
	for _, f := range fields {
		fp := path + "." + f.name
		switch f.name {
		case "per_second":
			if err = p.number(f.v, fp, &r.PerSecond); err == nil && !(r.PerSecond > 0) {
				err = p.errAt(f.v.off, "%s: want a number > 0", fp)
			}
			havePS = true
		case "burst":
			var n int64
			if n, err = p.integer(f.v, fp); err == nil && (n < 1 || n > 1<<31-1) {
				err = p.errAt(f.v.off, "%s: want an integer >= 1", fp)
			}
			r.Burst, haveBurst = int(n), true
		default:
			err = p.errAt(f.keyOff, "%s: unknown field %q (want per_second, burst)", path, f.name)
		}
		if err != nil {
			return nil, err
		}
	}
	if !havePS || !haveBurst {
		return nil, p.errAt(v.off, "%s: want both per_second and burst", path)
	}
	return r, nil
}
