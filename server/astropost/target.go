package astropost

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/copydesk/copydesk/server/heading"
	"github.com/copydesk/copydesk/server/posttarget"
	"github.com/copydesk/copydesk/store"
)

// Target is Astro as a post target (server/posttarget): a draft is a file
// with draft: true in its front matter, and publishing clears the flag.
func (s *Service) Target() posttarget.Target { return target{s} }

type target struct{ s *Service }

func (target) Kind() string { return store.PostAstro }

// Ready: the environment has an Astro project to write to.
func (target) Ready(env *store.Environment) error {
	if env.Configuration.Astro == nil || env.Configuration.Astro.ProjectPath == "" {
		return noAstro(env)
	}
	return nil
}

// Draft writes a draft post; without a description, its first paragraph
// shortened to a search snippet is one.
func (t target) Draft(ctx context.Context, sc store.Scope, d posttarget.Draft) (*posttarget.Post, error) {
	desc := d.Description
	if desc == "" {
		desc = snippet(d.Body)
	}
	p, err := t.s.Create(ctx, sc, Input{EnvironmentID: d.EnvironmentID, Title: d.Title, Description: desc, Body: d.Body, Draft: true,
		PostOrigin: d.PostOrigin})
	if err != nil {
		return nil, err
	}
	return post(p, fmt.Sprintf("Astro post %d written as %s, a draft", p.ID, p.FileName())), nil
}

func (t target) Get(ctx context.Context, sc store.Scope, id int64) (*posttarget.Post, error) {
	p, err := t.s.Get(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	return post(p, ""), nil
}

// Publish clears the draft flag for status publish; any other status
// leaves the file a draft (Skipped), since Astro has no other state.
func (t target) Publish(ctx context.Context, sc store.Scope, id int64, status string) (*posttarget.Post, error) {
	p, err := t.s.Get(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	if status != "publish" {
		out := post(p, "left as a draft (draft: true in its front matter)")
		out.Skipped = true
		return out, nil
	}
	if p.Draft {
		no := false
		if p, err = t.s.Update(ctx, sc, p.ID, Change{Draft: &no}); err != nil {
			return nil, err
		}
	}
	return post(p, fmt.Sprintf("published: %s no longer a draft", p.FileName())), nil
}

// Retryable: a file that could not be written is not mended by waiting.
func (target) Retryable(error) bool { return false }

func post(p *store.AstroPost, detail string) *posttarget.Post {
	return &posttarget.Post{Kind: store.PostAstro, ID: p.ID, Title: p.Title, Astro: p, Detail: detail}
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
