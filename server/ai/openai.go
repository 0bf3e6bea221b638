package ai

import (
	"context"
	"errors"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

// openAIProvider speaks the Chat Completions API, to OpenAI or to any
// server that copies it.
type openAIProvider struct {
	common
	client openai.Client
}

func newOpenAI(cfg Config, c common) *openAIProvider {
	opts := []option.RequestOption{
		option.WithEnvironmentProduction(), // https://api.openai.com/v1/
		option.WithAPIKey(cfg.APIKey),      // "" sends no Authorization header
		option.WithMaxRetries(cfg.MaxRetries),
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.Timeout > 0 {
		opts = append(opts, option.WithRequestTimeout(cfg.Timeout))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	// Not openai.NewClient: it starts from OPENAI_API_KEY, OPENAI_BASE_URL,
	// OPENAI_ORG_ID, OPENAI_CUSTOM_HEADERS... of the process environment,
	// and the SDK's switch to turn that off is internal. With an empty key
	// (Ollama), OPENAI_API_KEY would go to the compatible server. The
	// services are built as NewClient builds them, from our options only.
	client := openai.Client{Options: opts}
	client.Chat = openai.NewChatService(opts...)
	client.Models = openai.NewModelService(opts...)
	return &openAIProvider{common: c, client: client}
}

func (p *openAIProvider) params(req Request) openai.ChatCompletionNewParams {
	msgs := make([]openai.ChatCompletionMessageParamUnion, 0, len(req.Messages)+1)
	if req.System != "" {
		msgs = append(msgs, openai.SystemMessage(req.System))
	}
	for _, m := range req.Messages {
		if m.Role == "assistant" {
			msgs = append(msgs, openai.AssistantMessage(m.Content))
		} else {
			msgs = append(msgs, openai.UserMessage(m.Content))
		}
	}
	params := openai.ChatCompletionNewParams{
		Model:    req.Model,
		Messages: msgs,
	}
	if req.Temperature != nil {
		params.Temperature = openai.Float(*req.Temperature)
	}
	if req.MaxTokens > 0 {
		if p.kind == OpenAI {
			// OpenAI deprecated max_tokens, and its reasoning models refuse it.
			params.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
		} else {
			// What the compatible servers (Ollama, vLLM, LM Studio...) all know.
			params.MaxTokens = openai.Int(int64(req.MaxTokens))
		}
	}
	return params
}

func (p *openAIProvider) Generate(ctx context.Context, req Request) (*Response, error) {
	if err := checkRequest(req); err != nil {
		return nil, err
	}
	x := &exchange{}
	res, err := p.client.Chat.Completions.New(ctx, p.params(req), option.WithMiddleware(x.middleware))
	if err != nil {
		return nil, p.failOpenAI(ctx, x, err)
	}
	if len(res.Choices) == 0 {
		return nil, &Error{Provider: p.kind, Message: "malformed response: no choices"}
	}
	choice := res.Choices[0]
	return &Response{
		Text:       choice.Message.Content,
		Model:      res.Model,
		StopReason: choice.FinishReason,
		Usage:      openAIUsage(res.Usage),
	}, nil
}

func (p *openAIProvider) Stream(ctx context.Context, req Request, onDelta func(string) error) (*Response, error) {
	if err := checkRequest(req); err != nil {
		return nil, err
	}
	params := p.params(req)
	// The last chunk, before [DONE], carries the usage of the whole call.
	params.StreamOptions.IncludeUsage = openai.Bool(true)
	x := &exchange{sseDone: true}
	stream := p.client.Chat.Completions.NewStreaming(ctx, params, option.WithMiddleware(x.middleware))
	defer func() { _ = stream.Close() }() // a stream that was only read: its close error changes nothing

	out := &Response{}
	var text strings.Builder
	for stream.Next() {
		chunk := stream.Current()
		if chunk.Model != "" {
			out.Model = chunk.Model
		}
		if chunk.JSON.Usage.Valid() {
			out.Usage = openAIUsage(chunk.Usage)
		}
		for _, choice := range chunk.Choices {
			if choice.Index != 0 {
				continue
			}
			if choice.FinishReason != "" {
				out.StopReason = choice.FinishReason
			}
			if delta := choice.Delta.Content; delta != "" {
				text.WriteString(delta)
				if onDelta != nil {
					if err := onDelta(delta); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	if err := stream.Err(); err != nil {
		return nil, p.failOpenAI(ctx, x, err)
	}
	out.Text = text.String()
	return out, nil
}

func (p *openAIProvider) Models(ctx context.Context) ([]string, error) {
	x := &exchange{}
	// OpenAI's model list is a single page.
	page, err := p.client.Models.List(ctx, option.WithMiddleware(x.middleware))
	if err != nil {
		return nil, p.failOpenAI(ctx, x, err)
	}
	ids := make([]string, 0, len(page.Data))
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	return ids, nil
}

// failOpenAI reads what the OpenAI SDK's errors carry.
func (p *openAIProvider) failOpenAI(ctx context.Context, x *exchange, err error) error {
	var apiErr *providerError
	var oe *openai.Error
	var se *ssestream.StreamError
	switch {
	case errors.As(err, &oe):
		apiErr = &providerError{status: oe.StatusCode, message: oe.Message, errType: oe.Type}
	case errors.As(err, &se):
		// {"error": {...}} inside a 200 stream.
		t, msg := errorFields(string(se.Event.Data))
		if msg == "" {
			msg = strings.TrimPrefix(se.Message, "received error while streaming: ")
		}
		apiErr = &providerError{message: msg, errType: t}
	}
	return p.fail(ctx, x, err, apiErr)
}

func openAIUsage(u openai.CompletionUsage) Usage {
	return Usage{
		InputTokens:  u.PromptTokens,
		OutputTokens: u.CompletionTokens,
		CachedTokens: u.PromptTokensDetails.CachedTokens,
	}
}
