package ai

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// anthropicProvider speaks Anthropic's Messages API.
type anthropicProvider struct {
	common
}

// anthropicBaseURL is Anthropic's own API host.
const anthropicBaseURL = "https://api.anthropic.com"

func newAnthropic(c common) *anthropicProvider {
	if c.baseURL == "" {
		c.baseURL = anthropicBaseURL
	}
	key := c.apiKey
	c.auth = func(h http.Header) {
		h.Set("X-Api-Key", key)
		h.Set("Anthropic-Version", anthropicVersion)
	}
	c.http = keepKeyHome(c.http)
	return &anthropicProvider{common: c}
}

// keepKeyHome is hc, except that a redirect to another host loses the
// x-api-key header: Go's client drops Authorization on such a redirect,
// but knows nothing of Anthropic's header.
func keepKeyHome(hc *http.Client) *http.Client {
	c := *hc
	next := hc.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if next != nil {
			if err := next(req, via); err != nil {
				return err
			}
		} else if len(via) >= 10 {
			return errors.New("stopped after 10 redirects") // Go's default
		}
		if req.URL.Host != via[0].URL.Host {
			req.Header.Del("X-Api-Key")
		}
		return nil
	}
	return &c
}

// The request and response bodies, as far as copydesk reads them.
type (
	anthropicRequest struct {
		Model       string             `json:"model"`
		MaxTokens   int                `json:"max_tokens"`
		Messages    []anthropicMessage `json:"messages"`
		System      []anthropicBlock   `json:"system,omitempty"`
		Temperature *float64           `json:"temperature,omitempty"`
		Stream      bool               `json:"stream,omitempty"`
	}
	anthropicMessage struct {
		Role    string           `json:"role"`
		Content []anthropicBlock `json:"content"`
	}
	anthropicBlock struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	// anthropicUsage has pointers because a message_delta event updates
	// only the counts it carries.
	anthropicUsage struct {
		InputTokens              *int64 `json:"input_tokens"`
		OutputTokens             *int64 `json:"output_tokens"`
		CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
	}
	anthropicResponse struct {
		Model      string           `json:"model"`
		Content    []anthropicBlock `json:"content"`
		StopReason string           `json:"stop_reason"`
		Usage      anthropicUsage   `json:"usage"`
	}
	// anthropicEvent is any event of a stream; which fields are set
	// depends on Type.
	anthropicEvent struct {
		Type         string             `json:"type"`
		Message      *anthropicResponse `json:"message"`       // message_start
		ContentBlock *anthropicBlock    `json:"content_block"` // content_block_start
		Delta        *struct {
			Type       string `json:"type"` // content_block_delta: text_delta, thinking_delta, ...
			Text       string `json:"text"`
			StopReason string `json:"stop_reason"` // message_delta
		} `json:"delta"`
		Usage *anthropicUsage `json:"usage"` // message_delta: cumulative
	}
)

func (p *anthropicProvider) body(req Request, stream bool) anthropicRequest {
	msgs := make([]anthropicMessage, 0, len(req.Messages))
	for _, m := range req.Messages {
		msgs = append(msgs, anthropicMessage{Role: m.Role, Content: []anthropicBlock{{Type: "text", Text: m.Content}}})
	}
	body := anthropicRequest{Model: req.Model, MaxTokens: req.MaxTokens, Messages: msgs,
		Temperature: req.Temperature, Stream: stream}
	if body.MaxTokens == 0 {
		body.MaxTokens = DefaultAnthropicMaxTokens
	}
	if req.System != "" {
		body.System = []anthropicBlock{{Type: "text", Text: req.System}}
	}
	return body
}

func (p *anthropicProvider) Generate(ctx context.Context, req Request) (*Response, error) {
	if err := checkRequest(req); err != nil {
		return nil, err
	}
	var msg anthropicResponse
	if err := p.call(ctx, "v1/messages", p.body(req, false), &msg); err != nil {
		return nil, err
	}
	var text strings.Builder
	for _, block := range msg.Content {
		if block.Type == "text" {
			text.WriteString(block.Text)
		}
	}
	return &Response{
		Text:       text.String(),
		Model:      msg.Model,
		StopReason: msg.StopReason,
		Usage:      msg.Usage.usage(),
	}, nil
}

