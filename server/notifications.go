package server

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/store"
)

// The notifications group (/api/notifications): what the system tells each
// user. Everyone sees and touches only their own; another user's id is 404.
func (s *Server) registerNotificationRoutes() {
	const tag = "Notifications"
	s.handle(Route{Method: "GET", Path: "/api/notifications", Tag: tag, Access: signedIn, List: true,
		Summary: "Your notifications, newest first", Query: notificationListQuery{}, Data: notificationResponse{}}, s.listNotifications)
	s.handle(Route{Method: "GET", Path: "/api/notifications/unread-count", Tag: tag, Access: signedIn,
		Summary: "How many of your notifications are unread", Data: unreadCountResponse{}}, s.unreadNotifications)
	s.handle(Route{Method: "POST", Path: "/api/notifications/read-all", Tag: tag, Access: signedIn,
		Summary: "Mark all your notifications read", Data: markedReadResponse{}}, s.readAllNotifications)
	s.handle(Route{Method: "GET", Path: "/api/notifications/stream", Tag: tag, Access: signedIn,
		Summary: "Server-Sent Events stream of your new notifications", Binary: "text/event-stream", Events: notificationEvents,
		Notes: "Each new notification arrives as `event: notification` with `id:` its id and `data:` its JSON. " +
			"A comment line is sent as a heartbeat every 15 seconds. Send Last-Event-ID to receive what was raised since that id. " +
			"A client that falls behind gets `event: lagged` with `{\"last_event_id\": N, \"detail\": ...}` and the stream ends: " +
			"reconnect with Last-Event-ID N and nothing is lost. " +
			"The stream ends with `event: end` and a detail when the session is revoked or the token expires (reconnect with a fresh token), " +
			"when the database is restored from a backup, or when the server stops."}, s.notificationStream)
	s.handle(Route{Method: "POST", Path: "/api/notifications/{id}/read", Tag: tag, Access: signedIn,
		Summary: "Mark a notification read", Data: notificationResponse{}}, s.readNotification)
	s.handle(Route{Method: "DELETE", Path: "/api/notifications/{id}", Tag: tag, Access: signedIn,
		Summary: "Delete a notification", Data: deletedResponse{}}, s.deleteNotification)
}

type notificationResponse struct {
	ID            int64      `json:"id"`
	Kind          string     `json:"kind" doc:"e.g. run.succeeded, run.failed, post.published, post.failed, backup.created, backup.failed, budget.reached, message.received"`
	Title         string     `json:"title"`
	Body          string     `json:"body"`
	Link          *string    `json:"link" doc:"API path of what it is about"`
	EnvironmentID *int64     `json:"environment_id"`
	ReadAt        *Timestamp `json:"read_at"`
	CreatedAt     Timestamp  `json:"created_at"`
}

func notificationJSON(n *store.Notification) notificationResponse {
	out := notificationResponse{ID: n.ID, Kind: n.Kind, Title: n.Title, Body: n.Body, EnvironmentID: n.EnvironmentID,
		ReadAt: (*Timestamp)(n.ReadAt), CreatedAt: Timestamp(n.CreatedAt)}
	if n.Link != "" {
		link := n.Link
		out.Link = &link
	}
	return out
}

type notificationListQuery struct {
	pageQuery
	Unread *bool `form:"unread" doc:"true: only unread ones"`
}

type unreadCountResponse struct {
	Unread int `json:"unread"`
}

type markedReadResponse struct {
	Updated int64 `json:"updated"`
}

func (s *Server) listNotifications(c *gin.Context) {
	var q notificationListQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	pg := q.page()
	list, total, err := s.notify.List(c.Request.Context(), principal(c).User.ID,
		notify.ListQuery{UnreadOnly: q.Unread != nil && *q.Unread, Page: pg})
	if err != nil {
		fail(c, err)
		return
	}
	respondList(c, list, total, pg, notificationJSON, "notifications")
}

func (s *Server) unreadNotifications(c *gin.Context) {
	n, err := s.notify.UnreadCount(c.Request.Context(), principal(c).User.ID)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, unreadCountResponse{Unread: n}, "unread notifications")
}

func (s *Server) readAllNotifications(c *gin.Context) {
	n, err := s.notify.MarkAllRead(c.Request.Context(), principal(c).User.ID)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, markedReadResponse{Updated: n}, "all notifications read")
}

func (s *Server) readNotification(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	n, err := s.notify.MarkRead(c.Request.Context(), principal(c).User.ID, id)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, notificationJSON(n), "notification read")
}

func (s *Server) deleteNotification(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	if err := s.notify.Delete(c.Request.Context(), principal(c).User.ID, id); err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, deletedResponse{ID: id, Deleted: true}, "notification deleted")
}

// notificationStream pushes the caller's new notifications as Server-Sent
// Events: the caller's topic, caught up from the database
// (Last-Event-ID). The stream holds the database only for each catch-up
// page and session re-check (see serve), so a restore never waits for it.
func (s *Server) notificationStream(c *gin.Context) {
	uid := principal(c).User.ID
	o := s.streamOptions(c)
	o.Replay, o.Encode = s.notify.Replay(uid), encodeNotification
	s.serve(c, notify.Topic(uid), o)
}

// encodeNotification renders the notifications of a stream as the list
// does.
func encodeNotification(v any) any {
	if n, ok := v.(*store.Notification); ok {
		return notificationJSON(n)
	}
	return v
}
