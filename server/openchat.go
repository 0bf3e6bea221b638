package server

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/server/chat"
	"github.com/copydesk/copydesk/store"
)

// OpenChat (/api/openchat): conversations of their owner alone (anyone
// else, admins included, gets 404), messages in branches, and replies the
// job runner generates whether or not their requester still watches. The
// rules are server/chat's.
func (s *Server) registerOpenChatRoutes() {
	const tag = "OpenChat"
	const streamNotes = " With stream true the answer is a Server-Sent Events stream instead: `event: message` with the reply " +
		"(status generating), `event: delta` with {\"text\"} pieces, `event: title` with {\"conversation_id\", \"title\"} when the " +
		"conversation got its automatic title, then `event: done` with {\"message\", \"usage\"}: the stored reply, whatever its status " +
		"(complete, incomplete, failed), and what it cost. Every event has an id: a client that loses the stream resumes with " +
		"GET /api/openchat/messages/{id}/stream and Last-Event-ID. A client that goes away does not stop the reply: it is generated " +
		"and stored; POST /api/openchat/messages/{id}/stop stops it. 409 while the conversation generates another reply, or when " +
		"no AI provider is configured."
	s.handle(Route{Method: "GET", Path: "/api/openchat/conversations", Tag: tag, Access: signedIn, List: true,
		Summary: "List your conversations: pinned first, then newest activity first", Query: chatListQuery{},
		Data: chatConversationResponse{},
		Notes: "Only your own. archived=true lists the archived ones instead of the others. q finds conversations whose title " +
			"or any one message (of any branch) holds every word of it, a word's beginning sufficing, regardless of case and accents. " +
			"sort orders by one field alone, pinned or not."}, s.listChatConversations)
	s.handle(Route{Method: "POST", Path: "/api/openchat/conversations", Tag: tag, Access: editorOnly, Status: http.StatusCreated,
		Summary: "Start a conversation", Body: chatConversationRequest{}, Data: chatConversationResponse{}, Errors: []int{409},
		Notes: "With agent_id, the agent's system prompt, credential, model and parameters apply; otherwise model (or the AI " +
			"settings' default model) with the settings' credential and parameters. environment_id is where its usage counts " +
			"(default: the agent's environment, or none). Without a title, the first reply gives it one."}, s.createChatConversation)
	s.handle(Route{Method: "GET", Path: "/api/openchat/conversations/{id}", Tag: tag, Access: signedIn,
		Summary: "Get a conversation", Data: chatConversationResponse{}}, s.getChatConversation)
	s.handle(Route{Method: "PUT", Path: "/api/openchat/conversations/{id}", Tag: tag, Access: editorOnly, Errors: []int{409},
		Summary: "Change a conversation: rename, pin, archive, switch model or agent, show another branch",
		Body:    chatConversationUpdateRequest{}, Data: chatConversationResponse{},
		Notes: "Fields left out keep their values. model (even \"\") replaces the agent; agent_id replaces the model. " +
			"current_message_id shows the branch through that message (see GET .../messages)."}, s.updateChatConversation)
	s.handle(Route{Method: "DELETE", Path: "/api/openchat/conversations/{id}", Tag: tag, Access: editorOnly,
		Summary: "Delete a conversation with its messages (a reply being generated is stopped)", Data: deletedResponse{}}, s.deleteChatConversation)
	s.handle(Route{Method: "GET", Path: "/api/openchat/conversations/{id}/messages", Tag: tag, Access: signedIn, List: true,
		Summary: "List a conversation's messages: its active branch, or all", Query: chatMessagesQuery{}, Data: chatMessageResponse{},
		Notes: "The active branch runs from the first message through the conversation's current_message_id, then down through " +
			"the newest reply at each step: a regenerated reply or an edited message is shown, the one it replaced is kept. " +
			"sibling_ids on each message are the branches at that point; PUT the conversation with current_message_id to show " +
			"another. all=true lists every message of every branch, each after its parent (parent_id)."}, s.listChatMessages)
	s.handle(Route{Method: "POST", Path: "/api/openchat/conversations/{id}/messages", Tag: tag, Access: editorOnly,
		Status: http.StatusCreated, EventStream: true, Errors: []int{409}, Events: chatReplyEvents(false),
		Summary: "Send a message and get the reply", Body: chatSendRequest{}, Data: chatMessageResponse{},
		Notes: "Stores your message after the end of the active branch (or after the reply parent_id), sends the branch's history, " +
			"oldest messages left out as the model's context window needs (trimmed_messages on the reply says how many), and " +
			"answers 201 with the stored reply." + streamNotes}, s.sendChatMessage)
	s.handle(Route{Method: "GET", Path: "/api/openchat/conversations/{id}/export", Tag: tag, Access: signedIn,
		Binary: "text/markdown, application/json", Query: chatExportQuery{},
		Summary: "Download a conversation as Markdown (its active branch) or JSON (every branch)"}, s.exportChatConversation)
	s.handle(Route{Method: "GET", Path: "/api/openchat/messages/{id}", Tag: tag, Access: signedIn,
		Summary: "Get a message", Data: chatMessageResponse{}}, s.getChatMessage)
	s.handle(Route{Method: "PUT", Path: "/api/openchat/messages/{id}", Tag: tag, Access: editorOnly, Status: http.StatusCreated,
		EventStream: true, Errors: []int{409}, Events: chatReplyEvents(false),
		Summary: "Edit a user message: a new branch with the new text and a new reply", Body: chatEditRequest{}, Data: chatMessageResponse{},
		Notes: "Adds a sibling of the message with the new content, and a reply to it, which become the active branch; the " +
			"old message and its replies stay on their branch. Answers 201 with the new reply." + streamNotes}, s.editChatMessage)
	s.handle(Route{Method: "DELETE", Path: "/api/openchat/messages/{id}", Tag: tag, Access: editorOnly, Errors: []int{409},
		Summary: "Delete a message and every message below it", Data: chatDeletedResponse{},
		Notes: "409 while the conversation generates a reply."}, s.deleteChatMessage)
	s.handle(Route{Method: "POST", Path: "/api/openchat/messages/{id}/regenerate", Tag: tag, Access: editorOnly,
		Status: http.StatusCreated, EventStream: true, Errors: []int{409}, Events: chatReplyEvents(false),
		Summary: "Generate another reply beside this one", Body: chatRegenerateRequest{}, Data: chatMessageResponse{},
		Notes: "For a reply: a new reply to the same user message (for a user message: a new reply to it). Both are kept; the new " +
			"one is shown. Answers 201 with the new reply." + streamNotes}, s.regenerateChatMessage)
	s.handle(Route{Method: "POST", Path: "/api/openchat/messages/{id}/stop", Tag: tag, Access: editorOnly, Errors: []int{409},
		Summary: "Stop a reply being generated, keeping what it has as incomplete", Data: chatMessageResponse{},
		Notes: "Answers with the stored reply once its generation has stopped; 409 when it is not being generated."}, s.stopChatMessage)
	s.handle(Route{Method: "GET", Path: "/api/openchat/messages/{id}/stream", Tag: tag, Access: signedIn, Binary: "text/event-stream",
		Events:  chatReplyEvents(true),
		Summary: "Server-Sent Events of a reply: resume a stream with Last-Event-ID",
		Notes: "The events of POST .../messages with stream true. With Last-Event-ID, the events after it (or, when they are no " +
			"longer kept, `event: snapshot` with {\"message\", \"text\"} so far), then the live ones. A reply no longer being " +
			"generated answers its `done` event and the stream ends. 422 for a user message."}, s.streamChatMessage)
}

