package server

import (
	"context"

	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/server/message"
	"github.com/copydesk/copydesk/store"
)

// The messages group (/api/messages): direct messages between users. Each
// side sees a message until it deletes it for itself; nobody sees a message
// they neither sent nor received (404).
func (s *Server) registerMessageRoutes() {
	const tag = "Messages"
	s.handle(Route{Method: "POST", Path: "/api/messages", Tag: tag, Access: signedIn, Status: http.StatusCreated,
		Summary: "Send a message", Body: messageRequest{}, Data: messageResponse{},
		Notes: "The recipient must be someone GET /api/messages/recipients lists (else 422) and gets a message.received notification."}, s.sendMessage)
	s.handle(Route{Method: "GET", Path: "/api/messages/recipients", Tag: tag, Access: signedIn, List: true,
		Summary: "The people you can write to, by username", Query: recipientQuery{}, Data: userSummaryResponse{},
		Notes: "The active users who share an environment with you, and the admins; an admin sees every active user. " +
			"q keeps those whose username or full name contains it."}, s.recipients)
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
	ReadAt      *Timestamp          `json:"read_at"`
	CreatedAt   Timestamp           `json:"created_at"`
}

func messageJSON(m *store.DirectMessage) messageResponse {
	return messageResponse{ID: m.ID, SenderID: m.SenderID, RecipientID: m.RecipientID,
		Sender: userSummaryJSON(m.Sender), Recipient: userSummaryJSON(m.Recipient),
		Subject: m.Subject, Body: m.Body, ReadAt: (*Timestamp)(m.ReadAt), CreatedAt: Timestamp(m.CreatedAt)}
}

type conversationResponse struct {
	With        userSummaryResponse `json:"with"`
	LastMessage messageResponse     `json:"last_message"`
	Unread      int                 `json:"unread" doc:"messages from them you have not read"`
	Total       int                 `json:"total"`
}

type recipientQuery struct {
	pageQuery
	Q string `form:"q" binding:"max=200" doc:"matches username or full name"`
}

type inboxQuery struct {
	pageQuery
	Unread *bool `form:"unread" doc:"true: only unread ones"`
}

func conversationJSON(cv *store.ConversationSummary) conversationResponse {
	return conversationResponse{With: userSummaryJSON(cv.With), LastMessage: messageJSON(cv.Last), Unread: cv.Unread, Total: cv.Total}
}

func (s *Server) sendMessage(c *gin.Context) {
	var req messageRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	m, err := s.messages.Send(c.Request.Context(), scope(c),
		message.Draft{RecipientID: req.RecipientID, Subject: req.Subject, Body: req.Body})
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusCreated, messageJSON(m), "message sent")
}

func (s *Server) recipients(c *gin.Context) {
	var q recipientQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	pg := q.page()
	list, total, err := s.messages.Recipients(c.Request.Context(), scope(c), q.Q, pg)
	if err != nil {
		fail(c, err)
		return
	}
	respondList(c, list, total, pg, userSummaryJSON, "people you can write to")
}

func (s *Server) inbox(c *gin.Context) {
	var q inboxQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	pg := q.page()
	list, total, err := s.messages.Inbox(c.Request.Context(), principal(c).User.ID, q.Unread != nil && *q.Unread, pg)
	if err != nil {
		fail(c, err)
		return
	}
	respondList(c, list, total, pg, messageJSON, "inbox")
}

func (s *Server) sentMessages(c *gin.Context) {
	var q pageQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	pg := q.page()
	list, total, err := s.messages.Sent(c.Request.Context(), principal(c).User.ID, pg)
	if err != nil {
		fail(c, err)
		return
	}
	respondList(c, list, total, pg, messageJSON, "sent messages")
}

func (s *Server) conversations(c *gin.Context) {
	var q pageQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	pg := q.page()
	list, total, err := s.messages.Conversations(c.Request.Context(), principal(c).User.ID, pg)
	if err != nil {
		fail(c, err)
		return
	}
	respondList(c, list, total, pg, conversationJSON, "conversations")
}

func (s *Server) conversation(c *gin.Context) {
	listChildren(c, "user_id", func(ctx context.Context, _ store.Scope, other int64, pg store.Page) ([]*store.DirectMessage, int, error) {
		return s.messages.Conversation(ctx, principal(c).User.ID, other, pg)
	}, messageJSON, "conversation")
}

func (s *Server) readMessage(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	m, err := s.messages.MarkRead(c.Request.Context(), principal(c).User.ID, id)
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
	if err := s.messages.Delete(c.Request.Context(), principal(c).User.ID, id); err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, deletedResponse{ID: id, Deleted: true}, "message deleted for you")
}
