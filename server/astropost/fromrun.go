package astropost

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/copydesk/copydesk/server/heading"
	"github.com/copydesk/copydesk/store"
)

// CreateFromRun turns a succeeded run's output into a draft post in the
// run's environment (save-as-post with target astro). Without a title the
// output's first Markdown heading is the title; a level-1 heading that
// gave it leaves the body, since the blog layout shows the title itself.
// The description is the first paragraph, shortened to a search snippet.
// The post records the run.
func (s *Service) CreateFromRun(ctx context.Context, sc store.Scope, runID int64, title string) (*store.AstroPost, error) {
	run, err := s.runs.Run(ctx, sc, runID)
	if err != nil {
		return nil, err
	}
	if run.Status != store.RunSucceeded {
		return nil, store.Conflict("run %d is %s: only the output of a succeeded run can be saved as a post", run.ID, run.Status)
	}
	if run.EnvironmentID == nil {
		return nil, store.Invalid("run %d ran outside any environment, so there is no Astro project to write to: run the agent in an environment", run.ID)
	}
	if strings.TrimSpace(run.Output) == "" {
		return nil, store.Conflict("run %d has no output to save", run.ID)
	}
	return s.createFromText(ctx, sc, run.Output, title, "the run's output", Input{EnvironmentID: *run.EnvironmentID, RunID: &run.ID})
}

// CreateFromLive turns the last output of a live session (its newest
// succeeded generation) into a draft post in the session's environment,
// as CreateFromRun does a run's. The post records the generation.
func (s *Service) CreateFromLive(ctx context.Context, sc store.Scope, sessionID int64, title string) (*store.AstroPost, error) {
	sess, g, err := s.lives.LastOutput(ctx, sc, sessionID)
	if err != nil {
		return nil, err
	}
	return s.createFromText(ctx, sc, g.Output, title, "the session's last output",
		Input{EnvironmentID: sess.EnvironmentID, LiveGenerationID: &g.ID})
}

// createFromText makes a draft of a generated Markdown text (what names it
// in an error): its first heading is the title unless one is given, its
// first paragraph the description.
func (s *Service) createFromText(ctx context.Context, sc store.Scope, text, title, what string, in Input) (*store.AstroPost, error) {
	body := text
	title = strings.TrimSpace(title)
	if title == "" {
		t, rest, ok := heading.Title(text)
		if !ok {
			return nil, store.Invalid("title: %s has no Markdown heading to take the title from: give a title", what)
		}
		title, body = t, rest
	}
	in.Title, in.Description, in.Body, in.Draft = title, snippet(body), body, true
	return s.Create(ctx, sc, in)
}

// CreateFromGeneration writes a succeeded archetype generation's article
// as a draft post in its environment: its title (unless one is given),
// description and Markdown body. The post records the generation.
func (s *Service) CreateFromGeneration(ctx context.Context, sc store.Scope, id int64, title string) (*store.AstroPost, error) {
	run, err := s.gens.Succeeded(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(title) == "" {
		title = run.Title
	}
	return s.Create(ctx, sc, Input{EnvironmentID: run.EnvironmentID, Title: title, Description: run.Description, Body: run.Body,
		Draft: true, CIERunID: &run.ID})
}

// maxSnippet is the length of a description made from the body: what
// search results show.
const maxSnippet = 160

// snippet is the first paragraph of Markdown that is prose (not a heading,
// a list, a quote, a table, code or an image), with its Markdown marks
// left as they are and its lines joined, cut at a word to maxSnippet
// characters.
func snippet(md string) string {
	fence := ""
	var para []string
	for _, raw := range strings.Split(md, "\n") {
		line := strings.TrimSpace(raw)
		if f := heading.Fence(line); f != "" || fence != "" {
			if fence == "" {
				fence = f
			} else if strings.HasPrefix(line, fence) {
				fence = ""
			}
			if len(para) > 0 {
				break
			}
			continue
		}
		if line == "" {
			if len(para) > 0 {
				break
			}
			continue
		}
		if strings.ContainsAny(line[:1], "#-*+>|!<") || (line[0] >= '0' && line[0] <= '9' && strings.Contains(line, ". ")) {
			if len(para) > 0 {
				break
			}
			continue
		}
		para = append(para, line)
	}
	s := strings.Join(para, " ")
	if utf8.RuneCountInString(s) <= maxSnippet {
		return s
	}
	r := []rune(s)[:maxSnippet-1]
	cut := string(r)
	if i := strings.LastIndexByte(cut, ' '); i > maxSnippet/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,;:.") + "…"
}
