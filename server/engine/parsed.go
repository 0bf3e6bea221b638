package engine

import (
	"context"
	"errors"
	"strings"

	"github.com/copydesk/copydesk/server/ai"
)

// Generator is what GenerateParsed needs of the engine.
type Generator interface {
	Generate(ctx context.Context, c Call) (*Result, error)
}

// Caller is what a service that makes model calls needs of the engine:
// the effective settings, the plan of a call (refused as the call would
// be), and the call.
type Caller interface {
	Effective(ctx context.Context, envID *int64) (Effective, error)
	Plan(ctx context.Context, c Call) (provider, model string, err error)
	Generator
}

// Streamer is a Caller that also streams a call's text as it comes (the
// generations of server/generation).
type Streamer interface {
	Caller
	Stream(ctx context.Context, c Call, onDelta func(string) error) (*Result, error)
}

// ParseError is the last reason parse gave when the model's answer did
// not hold twice.
type ParseError struct{ Err error }

func (e *ParseError) Error() string { return e.Err.Error() }
func (e *ParseError) Unwrap() error { return e.Err }

// GenerateParsed asks for an answer that parse accepts. An answer it
// refuses is shown back to the model once, with parse's reason and format
// (how to answer), as models correct themselves well when told what was
// wrong. A second refusal is a *ParseError; an error of the call is
// returned as it is. Each call is metered under c.Source like any other.
func GenerateParsed(ctx context.Context, g Generator, c Call, format string, parse func(text string) error) error {
	for attempt := 1; ; attempt++ {
		res, err := g.Generate(ctx, c)
		if err != nil {
			return err
		}
		perr := parse(res.Text)
		if perr == nil {
			return nil
		}
		if attempt == 2 {
			return &ParseError{Err: perr}
		}
		c.Messages = append(c.Messages, ai.Message{Role: "assistant", Content: res.Text},
			ai.Message{Role: "user", Content: "Your answer could not be used: " + perr.Error() + ". " + format})
	}
}

// JSONObject finds the JSON object in a model's answer: from its first {
// to its last }, so that a code fence or a sentence around it does not
// matter.
func JSONObject(text string) ([]byte, error) {
	start, end := strings.Index(text, "{"), strings.LastIndex(text, "}")
	if start < 0 || end < start {
		return nil, errors.New("the answer holds no JSON object")
	}
	return []byte(text[start : end+1]), nil
}