// ---- bodies and answers ----

type chatConversationRequest struct {
	Title         string `json:"title" binding:"max=200" doc:"empty: an automatic title after the first reply"`
	AgentID       *int64 `json:"agent_id" binding:"omitempty,gt=0" doc:"the agent's system prompt, credential, model and parameters apply"`
	Model         string `json:"model" binding:"max=200" doc:"without an agent: the model (empty: the AI settings' default)"`
	EnvironmentID *int64 `json:"environment_id" binding:"omitempty,gt=0" doc:"where its usage counts; default: the agent's environment, or none"`
	Pinned        bool   `json:"pinned"`
}

type chatConversationUpdateRequest struct {
	Title            *string `json:"title" binding:"omitempty,min=1,max=200"`
	Model            *string `json:"model" binding:"omitempty,max=200" doc:"replaces the agent (\"\": the AI settings' default model)"`
	AgentID          *int64  `json:"agent_id" binding:"omitempty,gt=0" doc:"replaces the model"`
	Archived         *bool   `json:"archived"`
	Pinned           *bool   `json:"pinned"`
	CurrentMessageID *int64  `json:"current_message_id" binding:"omitempty,gt=0" doc:"show the branch through this message"`
}

type chatConversationResponse struct {
	ID               int64     `json:"id"`
	UserID           int64     `json:"user_id"`
	EnvironmentID    *int64    `json:"environment_id"`
	AgentID          *int64    `json:"agent_id"`
	Model            string    `json:"model" doc:"the conversation's own model; empty with an agent or for the AI settings' default"`
	Title            string    `json:"title"`
	Archived         bool      `json:"archived"`
	Pinned           bool      `json:"pinned"`
	CurrentMessageID *int64    `json:"current_message_id" doc:"the active branch runs through it; null: through the newest message"`
	ActivityAt       Timestamp `json:"activity_at" doc:"when its last message was written"`
	CreatedAt        Timestamp `json:"created_at"`
	UpdatedAt        Timestamp `json:"updated_at"`
}

