package ai

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
)

// anthropicProvider speaks Anthropic's Messages API.
type anthropicProvider struct {
	common
	client anthropic.Client
}

func newAnthropic(cfg Config, c common) *anthropicProvider {
	opts := []option.RequestOption{
		// No ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, profile files or
		// federation from the environment: only what cfg says.
		option.WithoutEnvironmentDefaults(),
		option.WithAPIKey(cfg.APIKey),
		option.WithMaxRetries(cfg.MaxRetries),
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.Timeout > 0 {
		// Also replaces the SDK's own non-streaming timeout (10 minutes,
		// or "streaming is required" for a large max_tokens).
		opts = append(opts, option.WithRequestTimeout(cfg.Timeout))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &anthropicProvider{common: c, client: anthropic.NewClient(opts...)}
}

func (p *anthropicProvider) params(req Request) anthropic.MessageNewParams {
	msgs := make([]anthropic.MessageParam, 0, len(req.Messages))
	for _, m := range req.Messages {
		block := anthropic.NewTextBlock(m.Content)
		if m.Role == "assistant" {
			msgs = append(msgs, anthropic.NewAssistantMessage(block))
		} else {
			msgs = append(msgs, anthropic.NewUserMessage(block))
		}
	}
	maxTokens := int64(req.MaxTokens)
	if maxTokens == 0 {
		maxTokens = DefaultAnthropicMaxTokens
	}
	params := anthropic.MessageNewParams{
		Model:     anthropic.Model(req.Model),
		MaxTokens: maxTokens,
		Messages:  msgs,
	}
	if req.System != "" {
		params.System = []anthropic.TextBlockParam{{Text: req.System}}
	}
	if req.Temperature != nil {
		params.Temperature = anthropic.Float(*req.Temperature)
	}
	return params
}

func (p *anthropicProvider) Generate(ctx context.Context, req Request) (*Response, error) {
	if err := checkRequest(req); err != nil {
		return nil, err
	}
	x := &exchange{}
	msg, err := p.client.Messages.New(ctx, p.params(req), option.WithMiddleware(x.middleware))
	if err != nil {
		return nil, p.failAnthropic(ctx, x, err)
	}
	var text strings.Builder
	for _, block := range msg.Content {
		if block.Type == "text" {
			text.WriteString(block.Text)
		}
	}
	return &Response{
		Text:       text.String(),
		Model:      string(msg.Model),
		StopReason: string(msg.StopReason),
		Usage:      anthropicUsage(msg.Usage),
	}, nil
}

func (p *anthropicProvider) Stream(ctx context.Context, req Request, onDelta func(string) error) (*Response, error) {
	if err := checkRequest(req); err != nil {
		return nil, err
	}
	x := &exchange{}
	stream := p.client.Messages.NewStreaming(ctx, p.params(req), option.WithMiddleware(x.middleware))
	defer func() { _ = stream.Close() }() // a stream that was only read: its close error changes nothing

	// The SDK's accumulator keeps the usage of message_start, updated by
	// the cumulative counts of message_delta, and the stop reason.
	var msg anthropic.Message
	var text strings.Builder
	stopped := false
	for stream.Next() {
		event := stream.Current()
		if err := msg.Accumulate(event); err != nil {
			return nil, &Error{Provider: p.kind, Message: p.scrub(truncate("malformed stream: " + err.Error()))}
		}
		switch event.Type {
		case "content_block_delta":
			if event.Delta.Type != "text_delta" || event.Delta.Text == "" {
				continue
			}
			text.WriteString(event.Delta.Text)
			if onDelta != nil {
				if err := onDelta(event.Delta.Text); err != nil {
					return nil, err
				}
			}
		case "message_stop":
			stopped = true
		}
	}
	if err := stream.Err(); err != nil {
		return nil, p.failAnthropic(ctx, x, err)
	}
	if !stopped {
		// The SDK ends a stream that stops before message_stop without an
		// error.
		return nil, p.fail(ctx, x, errStreamIncomplete, nil)
	}
	return &Response{
		Text:       text.String(),
		Model:      string(msg.Model),
		StopReason: string(msg.StopReason),
		Usage:      anthropicUsage(msg.Usage),
	}, nil
}

func (p *anthropicProvider) Models(ctx context.Context) ([]string, error) {
	x := &exchange{}
	pager := p.client.Models.ListAutoPaging(ctx, anthropic.ModelListParams{Limit: anthropic.Int(1000)},
		option.WithMiddleware(x.middleware))
	var ids []string
	for pager.Next() {
		ids = append(ids, pager.Current().ID)
	}
	if err := pager.Err(); err != nil {
		return nil, p.failAnthropic(ctx, x, err)
	}
	return ids, nil
}

// failAnthropic reads what the Anthropic SDK's errors carry.
func (p *anthropicProvider) failAnthropic(ctx context.Context, x *exchange, err error) error {
	var apiErr *providerError
	var ae *anthropic.Error
	if errors.As(err, &ae) {
		t, msg := errorFields(ae.RawJSON())
		if t == "" {
			t = string(ae.Type())
		}
		status := ae.StatusCode
		if status < http.StatusBadRequest {
			// An error event in a stream that started with a 200: the
			// status is the error type's.
			status = 0
		}
		apiErr = &providerError{status: status, message: msg, errType: t}
	}
	return p.fail(ctx, x, err, apiErr)
}

// anthropicUsage counts every input token in InputTokens, as OpenAI's
// prompt_tokens does: Anthropic's input_tokens leaves out the tokens read
// from the cache and those written to it. CachedTokens are those read
// from the cache.
func anthropicUsage(u anthropic.Usage) Usage {
	return Usage{
		InputTokens:  u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens,
		OutputTokens: u.OutputTokens,
		CachedTokens: u.CacheReadInputTokens,
	}
}
