package chat

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/copydesk/copydesk/server/ai"
	"github.com/copydesk/copydesk/server/engine"
	"github.com/copydesk/copydesk/server/generation"
	"github.com/copydesk/copydesk/server/stream"
	"github.com/copydesk/copydesk/store"
)

// Replies. Sending a message records it with its reply, status generating,
// and the reply's job, in one transaction; the job runner generates the
// reply. The job does not belong to any request: it streams every reply
// from the provider and publishes it on the reply's topic (Topic) of the
// event-stream broker, which the request serves when it asked for a
// stream, and which any later request of the owner serves again (resuming
// from Last-Event-ID). A client that goes away leaves the reply to finish
// and be stored; stopping it (Stop) cancels the job, which stores what it
// has as incomplete.

// ReplyJob is the job kind that generates a reply, once: a person waits
// for it, and a retry behind their back would cost twice.
const ReplyJob = "chat.reply"

// Events of a reply's topic: `message` with the reply as it starts
// (status generating), `delta` pieces of text, `title` when the
// conversation got its automatic title, then `done` with the stored reply
// and its usage, whatever its status; `error` only when the ending could
// not be stored (the reply's stored state then says what it is). A
// watcher that joins late gets `snapshot` instead of what it missed.
const (
	EventMessage  = "message"
	EventDelta    = generation.EventDelta
	EventTitle    = "title"
	EventDone     = generation.EventDone
	EventError    = generation.EventError
	EventSnapshot = generation.EventSnapshot
)

// Topic is the event-stream topic of a reply.
func Topic(messageID int64) string { return "chat/messages/" + strconv.FormatInt(messageID, 10) }

// Delta is the data of a `delta` event.
type Delta = generation.Delta

// Title is the data of a `title` event.
type Title struct {
	ConversationID int64  `json:"conversation_id"`
	Title          string `json:"title"`
}

// Failure is the data of an `error` event.
type Failure = generation.Failure

// Usage is what a reply cost.
type Usage struct {
	InputTokens     int64
	OutputTokens    int64
	Cost            *store.Micros
	Estimated       bool
	TrimmedMessages int
}

// UsageOf is a stored reply's usage.
func UsageOf(m *store.ChatMessage) Usage {
	return Usage{InputTokens: m.InputTokens, OutputTokens: m.OutputTokens, Cost: m.Cost, Estimated: m.UsageEstimated,
		TrimmedMessages: m.TrimmedMessages}
}

// Done is the data of a `done` event.
type Done struct {
	Message Message
	Usage   Usage
}

// Snapshot is the data of a `snapshot` event: the reply as last published
// (the stored one once `done` was), the text so far, the conversation's
// new title if it got one, the usage once done, and the detail of an
// `error`.
type Snapshot struct {
	Message Message
	Text    string
	Title   string
	Usage   *Usage
	Detail  string
}

// replayEvents is how many events of a reply its topic keeps for
// Last-Event-ID: enough for the deltas of most replies, so that a client
// that reconnects gets exactly what it missed rather than a snapshot.
const replayEvents = 4096

// registerJobs registers the reply kind (server/generation). Its one job
// kind serves a reply streamed to its requester and one that is not: the
// payload says whether the job waits for the requester to subscribe. A
// stopped reply keeps what it holds, as incomplete.
func (s *Service) registerJobs() {
	s.replies = &generation.Kind[*store.ChatMessage]{Name: "reply", Streamed: ReplyJob, Key: "message_id", AskWait: true,
		Load:   s.db.ChatMessageByID,
		Start:  func(context.Context, int64) (bool, error) { return true, nil }, // generating from the start
		Finish: s.db.FinishChatMessage,
		ID:     func(m *store.ChatMessage) int64 { return m.ID },
		Call:   s.reply,
		After: func(ctx context.Context, f generation.Feed, m *store.ChatMessage) {
			if m.Status != store.ChatComplete {
				return
			}
			if conv, err := s.db.ChatConversationByID(ctx, m.ConversationID); err == nil && conv.Title == "" {
				s.autoTitle(ctx, f, conv, m)
			}
		},
		Released:        s.finished,
		CancelledStatus: store.ChatIncomplete, CancelledWord: "stopped", NotBegun: "stopped before it began",
		Deleted: "the conversation was deleted",
		Topic:   Topic,
		Begin: func(ctx context.Context, m *store.ChatMessage) (stream.Event, bool) {
			v, err := s.view(ctx, m)
			return stream.Event{Name: EventMessage, Data: v}, err == nil
		},
		Final: s.doneEvent,
		Decode: func(name string, data []byte) (any, bool, error) {
			if name != EventTitle {
				return nil, false, nil
			}
			var t Title
			err := json.Unmarshal(data, &t)
			return t, true, err
		},
		Snapshot: func() stream.Snapshot { return &snapshot{} },
		Replay:   replayEvents,
		Jobs:     s.jobs, Events: s.events, Log: s.log}
	s.replies.Register()
}