func chatConversationJSON(c *store.ChatConversation) chatConversationResponse {
	return chatConversationResponse{ID: c.ID, UserID: c.UserID, EnvironmentID: c.EnvironmentID, AgentID: c.AgentID, Model: c.Model,
		Title: c.Title, Archived: c.Archived, Pinned: c.Pinned, CurrentMessageID: c.CurrentMessageID,
		ActivityAt: Timestamp(c.ActivityAt), CreatedAt: Timestamp(c.CreatedAt), UpdatedAt: Timestamp(c.UpdatedAt)}
}

type chatListQuery struct {
	pageQuery
	Q             string `form:"q" binding:"max=200" doc:"words the title or a message holds"`
	Archived      bool   `form:"archived" doc:"true: the archived conversations instead of the others"`
	Pinned        *bool  `form:"pinned"`
	EnvironmentID *int64 `form:"environment_id" binding:"omitempty,gt=0"`
	Sort          string `form:"sort" binding:"omitempty,oneof=activity_at -activity_at created_at -created_at title -title" doc:"default: pinned first, then newest activity (-activity_at); a sort orders by its field alone"`
}

type chatMessagesQuery struct {
	pageQuery
	All bool `form:"all" doc:"true: every message of every branch, not only the active branch"`
}

type chatExportQuery struct {
	Format string `form:"format" binding:"omitempty,oneof=md json" doc:"md (default): the active branch as Markdown; json: the conversation and every message"`
}

type chatSendRequest struct {
	Content  string `json:"content" binding:"required,max=100000"`
	ParentID *int64 `json:"parent_id" binding:"omitempty,gt=0" doc:"the reply this message follows; default: the end of the active branch"`
	Stream   bool   `json:"stream"`
}

type chatEditRequest struct {
	Content string `json:"content" binding:"required,max=100000"`
	Stream  bool   `json:"stream"`
}

type chatRegenerateRequest struct {
	Stream bool `json:"stream"`
}

type chatMessageResponse struct {
	ID             int64  `json:"id"`
	ConversationID int64  `json:"conversation_id"`
	ParentID       *int64 `json:"parent_id" doc:"the message it answers or follows; null for a first message"`
	Role           string `json:"role" enum:"user,assistant"`
	Content        string `json:"content"`
	Status         string `json:"status" enum:"generating,complete,incomplete,failed" doc:"incomplete: stopped, or cut off after some text"`
	outcomeResponse
	UsageEstimated  bool       `json:"usage_estimated" doc:"the stream was cut off before the provider reported its usage"`
	TrimmedMessages int        `json:"trimmed_messages" doc:"how many of the oldest messages were left out of the prompt to fit the context window"`
	SiblingIDs      []int64    `json:"sibling_ids" doc:"the messages with the same parent, this one included, oldest first: the branches here"`
	CreatedAt       Timestamp  `json:"created_at"`
	FinishedAt      *Timestamp `json:"finished_at"`
}

func chatMessageJSON(m chat.Message) chatMessageResponse {
	return chatMessageResponse{ID: m.ID, ConversationID: m.ConversationID, ParentID: m.ParentID, Role: m.Role, Content: m.Content,
		Status: m.Status, outcomeResponse: outcomeJSON(m.Error, m.Usage),
		UsageEstimated: m.UsageEstimated, TrimmedMessages: m.TrimmedMessages, SiblingIDs: m.SiblingIDs,
		CreatedAt: Timestamp(m.CreatedAt), FinishedAt: (*Timestamp)(m.FinishedAt)}
}

