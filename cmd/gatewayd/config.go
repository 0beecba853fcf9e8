package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/sethvargo/go-envconfig"
)

// config is gatewayd's configuration: each field is read from its GATEWAY_*
// variable and may be overridden by the flag of the same name in lower case with
// dashes (GATEWAY_DATA_DIR -> -data-dir).
type config struct {
	Addr             string        `env:"ADDR, default=127.0.0.1:8080" help:"listen address"`
	DataDir          string        `env:"DATA_DIR, default=./data" help:"directory of the bbolt file gateway.db"`
	StoreURL         string        `env:"STORE_URL" help:"store: postgres://... (or postgresql://) for PostgreSQL, bolt:<path> for a bbolt file (relative to the data dir); unset: gateway.db in the data dir" secret:"true"`
	TokensFile       string        `env:"TOKENS_FILE" help:"token catalog file (required unless -dev)"`
	ModelsFile       string        `env:"MODELS_FILE" help:"model catalog override (default: built-in)"`
	AgentsDir        string        `env:"AGENTS_DIR" help:"directory of agent files"`
	LocalURL         string        `env:"LOCAL_URL, default=http://127.0.0.1:11434/v1" help:"local OpenAI-compatible backend base URL; empty: unconfigured"`
	LocalAPIKey      string        `env:"LOCAL_API_KEY" help:"bearer token sent to the local backend; empty: none" secret:"true"`
	CloudAURL        string        `env:"CLOUDA_URL" help:"cloud host A base URL (ending in /v1)"`
	CloudAAPIKey     string        `env:"CLOUDA_API_KEY" help:"cloud host A API key" secret:"true"`
	CloudBURL        string        `env:"CLOUDB_URL" help:"cloud host B base URL (ending in /v1)"`
	CloudBAPIKey     string        `env:"CLOUDB_API_KEY" help:"cloud host B API key" secret:"true"`
	RouterURL        string        `env:"ROUTER_URL" help:"external OpenAI-compatible model router; every model call goes there"`
	RouterAPIKey     string        `env:"ROUTER_API_KEY" help:"bearer token sent to the router; empty: none" secret:"true"`
	RatePerSecond    float64       `env:"RATE_PER_SECOND, default=1" help:"per-token rate limit, requests per second"`
	RateBurst        int           `env:"RATE_BURST, default=30" help:"per-token rate limit burst"`
	RateFailOpen     bool          `env:"RATE_LIMIT_FAIL_OPEN, default=false" help:"let requests through without their rate limit while the store that keeps it (PostgreSQL) cannot be reached; false: 500 storage_error"`
	BodyLimitBytes   int64         `env:"BODY_LIMIT_BYTES, default=33554432" help:"request body limit in bytes"`
	UpstreamTimeout  time.Duration `env:"UPSTREAM_TIMEOUT, default=600s" help:"total upstream time-out"`
	FirstByteTimeout time.Duration `env:"FIRST_BYTE_TIMEOUT, default=120s" help:"per-attempt wait for the first byte before the next backend"`
	CodingAgentCmd   string        `env:"CODING_AGENT_CMD" help:"command that executes coding-agent runs; unset: disabled"`
	MaxResponseBytes int64         `env:"MAX_RESPONSE_BYTES, default=16777216" help:"most the gateway holds of one upstream answer, JSON or captured stream"`
	UsageRetention   time.Duration `env:"USAGE_RETENTION, default=2160h" help:"how long usage records (GET /v1/usage) are kept; must be positive"`
	BodyTimeout      time.Duration `env:"BODY_TIMEOUT, default=30s" help:"time a request body may take to arrive, before the minimum rate applies; 0: no limit"`
	BodyMinRate      int64         `env:"BODY_MIN_RATE, default=16384" help:"bytes per second a request body must arrive at after the body time-out's grace"`
	HeaderTimeout    time.Duration `env:"HEADER_TIMEOUT, default=10s" help:"time a client may take to send a request's headers"`
	MaxHeaderBytes   int           `env:"MAX_HEADER_BYTES, default=65536" help:"largest request line plus headers; larger: 431"`
	IdleTimeout      time.Duration `env:"IDLE_TIMEOUT, default=120s" help:"how long an idle keep-alive connection is kept"`
	MaxConns         int           `env:"MAX_CONNS, default=0" help:"most client connections open at once; 0: half the open-file limit less a reserve"`
	MaxConnsPerIP    int           `env:"MAX_CONNS_PER_CLIENT, default=1024" help:"most connections open at once from one client IP address; 0: no cap (behind a proxy every client has its address)"`
	GuardRules       string        `env:"GUARD_RULES" help:"content guard: rules file (JSON: per category, terms and RE2 patterns); SIGHUP reloads it"`
	GuardModURL      string        `env:"GUARD_MODERATION_URL" help:"content guard: OpenAI-compatible moderation endpoint base URL (ending in /v1)"`
	GuardModAPIKey   string        `env:"GUARD_MODERATION_API_KEY" help:"content guard: bearer token sent to the moderation endpoint; empty: none" secret:"true"`
	GuardModModel    string        `env:"GUARD_MODERATION_MODEL" help:"content guard: model of the moderation requests; empty: the endpoint's default"`
	GuardLlamaURL    string        `env:"GUARD_LLAMA_GUARD_URL" help:"content guard: OpenAI-compatible chat endpoint base URL (ending in /v1) serving a Llama Guard model"`
	GuardLlamaAPIKey string        `env:"GUARD_LLAMA_GUARD_API_KEY" help:"content guard: bearer token sent to the Llama Guard endpoint; empty: none" secret:"true"`
	GuardLlamaModel  string        `env:"GUARD_LLAMA_GUARD_MODEL" help:"content guard: model name of the Llama Guard requests; empty: omitted"`
	GuardThreshold   float64       `env:"GUARD_THRESHOLD, default=0.5" help:"content guard: moderation score at or above which a category is flagged"`
	GuardTimeout     time.Duration `env:"GUARD_TIMEOUT, default=2s" help:"content guard: most one classification may take; a block tenant's request then answers 503"`
	MetricsAddr      string        `env:"METRICS_ADDR" help:"address of the Prometheus metrics listener, serving /metrics without a bearer; unset: no metrics"`
	Dev              bool          `help:"development mode: an admin token kept in the data dir, demo backend when none answers"`
	DevToken         string        `help:"with -dev: the dev token to use instead of the one kept in the data dir" secret:"true"`
	PrintModels      bool          `help:"print the effective model catalog (GATEWAY_MODELS_FILE's, or the built-in one) as a models file, and exit"`
	ShutdownTimeout  time.Duration `help:"how long in-flight requests may take to finish on shutdown"`
	// An interpreted string: the help holds `level`, the usage's name of the value.
	LogLevel slog.Level "env:\"LOG_LEVEL, default=info\" help:\"least `level` of the log lines written (debug, info, warn, error); warn leaves out the line of each request answered below 500 and of each upstream attempt that succeeded\""
}

