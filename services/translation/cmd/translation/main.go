// Command translation serves text translation (plain and HTML) and the
// likely language of a location.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"supportplatform.dev/ai/apertium"
	"supportplatform.dev/ai/libretranslate"
	"supportplatform.dev/ai/llmtranslate"
	"supportplatform.dev/ai/openai"
	"supportplatform.dev/pkg/boot"
	"supportplatform.dev/pkg/config"
	"supportplatform.dev/services/translation/internal/customers"
	"supportplatform.dev/services/translation/internal/httpapi"
	"supportplatform.dev/services/translation/internal/translate"
	"supportplatform.dev/services/translation/internal/translate/rediscache"
	"supportplatform.dev/services/translation/internal/translate/redishistory"
)

// Config of the translation service.
type Config struct {
	HTTPAddr string `env:"HTTP_ADDR" default:"127.0.0.1:8084" desc:"listen address of the translation service"`
	config.Common
	Providers        string        `env:"TRANSLATION_PROVIDERS" default:"apertium,libretranslate,openai" desc:"engines in order of preference; the first that serves a language pair is used, the next on failure"`
	CacheTTL         time.Duration `env:"TRANSLATION_CACHE_TTL" default:"168h" desc:"how long translations stay cached in Redis"`
	CustomerCacheTTL time.Duration `env:"TRANSLATION_CUSTOMER_CACHE_TTL" default:"30s" desc:"how long a customer's existence is cached (a deleted customer gets 404 after at most this)"`
	openai.Settings
	LibreURL         string        `env:"LIBRETRANSLATE_URL" default:"" desc:"LibreTranslate base URL; empty = off"`
	LibreAPIKey      string        `env:"LIBRETRANSLATE_API_KEY" default:"" desc:"LibreTranslate API key"`
	LibreTimeout     time.Duration `env:"LIBRETRANSLATE_TIMEOUT" default:"30s" desc:"timeout of one LibreTranslate request; must be below REQUEST_TIMEOUT"`
	ApertiumCommand  string        `env:"APERTIUM_COMMAND" default:"apertium" desc:"the apertium executable"`
	ApertiumDataDir  string        `env:"APERTIUM_DATA_DIR" default:"/usr/share/apertium" desc:"where the installed Apertium modes are"`
	ApertiumTimeout  time.Duration `env:"APERTIUM_TIMEOUT" default:"30s" desc:"timeout of one Apertium run (of one answer of a warm pipeline); must be below REQUEST_TIMEOUT"`
	ApertiumMaxProcs int           `env:"APERTIUM_MAX_PROCESSES" default:"2" desc:"concurrent Apertium pipelines: one-shot runs in all, or warm pipelines per language pair"`
	ApertiumWarm     bool          `env:"APERTIUM_WARM" default:"true" desc:"keep Apertium pipelines running between requests (null-flush mode); false starts the apertium command per request"`
	ApertiumIdle     time.Duration `env:"APERTIUM_IDLE_TIMEOUT" default:"1m" desc:"a warm Apertium pipeline unused for this long is stopped"`
}

func main() { boot.Main("translation", run) }

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	var cfg Config
	if err := config.Load(getenv, &cfg); err != nil {
		return err
	}
	cmd, err := boot.Command(args)
	if err != nil {
		return err
	}
	if cmd == "migrate" { // the same deployment step for every binary
		fmt.Fprintln(stdout, "translation has no schema: nothing to migrate")
		return nil
	}
	if cmd == "healthcheck" {
		return boot.Healthcheck(ctx, cfg.HTTPAddr, stdout)
	}
	if err := cfg.checkBudget(); err != nil {
		return err
	}
	llm := cfg.Client()
	ap := apertium.New(apertium.Config{Command: cfg.ApertiumCommand, DataDir: cfg.ApertiumDataDir,
		Timeout: cfg.ApertiumTimeout, MaxProcesses: cfg.ApertiumMaxProcs,
		Warm: cfg.ApertiumWarm, IdleTimeout: cfg.ApertiumIdle})
	defer func() { _ = ap.Close() }()
	providers, err := translate.OrderProviders(cfg.Providers,
		ap,
		libretranslate.New(libretranslate.Config{BaseURL: cfg.LibreURL, APIKey: cfg.LibreAPIKey, Timeout: cfg.LibreTimeout}),
		llmtranslate.New(llm, llmtranslate.Config{}),
	)
	if err != nil {
		return fmt.Errorf("config: TRANSLATION_PROVIDERS: %w", err)
	}
	deps, err := boot.Open(ctx, cfg.Common, boot.Options{Service: "translation"}, stdout)
	if err != nil {
		return err
	}
	defer func() { _ = deps.Close() }()
	metrics, err := translate.NewMetrics(deps.Server.Registry)
	if err != nil {
		return err
	}
	tc := translate.Config{
		Providers: providers,
		Cache:     rediscache.New(deps.Redis, cfg.RedisPrefix+"translation:"),
		CacheTTL:  cfg.CacheTTL,
		// The customers' usual source languages help read short texts.
		History: redishistory.New(deps.Redis, cfg.RedisPrefix+"translation:srclang:", 0),
		Metrics: metrics,
		Logger:  deps.Log,
	}
	if llm.Configured() {
		tc.Refiner = translate.NewLLMRefiner(llm)
	}
	svc := translate.New(tc)
	h := httpapi.New(svc, customers.New(deps.Bus, cfg.CustomerCacheTTL, deps.Now), deps.Server)
	h.Routes(deps.Server.Engine, deps.Auth())
	return deps.Serve(ctx, cfg.HTTPAddr, stdout)
}

// checkBudget refuses upstream timeouts that do not fit in a request's budget
// (REQUEST_TIMEOUT): an attempt that may outlive the request would be cut
// off by the request's deadline anyway, and the client would wait for
// nothing. A budget that allows no retry at all is worth a warning in the
// README, not a refusal: a slow local model may need one long attempt.
func (c Config) checkBudget() error {
	var errs []error
	for _, t := range []struct {
		name string
		d    time.Duration
	}{{"AI_TIMEOUT", c.AITimeout}, {"LIBRETRANSLATE_TIMEOUT", c.LibreTimeout}, {"APERTIUM_TIMEOUT", c.ApertiumTimeout}} {
		if t.d <= 0 || t.d >= c.RequestTimeout {
			errs = append(errs, fmt.Errorf("config: %s (%v) must be positive and below REQUEST_TIMEOUT (%v), the budget of the request that makes the call", t.name, t.d, c.RequestTimeout))
		}
	}
	if c.AIMaxRetries < 0 {
		errs = append(errs, fmt.Errorf("config: AI_MAX_RETRIES (%d) must not be negative", c.AIMaxRetries))
	}
	if err := c.Settings.Check(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