type chatDeletedResponse struct {
	ID      int64 `json:"id"`
	Deleted int64 `json:"deleted" doc:"how many messages went: this one and every one below it"`
}

type chatUsageResponse struct {
	InputTokens     int64    `json:"input_tokens"`
	OutputTokens    int64    `json:"output_tokens"`
	CostUSD         *float64 `json:"cost_usd"`
	Estimated       bool     `json:"estimated"`
	TrimmedMessages int      `json:"trimmed_messages"`
}

// chatDoneResponse is the data of a reply's `done` event.
type chatDoneResponse struct {
	Message chatMessageResponse `json:"message"`
	Usage   chatUsageResponse   `json:"usage"`
}

// chatSnapshotResponse is what a watcher that joins a reply late gets
// instead of the events it missed.
type chatSnapshotResponse struct {
	Message chatMessageResponse `json:"message"`
	Text    string              `json:"text"`
	Title   string              `json:"title,omitempty"`
	Usage   *chatUsageResponse  `json:"usage,omitempty"`
	Detail  string              `json:"detail,omitempty"`
}

// chatTranscriptResponse is the JSON export.
type chatTranscriptResponse struct {
	Conversation chatConversationResponse `json:"conversation"`
	ActiveBranch []int64                  `json:"active_branch"`
	Messages     []chatMessageResponse    `json:"messages"`
}

func chatUsageJSON(u chat.Usage) chatUsageResponse {
	return chatUsageResponse{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CostUSD: store.USDOf(u.Cost), Estimated: u.Estimated,
		TrimmedMessages: u.TrimmedMessages}
}

// encodeChat renders a reply's stream events as the API does.
func encodeChat(v any) any {
	switch d := v.(type) {
	case chat.Message:
		return chatMessageJSON(d)
	case chat.Done:
		return chatDoneResponse{Message: chatMessageJSON(d.Message), Usage: chatUsageJSON(d.Usage)}
	case chat.Snapshot:
		out := chatSnapshotResponse{Message: chatMessageJSON(d.Message), Text: d.Text, Title: d.Title, Detail: d.Detail}
		if d.Usage != nil {
			u := chatUsageJSON(*d.Usage)
			out.Usage = &u
		}
		return out
	}
	return v
}

// ---- conversations ----

func (s *Server) listChatConversations(c *gin.Context) {
	var q chatListQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	pg := q.page()
	list, total, err := s.chat.List(c.Request.Context(), scope(c),
		chat.ListFilter{Archived: q.Archived, Pinned: q.Pinned, EnvironmentID: q.EnvironmentID, Q: q.Q, Sort: sortOf(q.Sort)}, pg)
	if err != nil {
		fail(c, err)
		return
	}
	respondList(c, list, total, pg, chatConversationJSON, "conversations")
}

func (s *Server) createChatConversation(c *gin.Context) {
	var req chatConversationRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	conv, err := s.chat.Create(c.Request.Context(), scope(c), chat.NewConversation{Title: req.Title, AgentID: req.AgentID,
		Model: req.Model, EnvironmentID: req.EnvironmentID, Pinned: req.Pinned})
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusCreated, chatConversationJSON(conv), "conversation created")
}

func (s *Server) getChatConversation(c *gin.Context) {
	one(c, "id", s.chat.Get, chatConversationJSON, "conversation")
}

func (s *Server) updateChatConversation(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var req chatConversationUpdateRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	conv, err := s.chat.Update(c.Request.Context(), scope(c), id, chat.Patch{Title: req.Title, Model: req.Model, AgentID: req.AgentID,
		Archived: req.Archived, Pinned: req.Pinned, CurrentMessageID: req.CurrentMessageID})
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, chatConversationJSON(conv), "conversation updated")
}

func (s *Server) deleteChatConversation(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	if err := s.chat.Delete(c.Request.Context(), scope(c), id); err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, deletedResponse{ID: id, Deleted: true}, "conversation deleted")
}

// exportChatConversation renders the export into a temporary file under
// the request's hold, then sends it (see exportUsage).
func (s *Server) exportChatConversation(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var q chatExportQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	tr, err := s.chat.Export(c.Request.Context(), scope(c), id)
	if err != nil {
		fail(c, err)
		return
	}
	ext, ctype := "md", "text/markdown; charset=utf-8"
	render := tr.Markdown
	if q.Format == "json" {
		ext, ctype = "json", "application/json"
		render = func(w io.Writer) error {
			b, err := encodeJSON(chatTranscriptJSON(tr))
			if err == nil {
				_, err = w.Write(b)
			}
			return err
		}
	}
	f, size, err := s.spool(render)
	if err != nil {
		fail(c, err)
		return
	}
	sendSpooled(c, f, size, ctype, fmt.Sprintf("conversation-%d.%s", id, ext))
}

