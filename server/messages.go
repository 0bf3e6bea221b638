package server

import (
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/store"
)

// The messages group (/api/messages): direct messages between users. Each
// side sees a message until it deletes it for itself; nobody sees a message
// they neither sent nor received (404).
func (s *Server) registerMessageRoutes() {
	const tag = "Messages"
	s.handle(Route{Method: "POST", Path: "/api/messages", Tag: tag, Access: signedIn, Status: http.StatusCreated,
		Summary: "Send a message", Body: messageRequest{}, Data: messageResponse{},
		Notes: "The recipient must be another active user (else 422) and gets a message.received notification."}, s.sendMessage)
	s.handle(Route{Method: "GET", Path: "/api/messages/inbox", Tag: tag, Access: signedIn, List: true,
		Summary: "Messages you received, newest first", Query: inboxQuery{}, Data: messageResponse{}}, s.inbox)
	s.handle(Route{Method: "GET", Path: "/api/messages/sent", Tag: tag, Access: signedIn, List: true,
		Summary: "Messages you sent, newest first", Query: pageQuery{}, Data: messageResponse{}}, s.sentMessages)
	s.handle(Route{Method: "GET", Path: "/api/messages/conversations", Tag: tag, Access: signedIn, List: true,
		Summary: "One row per person you exchanged messages with", Query: pageQuery{}, Data: conversationResponse{}}, s.conversations)
	s.handle(Route{Method: "GET", Path: "/api/messages/conversations/{user_id}", Tag: tag, Access: signedIn, List: true,
		Summary: "Your thread with one user, newest first", Query: pageQuery{}, Data: messageResponse{}}, s.conversation)
	s.handle(Route{Method: "POST", Path: "/api/messages/{id}/read", Tag: tag, Access: signedIn,
		Summary: "Mark a message you received read", Data: messageResponse{}, Errors: []int{422},
		Notes: "Only the recipient marks a message read (422 for the sender)."}, s.readMessage)
	s.handle(Route{Method: "DELETE", Path: "/api/messages/{id}", Tag: tag, Access: signedIn,
		Summary: "Delete a message for yourself", Data: deletedResponse{},
		Notes: "The other side keeps it."}, s.deleteMessage)
}

// Message limits.
const (
	maxMessageBody    = 10000
	maxMessageSubject = 200
)

type messageRequest struct {
	RecipientID int64  `json:"recipient_id" binding:"required,gt=0"`
	Subject     string `json:"subject"`
	Body        string `json:"body" binding:"required" doc:"1 to 10,000 characters"`
}

type userSummaryResponse struct {
	ID        int64   `json:"id"`
	Username  string  `json:"username"`
	FullName  string  `json:"full_name"`
	AvatarURL *string `json:"avatar_url"`
}

func userSummaryJSON(u store.UserSummary) userSummaryResponse {
	return userSummaryResponse{ID: u.ID, Username: u.Username, FullName: u.FullName, AvatarURL: avatarURL(u.ID, u.AvatarVersion)}
}

type messageResponse struct {
	ID          int64               `json:"id"`
	SenderID    int64               `json:"sender_id"`
	RecipientID int64               `json:"recipient_id"`
	Sender      userSummaryResponse `json:"sender"`
	Recipient   userSummaryResponse `json:"recipient"`
	Subject     string              `json:"subject"`
	Body        string              `json:"body"`
	ReadAt      *time.Time          `json:"read_at"`
	CreatedAt   time.Time           `json:"created_at"`
}

func messageJSON(m *store.DirectMessage) messageResponse {
	return messageResponse{ID: m.ID, SenderID: m.SenderID, RecipientID: m.RecipientID,
		Sender: userSummaryJSON(m.Sender), Recipient: userSummaryJSON(m.Recipient),
		Subject: m.Subject, Body: m.Body, ReadAt: m.ReadAt, CreatedAt: m.CreatedAt}
}

type conversationResponse struct {
	With        userSummaryResponse `json:"with"`
	LastMessage messageResponse     `json:"last_message"`
	Unread      int                 `json:"unread" doc:"messages from them you have not read"`
	Total       int                 `json:"total"`
}

type inboxQuery struct {
	pageQuery
	Unread *bool `form:"unread" doc:"true: only unread ones"`
}

func messagesPage(c *gin.Context, list []*store.DirectMessage, total int, pg store.Page, msg string) {
	items := make([]messageResponse, 0, len(list))
	for _, m := range list {
		items = append(items, messageJSON(m))
	}
	respond(c, http.StatusOK, listData[messageResponse]{Items: items, Total: total, Page: pg.Page, PerPage: pg.PerPage}, msg)
}