func (p *anthropicProvider) Stream(ctx context.Context, req Request, onDelta func(string) error) (*Response, error) {
	if err := checkRequest(req); err != nil {
		return nil, err
	}
	out := &Response{}
	var usage anthropicUsage
	text, started, err := p.stream(ctx, "v1/messages", p.body(req, true), onDelta, func(ev sseEvent) (string, bool, error) {
		var e anthropicEvent
		if err := json.Unmarshal([]byte(ev.data), &e); err != nil {
			return "", false, err
		}
		if ev.name == "error" || e.Type == "error" {
			// {"type":"error","error":{"type":"overloaded_error",...}}
			return "", false, p.apiError(0, []byte(ev.data))
		}
		switch e.Type {
		case "message_start":
			if e.Message != nil {
				out.Model = e.Message.Model
				usage.update(e.Message.Usage)
			}
		case "content_block_start":
			if b := e.ContentBlock; b != nil && b.Type == "text" {
				return b.Text, false, nil
			}
		case "content_block_delta":
			// Only text; thinking, signatures, tool input and citations
			// are not copydesk's.
			if e.Delta != nil && e.Delta.Type == "text_delta" {
				return e.Delta.Text, false, nil
			}
		case "message_delta":
			if e.Delta != nil && e.Delta.StopReason != "" {
				out.StopReason = e.Delta.StopReason
			}
			if e.Usage != nil {
				usage.update(*e.Usage)
			}
		case "message_stop":
			return "", true, nil
		}
		// ping, content_block_stop and event types yet to come: nothing.
		return "", false, nil
	})
	out.Text, out.Usage = text, usage.usage()
	if err != nil {
		return partial(out, started), err
	}
	return out, nil
}

func (p *anthropicProvider) Models(ctx context.Context) ([]string, error) {
	// The list comes in pages; 1000 is the largest page, so one or two
	// requests get it all. The page count is bounded against a server
	// that always says there is more.
	var ids []string
	after := ""
	for range 50 {
		q := url.Values{"limit": {"1000"}}
		if after != "" {
			q.Set("after_id", after)
		}
		var page struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
			HasMore bool   `json:"has_more"`
			LastID  string `json:"last_id"`
		}
		if err := p.call(ctx, "v1/models?"+q.Encode(), nil, &page); err != nil {
			return nil, err
		}
		for _, m := range page.Data {
			ids = append(ids, m.ID)
		}
		if !page.HasMore || page.LastID == "" || page.LastID == after {
			break
		}
		after = page.LastID
	}
	return ids, nil
}

// update takes the counts u carries.
func (a *anthropicUsage) update(u anthropicUsage) {
	for _, f := range []struct{ dst, src **int64 }{
		{&a.InputTokens, &u.InputTokens}, {&a.OutputTokens, &u.OutputTokens},
		{&a.CacheCreationInputTokens, &u.CacheCreationInputTokens}, {&a.CacheReadInputTokens, &u.CacheReadInputTokens},
	} {
		if *f.src != nil {
			*f.dst = *f.src
		}
	}
}

// usage counts every input token in InputTokens, as OpenAI's
// prompt_tokens does: Anthropic's input_tokens leaves out the tokens read
// from the cache and those written to it. CachedTokens are those read from
// the cache. Tokens written to the cache have no field of their own: they
// are input, priced as input (Anthropic bills them at 1.25 times that, or
// twice for the one-hour cache), so a cost is never above the bill by
// them, only below.
func (a anthropicUsage) usage() Usage {
	n := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	return Usage{
		InputTokens:  n(a.InputTokens) + n(a.CacheCreationInputTokens) + n(a.CacheReadInputTokens),
		OutputTokens: n(a.OutputTokens),
		CachedTokens: n(a.CacheReadInputTokens),
	}
}