// reply generates a reply in its conversation.
func (s *Service) reply(ctx context.Context, reply *store.ChatMessage, f generation.Feed) (store.ChatOutcome, error) {
	conv, err := s.db.ChatConversationByID(ctx, reply.ConversationID)
	if err != nil {
		return store.ChatOutcome{Status: store.ChatFailed, Error: store.Message(err)}, err
	}
	return s.generate(ctx, conv, reply, f.Delta)
}

// generate sends the history of the reply's branch, trimmed oldest first
// to the model's context window, and streams the reply, handing each
// piece to onDelta. The outcome holds what was generated, however the
// call ended.
func (s *Service) generate(ctx context.Context, conv *store.ChatConversation, reply *store.ChatMessage, onDelta func(string) error) (store.ChatOutcome, error) {
	o := store.ChatOutcome{Status: store.ChatFailed}
	failed := func(err error) (store.ChatOutcome, error) {
		o.Error = store.Message(err)
		return o, err
	}
	if reply.ParentID == nil {
		return failed(store.Invalid("the reply answers no message"))
	}
	t, err := s.tree(ctx, conv.ID)
	if err != nil {
		return failed(err)
	}
	msgs, err := s.db.ChatMessagesByIDs(ctx, conv.ID, t.ancestors(*reply.ParentID))
	if err != nil {
		return failed(err)
	}
	call, err := s.call(ctx, conv, nil)
	if err != nil {
		return failed(err)
	}
	_, model, err := s.engine.Plan(ctx, call)
	if err != nil {
		return failed(err)
	}
	eff, err := s.engine.Effective(ctx, conv.EnvironmentID)
	if err != nil {
		return failed(err)
	}
	maxOut := eff.MaxOutputTokens
	if call.MaxTokens > 0 {
		maxOut = call.MaxTokens
	}
	call.Messages, o.Trimmed = engine.Trim(call.System, history(msgs), engine.PromptBudget(eff.ContextWindow(model), maxOut))
	o.Model = model
	var text strings.Builder
	res, err := s.engine.Stream(ctx, call, func(piece string) error {
		text.WriteString(piece)
		return onDelta(piece)
	})
	o.Output = text.String()
	generation.Usage(&o, res)
	switch {
	case err == nil:
		o.Status = store.ChatComplete
	case o.Output != "":
		o.Status, o.Error = store.ChatIncomplete, store.Message(err)
	default:
		o.Error = store.Message(err)
	}
	return o, err
}

// history is the prompt of a branch: its user messages and the replies
// that hold text (a failed or empty one says nothing to the model).
func history(msgs []*store.ChatMessage) []ai.Message {
	out := make([]ai.Message, 0, len(msgs))
	for _, m := range msgs {
		if m.Role == "user" || m.Status != store.ChatGenerating && strings.TrimSpace(m.Content) != "" {
			out = append(out, ai.Message{Role: m.Role, Content: m.Content})
		}
	}
	return out
}

// call is the engine call of a conversation, without its messages: the
// agent's system prompt, credential, model and parameters when it has
// one, its model under the AI settings otherwise. With sc (a request),
// the agent must still be one the caller may use.
func (s *Service) call(ctx context.Context, c *store.ChatConversation, sc *store.Scope) (engine.Call, error) {
	call := engine.Call{Source: "chat", UserID: &c.UserID, EnvironmentID: c.EnvironmentID, Model: c.Model}
	if c.AgentID == nil {
		return call, nil
	}
	ag, err := s.db.AgentByID(ctx, *c.AgentID)
	if err != nil {
		return call, err
	}
	if sc != nil && !ag.VisibleIn(*sc) {
		return call, store.Conflict("agent %d is no longer available to you: choose another with PUT /api/openchat/conversations/%d", ag.ID, c.ID)
	}
	if !ag.IsActive {
		return call, store.Conflict("agent %d is not active: set is_active to chat with it", ag.ID)
	}
	generation.AsAgent(&call, ag)
	call.System = ag.SystemPrompt
	return call, nil
}

// ---- the automatic title ----

// titleTokens bounds the title's generation.
const titleTokens = 40

const titleSystem = "You name conversations. Answer with a title of at most six words for the conversation you are shown, " +
	"in its language, without quotes or a final period, and nothing else."