func (s *Server) sendMessage(c *gin.Context) {
	var req messageRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	p := principal(c)
	switch n := utf8.RuneCountInString(req.Body); {
	case strings.TrimSpace(req.Body) == "":
		fail(c, store.Invalid("body: must not be empty"))
		return
	case n > maxMessageBody:
		fail(c, store.Invalid("body: must be at most %d characters", maxMessageBody))
		return
	}
	if utf8.RuneCountInString(req.Subject) > maxMessageSubject {
		fail(c, store.Invalid("subject: must be at most %d characters", maxMessageSubject))
		return
	}
	if req.RecipientID == p.User.ID {
		fail(c, store.Invalid("recipient_id: you cannot send a message to yourself"))
		return
	}
	ctx := c.Request.Context()
	m, err := s.db.CreateMessage(ctx, store.NewMessage{SenderID: p.User.ID, RecipientID: req.RecipientID,
		Subject: strings.TrimSpace(req.Subject), Body: req.Body})
	if err != nil {
		fail(c, err)
		return
	}
	title := "New message from " + m.Sender.Username
	if m.Subject != "" {
		title += ": " + m.Subject
	}
	s.notify.User(ctx, m.RecipientID, notify.Note{Kind: notify.MessageReceived, Title: title, Body: preview(m.Body, 140),
		Link: fmt.Sprintf("/api/messages/conversations/%d", m.SenderID)})
	respond(c, http.StatusCreated, messageJSON(m), "message sent")
}

// preview shortens text to n characters on a word boundary.
func preview(text string, n int) string {
	text = strings.Join(strings.Fields(text), " ")
	if utf8.RuneCountInString(text) <= n {
		return text
	}
	r := []rune(text)[:n]
	if i := strings.LastIndex(string(r), " "); i > n/2 {
		return string(r)[:i] + "…"
	}
	return string(r) + "…"
}

func (s *Server) inbox(c *gin.Context) {
	var q inboxQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	pg := q.page()
	list, total, err := s.db.Inbox(c.Request.Context(), store.MessageFilter{UserID: principal(c).User.ID,
		UnreadOnly: q.Unread != nil && *q.Unread, Page: pg})
	if err != nil {
		fail(c, err)
		return
	}
	messagesPage(c, list, total, pg, "inbox")
}

func (s *Server) sentMessages(c *gin.Context) {
	var q pageQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	pg := q.page()
	list, total, err := s.db.Sent(c.Request.Context(), store.MessageFilter{UserID: principal(c).User.ID, Page: pg})
	if err != nil {
		fail(c, err)
		return
	}
	messagesPage(c, list, total, pg, "sent messages")
}

func (s *Server) conversations(c *gin.Context) {
	var q pageQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	pg := q.page()
	list, total, err := s.db.Conversations(c.Request.Context(), principal(c).User.ID, pg)
	if err != nil {
		fail(c, err)
		return
	}
	items := make([]conversationResponse, 0, len(list))
	for _, cv := range list {
		items = append(items, conversationResponse{With: userSummaryJSON(cv.With), LastMessage: messageJSON(cv.Last),
			Unread: cv.Unread, Total: cv.Total})
	}
	respond(c, http.StatusOK, listData[conversationResponse]{Items: items, Total: total, Page: pg.Page, PerPage: pg.PerPage}, "conversations")
}

func (s *Server) conversation(c *gin.Context) {
	other, err := pathID(c, "user_id")
	if err != nil {
		fail(c, err)
		return
	}
	var q pageQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	ctx := c.Request.Context()
	if _, err := s.db.UserByID(ctx, other); err != nil {
		fail(c, err)
		return
	}
	pg := q.page()
	list, total, err := s.db.Conversation(ctx, principal(c).User.ID, other, pg)
	if err != nil {
		fail(c, err)
		return
	}
	messagesPage(c, list, total, pg, "conversation")
}

func (s *Server) readMessage(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	m, err := s.db.MarkMessageRead(c.Request.Context(), principal(c).User.ID, id)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, messageJSON(m), "message read")
}

func (s *Server) deleteMessage(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	if err := s.db.DeleteMessageFor(c.Request.Context(), principal(c).User.ID, id); err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, deletedResponse{ID: id, Deleted: true}, "message deleted for you")
}
