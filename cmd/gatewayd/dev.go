package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/chatgw/gateway/auth"
)

// devTokenFile is the file in the data dir that keeps the -dev token, so
// that a restart on the same data keeps the token the browser and the
// shell already hold.
const devTokenFile = "dev-token"

// devRate is the dev token's rate limit at least: someone exploring the
// playground and the API must not be throttled by the production default
// (1 a second, bursts of 30).
var devRate = auth.Rate{PerSecond: 20, Burst: 200}

// devCatalog is the token catalog of -dev without a token file: one
// tenant-admin token for tenant "dev", the -dev-token flag's or the one kept
// in the data dir (made on first use, readable by its owner only). It prints
// the token once, alone on an indented line.
func devCatalog(cfg *config, stderr io.Writer) (*auth.Catalog, error) {
	token, stored, err := devToken(cfg)
	if err != nil {
		return nil, err
	}
	rate := auth.Rate{PerSecond: max(cfg.RatePerSecond, devRate.PerSecond), Burst: max(cfg.RateBurst, devRate.Burst)}
	cat, err := auth.NewStatic([]*auth.Tenant{{ID: "dev"}},
		map[string]auth.StaticToken{token: {Tenant: "dev", Role: auth.RoleTenantAdmin, Rate: &rate}})
	if err != nil {
		return nil, fmt.Errorf("-dev-token: %w", err)
	}
	where := "given with -dev-token"
	if stored != "" {
		where = "kept in " + stored
	}
	fmt.Fprintf(stderr, "dev mode: tenant-admin token for tenant \"dev\" (%s):\n  %s\n", where, token)
	return cat, nil
}

// devToken returns the -dev-token flag's token, or the one kept in the data
// dir with the path of its file, which it makes when there is none.
func devToken(cfg *config) (token, path string, err error) {
	if cfg.DevToken != "" {
		return cfg.DevToken, "", nil
	}
	path = filepath.Join(cfg.DataDir, devTokenFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		if token = strings.TrimSpace(string(b)); token == "" {
			return "", "", fmt.Errorf("dev token file %s is empty: delete it to make a new token", path)
		}
		return token, path, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", "", fmt.Errorf("dev token: %w", err)
	}
	b = make([]byte, 24)
	rand.Read(b)
	token = "dev-" + hex.EncodeToString(b)
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return "", "", fmt.Errorf("dev token: %w", err)
	}
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		return "", "", fmt.Errorf("dev token: %w", err)
	}
	return token, path, nil
}

// printTryIt prints, in -dev, what to paste into a shell to use the gateway
// at base with the dev token: the token itself is not printed again (it is
// shown once), the shell reads it from its file.
func printTryIt(w io.Writer, cfg *config, base string) {
	key := `"$(cat ` + shellQuote(filepath.Join(cfg.DataDir, devTokenFile)) + `)"`
	if cfg.DevToken != "" {
		key = "<your -dev-token>"
	}
	fmt.Fprintf(w, "Try it:\n  export OPENAI_BASE_URL=%s/v1 OPENAI_API_KEY=%s\n", base, key)
	fmt.Fprintf(w, "  curl -s \"$OPENAI_BASE_URL/chat/completions\" -H \"Authorization: Bearer $OPENAI_API_KEY\" "+
		"-H 'Content-Type: application/json' -d '{\"model\":\"lm-4-scout\",\"messages\":[{\"role\":\"user\",\"content\":\"Hello\"}]}'\n")
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