// autoTitle gives a conversation without a title one after its first
// complete reply: a short generation (usage source chat, like the reply),
// or the start of the user's message when that fails.
func (s *Service) autoTitle(ctx context.Context, f generation.Feed, conv *store.ChatConversation, reply *store.ChatMessage) {
	question := ""
	if reply.ParentID != nil {
		if q, err := s.db.ChatMessageByID(ctx, *reply.ParentID); err == nil {
			question = q.Content
		}
	}
	title := ""
	if call, err := s.call(ctx, conv, nil); err == nil {
		call.System, call.MaxTokens = titleSystem, titleTokens
		call.Messages = []ai.Message{{Role: "user", Content: "User: " + clip(question, 2000) + "\n\nAssistant: " + clip(reply.Content, 2000)}}
		if res, err := s.engine.Generate(ctx, call); err == nil {
			title = cleanTitle(res.Text)
		} else if ctx.Err() == nil {
			s.log.Warn("chat: automatic title failed; the message's start is the title", "conversation", conv.ID, "err", err)
		}
	}
	if title == "" {
		title = cleanTitle(strings.Join(strings.Fields(question), " "))
	}
	if title == "" {
		return
	}
	set, err := s.db.SetChatTitle(context.WithoutCancel(ctx), conv.ID, title)
	if err != nil {
		s.log.Error("chat: store the automatic title", "conversation", conv.ID, "err", err)
		return
	}
	if set {
		f.Send(EventTitle, Title{ConversationID: conv.ID, Title: title})
	}
}

// cleanTitle makes a title of a model's answer (or of a message): its first
// line, without markup, quotes, a "Title:" label or a final period, on one
// line of at most 80 characters, cut at a word.
func cleanTitle(s string) string {
	for line := range strings.Lines(s) {
		if line = strings.TrimSpace(line); line != "" {
			s = line
			break
		}
	}
	s = strings.TrimSpace(strings.Join(strings.Fields(s), " "))
	if len(s) >= 6 && strings.EqualFold(s[:6], "title:") {
		s = strings.TrimSpace(s[6:])
	}
	s = strings.Trim(s, "*#_ ")
	if r := []rune(s); len(r) >= 2 && strings.ContainsRune("\"'`“”‘’«»", r[0]) && strings.ContainsRune("\"'`“”‘’«»", r[len(r)-1]) {
		s = strings.TrimSpace(string(r[1 : len(r)-1]))
	}
	s = strings.TrimRight(s, ".")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r >= 0x7f && r <= 0x9f || r >= '\u202a' && r <= '\u202e' || r >= '\u2066' && r <= '\u2069' {
			return -1
		}
		return r
	}, s)
	const most = 80
	if utf8.RuneCountInString(s) <= most {
		return s
	}
	cut := string([]rune(s)[:most])
	if i := strings.LastIndexByte(cut, ' '); i > most/2 {
		cut = cut[:i]
	}
	return strings.TrimSpace(cut) + "…"
}

// clip keeps the first n characters of s.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// ---- events ----

// doneEvent is the final event of a stored reply.
func (s *Service) doneEvent(ctx context.Context, m *store.ChatMessage) stream.Event {
	v, err := s.view(ctx, m)
	if err != nil {
		v = Message{ChatMessage: m, SiblingIDs: []int64{m.ID}}
	}
	return stream.Event{Name: EventDone, Data: Done{Message: v, Usage: UsageOf(m)}}
}

// snapshot folds a reply's events into what a late watcher needs (see
// stream.Snapshot).
type snapshot struct {
	msg    Message
	text   []byte
	title  string
	usage  *Usage
	detail string
}

func (x *snapshot) Apply(ev stream.Event) {
	switch d := ev.Data.(type) {
	case Message:
		x.msg = d
	case Delta:
		x.text = append(x.text, d.Text...)
	case Title:
		x.title = d.Title
	case Done:
		x.msg, x.usage = d.Message, &d.Usage
	case Failure:
		x.detail = d.Detail
	}
}

func (x *snapshot) Event() (stream.Event, bool) {
	if x.msg.ChatMessage == nil {
		return stream.Event{}, false
	}
	return stream.Event{Name: EventSnapshot, Data: Snapshot{Message: x.msg, Text: string(x.text), Title: x.title, Usage: x.usage,
		Detail: x.detail}}, true
}

// FinishedEvent is the stream of a reply no longer being generated, whose
// topic is no longer kept: its stored outcome as one `done` event.
func FinishedEvent(m Message) stream.Event {
	return stream.Event{Name: EventDone, Data: Done{Message: m, Usage: UsageOf(m.ChatMessage)}}
}
