package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

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
	s.handle(Route{Method: "GET", Path: "/api/notifications/stream", Tag: tag, Access: signedIn, Exclusive: true,
		Summary: "Server-Sent Events stream of your new notifications", Binary: "text/event-stream",
		Notes: "Each new notification arrives as `event: notification` with `id:` its id and `data:` its JSON. " +
			"A comment line is sent as a heartbeat every 15 seconds. Send Last-Event-ID to receive what was raised since that id. " +
			"The stream ends when the session is revoked or the token expires (reconnect with a fresh token), or when the server stops."}, s.notificationStream)
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
	ReadAt        *time.Time `json:"read_at"`
	CreatedAt     time.Time  `json:"created_at"`
}

func notificationJSON(n *store.Notification) notificationResponse {
	out := notificationResponse{ID: n.ID, Kind: n.Kind, Title: n.Title, Body: n.Body, EnvironmentID: n.EnvironmentID,
		ReadAt: n.ReadAt, CreatedAt: n.CreatedAt}
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
	list, total, err := s.db.ListNotifications(c.Request.Context(), store.NotificationFilter{
		UserID: principal(c).User.ID, UnreadOnly: q.Unread != nil && *q.Unread, Page: pg})
	if err != nil {
		fail(c, err)
		return
	}
	items := make([]notificationResponse, 0, len(list))
	for _, n := range list {
		items = append(items, notificationJSON(n))
	}
	respond(c, http.StatusOK, listData[notificationResponse]{Items: items, Total: total, Page: pg.Page, PerPage: pg.PerPage}, "notifications")
}

func (s *Server) unreadNotifications(c *gin.Context) {
	n, err := s.db.UnreadNotifications(c.Request.Context(), principal(c).User.ID)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, unreadCountResponse{Unread: n}, "unread notifications")
}

func (s *Server) readAllNotifications(c *gin.Context) {
	n, err := s.db.MarkAllNotificationsRead(c.Request.Context(), principal(c).User.ID)
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
	n, err := s.db.MarkNotificationRead(c.Request.Context(), principal(c).User.ID, id)
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
	if err := s.db.DeleteNotification(c.Request.Context(), principal(c).User.ID, id); err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, deletedResponse{ID: id, Deleted: true}, "notification deleted")
}

// notificationStream pushes the caller's new notifications as Server-Sent
// Events. It does not hold the database between events (a restore must not
// wait for open streams); it holds it briefly for each check.
func (s *Server) notificationStream(c *gin.Context) {
	p := principal(c)
	token := bearerToken(c)
	sub := s.notify.Subscribe(p.User.ID)
	defer s.notify.Unsubscribe(sub)

	// A stream lives long: lift the connection's read deadline.
	_ = http.NewResponseController(c.Writer).SetReadDeadline(time.Time{})
	h := c.Writer.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // tell nginx not to buffer
	c.Status(http.StatusOK)
	w := c.Writer
	send := func(n *store.Notification) bool {
		b, _ := json.Marshal(notificationJSON(n))
		_, err := fmt.Fprintf(w, "event: notification\nid: %d\ndata: %s\n\n", n.ID, b)
		w.Flush()
		return err == nil
	}
	if _, err := fmt.Fprint(w, ": connected\nretry: 3000\n\n"); err != nil {
		return
	}
	w.Flush()

	// Catch up from Last-Event-ID, oldest first, page by page. The
	// subscription opened before, so nothing raised meanwhile is lost; what
	// the catch-up sent is not sent again (lastSent).
	var lastSent int64
	if last, err := strconv.ParseInt(c.GetHeader("Last-Event-ID"), 10, 64); err == nil && last > 0 {
		lastSent = last
		for {
			hctx, release := s.db.Hold(c.Request.Context())
			missed, _, err := s.db.ListNotifications(hctx, store.NotificationFilter{UserID: p.User.ID, AfterID: lastSent,
				OldestFirst: true, Page: store.Page{Page: 1, PerPage: 200}})
			release()
			if err != nil {
				break
			}
			for _, n := range missed {
				if !send(n) {
					return
				}
				lastSent = n.ID
			}
			if len(missed) < 200 {
				break
			}
		}
	}

	heartbeat := time.NewTicker(s.opts.StreamHeartbeat)
	defer heartbeat.Stop()
	ctx := c.Request.Context()
	for {
		select {
		case <-ctx.Done():
			return
		case n, ok := <-sub.C:
			if !ok { // the server is shutting down
				return
			}
			if n.ID <= lastSent {
				continue // already sent by the catch-up
			}
			if !send(n) {
				return
			}
			lastSent = n.ID
		case <-heartbeat.C:
			// The session may have been revoked, the user disabled, or
			// the token may have expired: then the stream ends.
			hctx, release := s.db.Hold(ctx)
			_, err := s.auth.Authenticate(hctx, token)
			release()
			if err != nil {
				fmt.Fprintf(w, "event: end\ndata: %s\n\n", mustJSON(errorBody{Detail: store.Message(err)}))
				w.Flush()
				return
			}
			if _, err := fmt.Fprint(w, ": heartbeat\n\n"); err != nil {
				return
			}
			w.Flush()
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func bearerToken(c *gin.Context) string {
	_, tok, _ := strings.Cut(c.GetHeader("Authorization"), " ")
	return strings.TrimSpace(tok)
}
