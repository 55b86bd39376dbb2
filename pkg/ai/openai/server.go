package openai

import (
	"fmt"
	"net/url"
	"strings"
)

// Server kinds (AI_SERVER_KIND). They differ in the request fields they
// honour, and a field a server does not know is silently ignored by the
// local ones, so the kind decides what is sent:
//
//   - openai: the hosted API. Reasoning models (o1, o3, o4, gpt-5) refuse
//     max_tokens and any temperature but 1 with a 400; every model takes
//     max_completion_tokens and json_schema with strict.
//   - vllm: takes max_completion_tokens and json_schema (guided decoding).
//   - llamacpp: llama-server reads max_tokens (max_completion_tokens only in
//     builds from 2026 on; older ones ignore it and generate without bound);
//     json_schema is turned into a grammar.
//   - ollama: /v1 reads max_tokens only; json_schema becomes its format.
//   - auto: openai for api.openai.com and Azure OpenAI hosts, ollama for port
//     11434, otherwise a generic compatible server (max_tokens, json_object).
const (
	ServerAuto     = "auto"
	ServerOpenAI   = "openai"
	ServerVLLM     = "vllm"
	ServerLlamaCpp = "llamacpp"
	ServerOllama   = "ollama"
	// serverGeneric is what auto resolves to when the URL tells nothing.
	serverGeneric = "generic"
)

// Token parameters (AI_TOKEN_PARAM).
const (
	TokenParamAuto                = "auto"
	TokenParamMaxCompletionTokens = "max_completion_tokens"
	TokenParamMaxTokens           = "max_tokens"
)

// Response formats asked for JSON answers (AI_RESPONSE_FORMAT).
const (
	FormatAuto       = "auto"
	FormatJSONSchema = "json_schema"
	FormatJSONObject = "json_object"
	FormatNone       = "none"
)

// Reasoning settings (AI_REASONING_MODEL).
const (
	ReasoningAuto = "auto"
	ReasoningYes  = "true"
	ReasoningNo   = "false"
)

// Default context lengths (AI_CONTEXT_TOKENS=0) per server kind: what the
// server gives a model unless told otherwise. Ollama's default is 4,096
// tokens (OLLAMA_CONTEXT_LENGTH raises it) and its /v1 API drops the front
// of a longer prompt without an error; llama-server's -c is often set to
// 4,096; hosted OpenAI models have at least 128,000.
var defaultContextTokens = map[string]int{
	ServerOpenAI:   128000,
	ServerVLLM:     8192,
	ServerLlamaCpp: 4096,
	ServerOllama:   4096,
	serverGeneric:  8192,
}

// DefaultReasoningTokens is the allowance for a reasoning model's hidden
// reasoning added to a call's visible-output bound (max_completion_tokens
// counts both), when Config.ReasoningTokens is zero.
const DefaultReasoningTokens = 4096

// params are the request choices resolved from a Config once.
type params struct {
	kind          string
	reasoning     bool
	tokenParam    string
	format        string
	contextTokens int
	reasoningTok  int
}

// resolve checks cfg's choices and resolves the automatic ones.
func resolve(cfg Config) (params, error) {
	var p params
	kind := strings.ToLower(strings.TrimSpace(cfg.Server))
	switch kind {
	case "", ServerAuto:
		p.kind = detectKind(cfg.BaseURL)
	case ServerOpenAI, ServerVLLM, ServerLlamaCpp, ServerOllama:
		p.kind = kind
	default:
		return p, fmt.Errorf("openai: server kind %q is not one of openai, vllm, llamacpp, ollama, auto", cfg.Server)
	}

	switch strings.ToLower(strings.TrimSpace(cfg.Reasoning)) {
	case "", ReasoningAuto:
		p.reasoning = ReasoningFamily(cfg.Model)
	case ReasoningYes:
		p.reasoning = true
	case ReasoningNo:
	default:
		return p, fmt.Errorf("openai: reasoning %q is not one of auto, true, false", cfg.Reasoning)
	}

	switch tp := strings.ToLower(strings.TrimSpace(cfg.TokenParam)); tp {
	case "", TokenParamAuto:
		switch {
		case p.reasoning, p.kind == ServerOpenAI, p.kind == ServerVLLM:
			p.tokenParam = TokenParamMaxCompletionTokens
		default:
			p.tokenParam = TokenParamMaxTokens
		}
	case TokenParamMaxCompletionTokens, TokenParamMaxTokens:
		p.tokenParam = tp
	default:
		return p, fmt.Errorf("openai: token parameter %q is not one of max_completion_tokens, max_tokens, auto", cfg.TokenParam)
	}

	switch f := strings.ToLower(strings.TrimSpace(cfg.ResponseFormat)); f {
	case "", FormatAuto:
		p.format = FormatJSONSchema
		if p.kind == serverGeneric {
			p.format = FormatJSONObject
		}
	case FormatJSONSchema, FormatJSONObject, FormatNone:
		p.format = f
	default:
		return p, fmt.Errorf("openai: response format %q is not one of json_schema, json_object, none, auto", cfg.ResponseFormat)
	}

	switch {
	case cfg.ContextTokens < 0:
		return p, fmt.Errorf("openai: context tokens (%d) must not be negative", cfg.ContextTokens)
	case cfg.ContextTokens == 0:
		p.contextTokens = defaultContextTokens[p.kind]
	default:
		p.contextTokens = cfg.ContextTokens
	}
	switch {
	case cfg.ReasoningTokens < 0:
		return p, fmt.Errorf("openai: reasoning tokens (%d) must not be negative", cfg.ReasoningTokens)
	case cfg.ReasoningTokens == 0:
		p.reasoningTok = DefaultReasoningTokens
	default:
		p.reasoningTok = cfg.ReasoningTokens
	}
	return p, nil
}

func detectKind(base string) string {
	u, err := url.Parse(base)
	if err != nil {
		return serverGeneric
	}
	host := strings.ToLower(u.Hostname())
	switch {
	case host == "api.openai.com", strings.HasSuffix(host, ".openai.azure.com"):
		return ServerOpenAI
	case u.Port() == "11434":
		return ServerOllama
	}
	return serverGeneric
}

// ReasoningFamily reports whether model names one of OpenAI's reasoning
// families (o1, o3, o4 and their -mini/-pro variants, gpt-5 and its
// versions), which take max_completion_tokens only and no sampling
// parameters. A provider prefix ("openai/o3-mini") is ignored; gpt-5's
// chat variants (gpt-5-chat-latest) are not reasoning models.
func ReasoningFamily(model string) bool {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	if len(m) >= 2 && m[0] == 'o' && m[1] >= '1' && m[1] <= '9' && (len(m) == 2 || m[2] == '-') {
		return true
	}
	if strings.HasPrefix(m, "gpt-5") && !strings.Contains(m, "-chat") {
		return true
	}
	return false
}