func chatTranscriptJSON(tr *chat.Transcript) chatTranscriptResponse {
	out := chatTranscriptResponse{Conversation: chatConversationJSON(tr.Conversation), ActiveBranch: tr.Active,
		Messages: make([]chatMessageResponse, len(tr.Messages))}
	for i, m := range tr.Messages {
		out.Messages[i] = chatMessageJSON(m)
	}
	return out
}

// ---- messages ----

func (s *Server) listChatMessages(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var q chatMessagesQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	pg := q.page()
	list, total, err := s.chat.Messages(c.Request.Context(), scope(c), id, q.All, pg)
	if err != nil {
		fail(c, err)
		return
	}
	respondList(c, list, total, pg, chatMessageJSON, "messages")
}

func (s *Server) getChatMessage(c *gin.Context) {
	oneSaying(c, "id", s.chat.Message, chatMessageJSON, func(m chat.Message) string { return "message " + m.Status })
}

func (s *Server) sendChatMessage(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var req chatSendRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	reply, err := s.chat.Send(c.Request.Context(), scope(c), id, chat.SendInput{Content: req.Content, ParentID: req.ParentID, Stream: req.Stream})
	s.answerReply(c, reply, err, req.Stream)
}

func (s *Server) editChatMessage(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var req chatEditRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	reply, err := s.chat.Edit(c.Request.Context(), scope(c), id, req.Content, req.Stream)
	s.answerReply(c, reply, err, req.Stream)
}

func (s *Server) regenerateChatMessage(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var req chatRegenerateRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	reply, err := s.chat.Regenerate(c.Request.Context(), scope(c), id, req.Stream)
	s.answerReply(c, reply, err, req.Stream)
}

func (s *Server) deleteChatMessage(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	n, err := s.chat.DeleteMessage(c.Request.Context(), scope(c), id)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, chatDeletedResponse{ID: id, Deleted: n}, "messages deleted")
}

func (s *Server) stopChatMessage(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	if err := s.chat.Stop(c.Request.Context(), scope(c), id); err != nil {
		fail(c, err)
		return
	}
	s.awaitReply(c, id, http.StatusOK)
}

// streamChatMessage serves a reply's events: live while it is generated
// (resuming after Last-Event-ID), its stored ending once it is not.
func (s *Server) streamChatMessage(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	m, err := s.chat.Message(c.Request.Context(), scope(c), id)
	if err == nil && m.Role != "assistant" {
		err = store.Invalid("message %d is a user message: only a reply has a stream", m.ID)
	}
	if err != nil {
		fail(c, err)
		return
	}
	o := s.streamOptions(c)
	o.Encode = encodeChat
	if m.Finished() {
		// A topic that still lingers would answer too, but the stored
		// reply is the whole truth either way.
		s.serveFinished(c, o, chat.FinishedEvent(m))
		return
	}
	s.serve(c, chat.Topic(m.ID), o)
}

// answerReply answers a request that queued a reply: its stream, or the
// reply once stored (awaitReply).
func (s *Server) answerReply(c *gin.Context, reply chat.Message, err error, streamed bool) {
	if err != nil {
		fail(c, err)
		return
	}
	if streamed {
		o := s.streamOptions(c)
		o.Encode = encodeChat
		s.serve(c, chat.Topic(reply.ID), o)
		return
	}
	s.awaitReply(c, reply.ID, http.StatusCreated)
}

// awaitReply answers with a reply once its generation has ended. The job
// generates it, so the request lets go of the database while it waits;
// a client that goes away meanwhile leaves the reply to finish.
func (s *Server) awaitReply(c *gin.Context, id int64, status int) {
	done, err := s.chat.Done(c.Request.Context(), id)
	if err != nil {
		fail(c, err)
		return
	}
	letGo(c)
	select {
	case <-done:
	case <-c.Request.Context().Done():
		return
	}
	var m chat.Message
	err = s.held(c.Request.Context(), func(ctx context.Context) (err error) {
		m, err = s.chat.Message(ctx, scope(c), id)
		return err
	})
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, status, chatMessageJSON(m), "reply "+m.Status)
}
