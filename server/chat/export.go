package chat

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/copydesk/copydesk/store"
)

// Transcript is a whole conversation, for export: every message of every
// branch in id order, and the ids of the active branch.
type Transcript struct {
	Conversation *store.ChatConversation
	Messages     []Message
	Active       []int64
}

// Export returns a conversation of the caller's with all its messages.
func (s *Service) Export(ctx context.Context, sc store.Scope, id int64) (*Transcript, error) {
	c, err := s.Get(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	t, err := s.tree(ctx, c.ID)
	if err != nil {
		return nil, err
	}
	msgs, err := s.views(ctx, c.ID, t, t.order)
	if err != nil {
		return nil, err
	}
	return &Transcript{Conversation: c, Messages: msgs, Active: t.active(c.CurrentMessageID)}, nil
}

// Markdown writes the active branch as a Markdown document: the title, a
// few facts, then each message under a heading that says who wrote it
// and when; a reply that did not complete says so below it. The other
// branches are left out (the JSON export has them).
func (tr *Transcript) Markdown(w io.Writer) error {
	bw := bufio.NewWriter(w)
	c := tr.Conversation
	title := c.Title
	if title == "" {
		title = "Untitled conversation"
	}
	fmt.Fprintf(bw, "# %s\n\n", oneLine(title))
	switch {
	case c.AgentID != nil:
		fmt.Fprintf(bw, "- Agent: %d\n", *c.AgentID)
	case c.Model != "":
		fmt.Fprintf(bw, "- Model: %s\n", c.Model)
	}
	if c.EnvironmentID != nil {
		fmt.Fprintf(bw, "- Environment: %d\n", *c.EnvironmentID)
	}
	fmt.Fprintf(bw, "- Started: %s\n- Messages: %d shown, %d in all branches\n", stamp(c.CreatedAt), len(tr.Active), len(tr.Messages))
	byID := make(map[int64]Message, len(tr.Messages))
	for _, m := range tr.Messages {
		byID[m.ID] = m
	}
	for _, id := range tr.Active {
		m, ok := byID[id]
		if !ok {
			continue
		}
		who := "User"
		if m.Role == "assistant" {
			who = "Assistant"
			if m.Model != "" {
				who += " (" + oneLine(m.Model) + ")"
			}
		}
		fmt.Fprintf(bw, "\n## %s · %s\n\n%s\n", who, stamp(m.CreatedAt), strings.TrimRight(m.Content, "\n"))
		if m.Status != store.ChatComplete {
			note := m.Status
			if m.Error != "" {
				note += ": " + m.Error
			}
			fmt.Fprintf(bw, "\n> *This reply is %s.*\n", oneLine(note))
		}
	}
	return bw.Flush()
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }

// oneLine keeps a value on its Markdown line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
