package runs

import (
	"net/url"
	"strings"
	"unicode/utf8"
)

// CanonicalRepo returns the canonical form of the repository URL raw, and
// false when raw is not an http(s) repository URL. Runs store, compare and
// pass on (GW_RUN_REPO) only canonical URLs, and a tenant's allowlist
// (coding_agent_repos) is canonicalised the same way before comparing.
//
// raw is accepted when it is at most MaxRepoBytes of valid UTF-8, holds no
// space or control character, and parses as a URL with scheme http or https,
// a host, no user information, no query, no fragment and a path of at least
// one segment, none of them empty, "." or "..". The canonical form is then:
//
//  1. the whole URL in lower case (scheme, host and path; percent escapes
//     included);
//  2. without the default port (":443" for https, ":80" for http) or an empty
//     one;
//  3. without trailing "/", then without one trailing ".git", then again
//     without trailing "/".
//
// So "HTTPS://GitHub.com:443/Acme/App.git/" becomes
// "https://github.com/acme/app". http and https stay distinct.
//
// The canonical form is at most MaxRepoBytes long too, and canonicalising it
// again gives it back. Escaping makes each byte of a non-ASCII character
// three, so a URL whose canonical form would be longer than MaxRepoBytes is
// refused rather than returned in a form that would itself be refused.
func CanonicalRepo(raw string) (string, bool) {
	// Invalid UTF-8 is refused, not lower-cased: strings.ToLower replaces each
	// bad byte with U+FFFD, which escapes to nine bytes (%ef%bf%bd), so
	// different inputs became one repo and a short URL a long one.
	if raw == "" || len(raw) > MaxRepoBytes || !utf8.ValidString(raw) {
		return "", false
	}
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c <= ' ' || c == 0x7f {
			return "", false
		}
	}
	u, err := url.Parse(strings.ToLower(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Opaque != "" ||
		u.User != nil || u.Hostname() == "" || u.RawQuery != "" || u.ForceQuery ||
		u.Fragment != "" || strings.Contains(raw, "#") {
		return "", false
	}
	if strings.ContainsFunc(u.Host, notHostChar) {
		return "", false
	}
	host := strings.TrimSuffix(u.Host, ":")
	switch {
	case u.Scheme == "https" && u.Port() == "443", u.Scheme == "http" && u.Port() == "80":
		host = strings.TrimSuffix(host, ":"+u.Port())
	}
	// The escaped path is lower-cased too: a non-ASCII path comes back with
	// upper-case escapes (%C3%A4), and the canonical form must be its own
	// canonical form, or an allowlist entry would not match itself.
	path := strings.ToLower(strings.TrimRight(u.EscapedPath(), "/"))
	path = strings.TrimRight(strings.TrimSuffix(path, ".git"), "/")
	if path == "" {
		return "", false
	}
	for _, seg := range strings.Split(path[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "", false
		}
	}
	canonical := u.Scheme + "://" + host + path
	if len(canonical) > MaxRepoBytes {
		return "", false
	}
	return canonical, true
}

// notHostChar reports a character that has no place in a lower-cased host and
// port: a host is an ASCII DNS name or an IP literal (url.Parse would
// otherwise decode %-escapes in it into any bytes).
func notHostChar(c rune) bool {
	return !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.ContainsRune(".-:[]", c))
}

// allowedRepo reports whether the canonical repo is on the allowlist repos
// (entries canonicalised first; an entry that is not a repository URL
// matches nothing).
func allowedRepo(repos []string, repo string) bool {
	for _, r := range repos {
		if c, ok := CanonicalRepo(r); ok && c == repo {
			return true
		}
	}
	return false
}
