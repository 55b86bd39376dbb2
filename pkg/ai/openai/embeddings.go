package openai

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
)

type embeddingsRequest struct {
	Model string   `json:"model"`
	Input []string `json:"input"`
	// EncodingFormat asks for plain float arrays; the API's default, but some SDKs switch it to
	// base64, so servers are told explicitly.
	EncodingFormat string `json:"encoding_format"`
}

type embeddingsReply struct {
	Data []struct {
		Index     *int            `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
}

// Embed returns one embedding vector per input, in the order of inputs, from POST
// {baseURL}/embeddings with the given model (an embedding model is usually not the chat model). It
// retries like Complete (429 and 5xx honouring Retry-After, timeouts, dropped connections). A reply
// that does not hold exactly one finite vector per input, all of one dimension, is a
// *MalformedReplyError. No inputs make no request. The request goes to Config.EmbeddingURL with
// EmbeddingKey when set, else to the chat server.
func (c *Client) Embed(ctx context.Context, model string, inputs []string) ([][]float64, error) {
	model = strings.TrimSpace(model)
	base, key := c.cfg.BaseURL, c.cfg.APIKey
	if c.cfg.EmbeddingURL != "" {
		base, key = c.cfg.EmbeddingURL, c.cfg.EmbeddingKey
	}
	if base == "" || model == "" {
		return nil, ErrNotConfigured
	}
	if len(inputs) == 0 {
		return nil, nil
	}
	body, err := json.Marshal(embeddingsRequest{Model: model, Input: inputs, EncodingFormat: "float"})
	if err != nil {
		return nil, fmt.Errorf("openai: encode embeddings request: %w", err)
	}

	var (
		vectors    [][]float64
		lastStatus int
		lastMsg    string
	)
	attempts, err := c.policy.Run(ctx, func(ctx context.Context) error {
		raw, status, ae, aerr := c.post(ctx, base, key, "/embeddings", body)
		lastStatus, lastMsg = status, ae.Message
		if aerr != nil {
			return aerr
		}
		v, perr := parseEmbeddings(raw, len(inputs))
		vectors = v
		return perr
	})
	if err == nil {
		return vectors, nil
	}
	var mal *MalformedReplyError
	if errors.As(err, &mal) {
		return nil, mal
	}
	return nil, &UpstreamError{Provider: "openai", StatusCode: lastStatus, Message: lastMsg, Attempts: attempts, Err: err}
}

func parseEmbeddings(raw []byte, n int) ([][]float64, error) {
	malformed := func(reason string, err error) error {
		return &MalformedReplyError{Provider: "openai", Reason: reason, Err: err}
	}
	var r embeddingsReply
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, malformed("invalid JSON", err)
	}
	if len(r.Data) != n {
		return nil, malformed(fmt.Sprintf("%d embeddings for %d inputs", len(r.Data), n), nil)
	}
	out := make([][]float64, n)
	dim := -1
	for i, d := range r.Data {
		// Servers answer in input order; the index says so explicitly when present.
		idx := i
		if d.Index != nil {
			idx = *d.Index
		}
		if idx < 0 || idx >= n || out[idx] != nil {
			return nil, malformed(fmt.Sprintf("embedding index %d out of range or repeated", idx), nil)
		}
		v, err := decodeVector(d.Embedding)
		if err != nil {
			return nil, malformed(fmt.Sprintf("embedding %d", idx), err)
		}
		if dim == -1 {
			dim = len(v)
		}
		if len(v) == 0 || len(v) != dim {
			return nil, malformed(fmt.Sprintf("embedding %d has %d dimensions, want %d", idx, len(v), dim), nil)
		}
		out[idx] = v
	}
	return out, nil
}

// decodeVector reads an embedding as a float array or, from servers that ignore encoding_format,
// as base64 of little-endian float32 values.
func decodeVector(raw json.RawMessage) ([]float64, error) {
	var v []float64
	if err := json.Unmarshal(raw, &v); err == nil {
		for _, x := range v {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, errors.New("not a finite number")
			}
		}
		return v, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, errors.New("neither a number array nor a base64 string")
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("base64: %w", err)
	}
	if len(b)%4 != 0 {
		return nil, errors.New("base64 length is not a multiple of 4 bytes")
	}
	v = make([]float64, len(b)/4)
	for i := range v {
		f := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return nil, errors.New("not a finite number")
		}
		v[i] = float64(f)
	}
	return v, nil
}