// loadConfig reads the environment through lookup, then the flags of args.
func loadConfig(ctx context.Context, args []string, lookup func(string) (string, bool), out io.Writer) (*config, error) {
	var c config
	if err := loadEnv(ctx, &c, lookup); err != nil {
		return nil, fmt.Errorf("environment: %w", err)
	}
	c.ShutdownTimeout = 30 * time.Second
	fs := flag.NewFlagSet("gatewayd", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() { usage(fs) }
	bindFlags(fs, &c)
	if err := fs.Parse(args); err != nil {
		return nil, err // flag.ErrHelp for -h, -help and --help, once the usage is printed
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	return &c, nil
}

// loadEnv fills c from the GATEWAY_* variables through lookup. A value that
// does not parse is reported by its variable's name (envValueError): the
// name the operator wrote, where go-envconfig's error names the Go field
// ("RatePerSecond: strconv.ParseFloat: ..."). go-envconfig's errors carry
// no variable name, so loadEnv notes the last variable it looked up: it
// reads a field's variable, then parses it, and stops at the first failure.
func loadEnv(ctx context.Context, c *config, lookup func(string) (string, bool)) error {
	var last string
	noted := envconfig.LookuperFunc(func(key string) (string, bool) {
		last = key
		return lookup(key)
	})
	err := envconfig.ProcessWith(ctx, &envconfig.Config{
		Target:   c,
		Lookuper: envconfig.PrefixLookuper("GATEWAY_", noted),
	})
	if err == nil {
		return nil
	}
	return renameEnvError(err, last, lookup)
}

// renameEnvError gives err, go-envconfig's failure while reading the
// variable name, that variable's name. It checks that err is go-envconfig's
// wrapping of a field's failure ("<Field>: <cause>", the field whose
// variable is name) before saying so; any other err is returned as it is.
func renameEnvError(err error, name string, lookup func(string) (string, bool)) error {
	f, ok := fieldOfVar(name)
	cause := errors.Unwrap(err)
	if !ok || cause == nil || err.Error() != f.Name+": "+cause.Error() {
		return err
	}
	value, _ := lookup(name)
	return &envValueError{Var: name, Value: value, Want: expected(f.Type), Err: cause}
}

// fieldOfVar is the field of config read from the variable name
// (GATEWAY_ and its env tag's name).
func fieldOfVar(name string) (reflect.StructField, bool) {
	t := reflect.TypeFor[config]()
	for i := range t.NumField() {
		f := t.Field(i)
		if env, _, _ := strings.Cut(f.Tag.Get("env"), ","); env != "" && "GATEWAY_"+env == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// expected says what a variable of type t must hold.
func expected(t reflect.Type) string {
	switch {
	case t == reflect.TypeFor[time.Duration]():
		return "a duration such as 30s, 5m or 1h30m"
	case t == reflect.TypeFor[slog.Level]():
		return "a level: debug, info, warn or error"
	case t.Kind() == reflect.Bool:
		return "true or false"
	case t.Kind() == reflect.Float64:
		return "a number"
	case t.Kind() == reflect.Int || t.Kind() == reflect.Int64:
		return "a whole number"
	}
	return "a " + t.String()
}

// envValueError is a GATEWAY_* variable whose value gatewayd cannot read:
// its message names the variable, quotes the value and says what was
// expected; Err is the parser's error (a *strconv.NumError, time's
// duration error).
type envValueError struct {
	Var, Value, Want string
	Err              error
}

func (e *envValueError) Error() string {
	if errors.Is(e.Err, strconv.ErrRange) {
		return fmt.Sprintf("%s: %q is out of range", e.Var, e.Value)
	}
	return fmt.Sprintf("%s: %q is not %s", e.Var, e.Value, e.Want)
}

func (e *envValueError) Unwrap() error { return e.Err }

// usage prints what `gatewayd -h` shows: what gatewayd is, how flags and
// variables relate, and every flag with its variable and default.
func usage(fs *flag.FlagSet) {
	fmt.Fprint(fs.Output(), `Usage: gatewayd [flags]

gatewayd serves the chatgw gateway. Each flag may instead be set by the
GATEWAY_* variable named after it; a flag wins over its variable. The
defaults shown include the values the environment set.

`)
	fs.PrintDefaults()
}

// bindFlags defines one flag per field, named after the field's variable, with
// the value read from the environment as its default. A field tagged
// secret:"true" (keys, tokens, a store URL that may hold a password) shows
// no default in the usage, so that `gatewayd -h` or a mistyped flag never
// prints the value its variable holds.
func bindFlags(fs *flag.FlagSet, c *config) {
	v := reflect.ValueOf(c).Elem()
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name := flagName(f)
		help := f.Tag.Get("help")
		if env, _, _ := strings.Cut(f.Tag.Get("env"), ","); env != "" {
			help += " (GATEWAY_" + env + ")"
		}
		switch p := v.Field(i).Addr().Interface().(type) {
		case *string:
			fs.StringVar(p, name, *p, help)
		case *bool:
			fs.BoolVar(p, name, *p, help)
		case *int:
			fs.IntVar(p, name, *p, help)
		case *int64:
			fs.Int64Var(p, name, *p, help)
		case *float64:
			fs.Float64Var(p, name, *p, help)
		case *time.Duration:
			fs.DurationVar(p, name, *p, help)
		case *slog.Level:
			fs.TextVar(p, name, *p, help)
		}
		if f.Tag.Get("secret") == "true" {
			fs.Lookup(name).DefValue = "" // the usage omits an empty default
		}
	}
}

// flagName is the lower-case, dashed form of the field's variable name
// (DATA_DIR -> data-dir); fields without a variable use their Go name.
func flagName(f reflect.StructField) string {
	if env, _, _ := strings.Cut(f.Tag.Get("env"), ","); env != "" {
		return strings.ToLower(strings.ReplaceAll(env, "_", "-"))
	}
	var b strings.Builder
	for i, r := range f.Name {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte('-')
		}
		b.WriteRune(r)
	}
	return strings.ToLower(b.String())
}
