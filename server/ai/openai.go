package ai

import (
	"context"
	"encoding/json"
	"net/http"
)

// openAIProvider speaks the Chat Completions API, to OpenAI or to any
// server that copies it.
type openAIProvider struct {
	common
}

// openAIBaseURL is OpenAI's own API root.
const openAIBaseURL = "https://api.openai.com/v1"

func newOpenAI(c common) *openAIProvider {
	if c.baseURL == "" {
		c.baseURL = openAIBaseURL
	}
	key := c.apiKey
	c.auth = func(h http.Header) {
		if key != "" { // a local Ollama needs none
			h.Set("Authorization", "Bearer "+key)
		}
	}
	return &openAIProvider{common: c}
}

// The request and response bodies, as far as copydesk reads them.
type (
	openAIRequest struct {
		Model       string          `json:"model"`
		Messages    []openAIMessage `json:"messages"`
		Temperature *float64        `json:"temperature,omitempty"`
		// OpenAI deprecated max_tokens, and its reasoning models refuse
		// it; the compatible servers (Ollama, vLLM, LM Studio...) all know
		// max_tokens, not always max_completion_tokens.
		MaxCompletionTokens int                  `json:"max_completion_tokens,omitempty"`
		MaxTokens           int                  `json:"max_tokens,omitempty"`
		Stream              bool                 `json:"stream,omitempty"`
		StreamOptions       *openAIStreamOptions `json:"stream_options,omitempty"`
	}
	openAIMessage struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	openAIStreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	}
	openAIUsage struct {
		PromptTokens        int64 `json:"prompt_tokens"`
		CompletionTokens    int64 `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	}
	openAICompletion struct {
		Model   string `json:"model"`
		Choices []struct {
			Index   int `json:"index"`
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage *openAIUsage `json:"usage"`
	}
	openAIChunk struct {
		Model   string `json:"model"`
		Choices []struct {
			Index int `json:"index"`
			Delta struct {
				Content string `json:"content"`
			} `json:"delta"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		// Only in the last chunk before [DONE], with include_usage.
		Usage *openAIUsage    `json:"usage"`
		Error json.RawMessage `json:"error"`
	}
)

func (p *openAIProvider) body(req Request, stream bool) openAIRequest {
	msgs := make([]openAIMessage, 0, len(req.Messages)+1)
	if req.System != "" {
		msgs = append(msgs, openAIMessage{Role: "system", Content: req.System})
	}
	for _, m := range req.Messages {
		msgs = append(msgs, openAIMessage(m))
	}
	body := openAIRequest{Model: req.Model, Messages: msgs, Temperature: req.Temperature}
	if req.MaxTokens > 0 {
		if p.kind == OpenAI {
			body.MaxCompletionTokens = req.MaxTokens
		} else {
			body.MaxTokens = req.MaxTokens
		}
	}
	if stream {
		// The last chunk, before [DONE], carries the usage of the whole call.
		body.Stream, body.StreamOptions = true, &openAIStreamOptions{IncludeUsage: true}
	}
	return body
}

func (p *openAIProvider) Generate(ctx context.Context, req Request) (*Response, error) {
	if err := checkRequest(req); err != nil {
		return nil, err
	}
	var res openAICompletion
	if err := p.call(ctx, "chat/completions", p.body(req, false), &res); err != nil {
		return nil, err
	}
	if len(res.Choices) == 0 {
		return nil, &Error{Provider: p.kind, Message: "malformed response: no choices"}
	}
	choice := res.Choices[0]
	return &Response{
		Text:       choice.Message.Content,
		Model:      res.Model,
		StopReason: choice.FinishReason,
		Usage:      res.Usage.usage(),
	}, nil
}

func (p *openAIProvider) Stream(ctx context.Context, req Request, onDelta func(string) error) (*Response, error) {
	if err := checkRequest(req); err != nil {
		return nil, err
	}
	out := &Response{}
	text, started, err := p.stream(ctx, "chat/completions", p.body(req, true), onDelta, func(ev sseEvent) (string, bool, error) {
		if ev.data == "[DONE]" {
			return "", true, nil
		}
		var chunk openAIChunk
		if err := json.Unmarshal([]byte(ev.data), &chunk); err != nil {
			return "", false, err
		}
		if len(chunk.Error) > 0 || ev.name == "error" {
			// An error after the 200, e.g. {"error":{"type":"server_error",...}}.
			return "", false, p.apiError(0, []byte(ev.data))
		}
		if chunk.Model != "" {
			out.Model = chunk.Model
		}
		if chunk.Usage != nil {
			out.Usage = chunk.Usage.usage()
		}
		for _, choice := range chunk.Choices {
			if choice.Index != 0 {
				continue
			}
			if choice.FinishReason != "" {
				out.StopReason = choice.FinishReason
			}
			return choice.Delta.Content, false, nil
		}
		return "", false, nil
	})
	out.Text = text
	if err != nil {
		return partial(out, started), err
	}
	return out, nil
}

func (p *openAIProvider) Models(ctx context.Context) ([]string, error) {
	// OpenAI's model list is a single page.
	var page struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := p.call(ctx, "models", nil, &page); err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(page.Data))
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	return ids, nil
}

// usage counts as copydesk does: prompt_tokens are every input token,
// cached_tokens those of them read from the prompt cache.
func (u *openAIUsage) usage() Usage {
	if u == nil {
		return Usage{}
	}
	out := Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
	if u.PromptTokensDetails != nil {
		out.CachedTokens = u.PromptTokensDetails.CachedTokens
	}
	return out
}
