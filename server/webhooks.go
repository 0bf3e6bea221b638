package server

import (
	"encoding/json"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/server/webhook"
	"github.com/copydesk/copydesk/store"
)

// The webhooks group (/api/webhooks): an environment's receivers of
// signed events (docs/webhooks.md). Editors and up manage those of their
// environments; viewers see none (a webhook's URL may carry a token of
// its receiver). The rules are server/webhook's.
func (s *Server) registerWebhookRoutes() {
	const tag = "Webhooks"
	s.handle(Route{Method: "GET", Path: "/api/webhooks", Tag: tag, Access: editorOnly, List: true, Errors: []int{404},
		Summary: "List webhooks", Query: webhookListQuery{}, Data: webhookResponse{},
		Notes: "Newest first, of the environments you see (of one with environment_id: one you do not see is a 404). The secret is never shown again."},
		s.listWebhooks)
	s.handle(Route{Method: "POST", Path: "/api/webhooks", Tag: tag, Access: editorOnly, Status: http.StatusCreated, Errors: []int{404},
		Summary: "Make a webhook", Body: webhookRequest{}, Data: webhookCreatedResponse{},
		Notes: "The answer holds the signing secret (whsec_ and base64), shown this once only: copy it now (POST .../rotate-secret makes a new one). " +
			"Every event of the environment that the webhook wants is POSTed to url as {type, timestamp, data}, signed as the Standard Webhooks " +
			"specification says (headers webhook-id, webhook-timestamp, webhook-signature). The url must be http or https; it goes through the " +
			"outbound address guard of web sources when sent (private and loopback addresses only with serve --web-sources-private), and an " +
			"address literal the guard refuses is a 422 here. A 2xx answer within 10 seconds is a success; anything else is retried with " +
			"exponential back-off for about a day (docs/webhooks.md). A webhook whose deliveries fail for 3 days is switched off and its " +
			"creator notified (webhook.disabled)."}, s.createWebhook)
	s.handle(Route{Method: "GET", Path: "/api/webhooks/{id}", Tag: tag, Access: editorOnly,
		Summary: "Get a webhook", Data: webhookResponse{}}, s.getWebhook)
	s.handle(Route{Method: "PUT", Path: "/api/webhooks/{id}", Tag: tag, Access: editorOnly,
		Summary: "Change a webhook", Body: webhookUpdateRequest{}, Data: webhookResponse{},
		Notes: "Fields left out keep their values. enabled true switches a webhook on again and forgets its failures; the deliveries it kept " +
			"waiting while off are sent then. enabled false keeps new events from it."}, s.updateWebhook)
	s.handle(Route{Method: "DELETE", Path: "/api/webhooks/{id}", Tag: tag, Access: editorOnly,
		Summary: "Delete a webhook and its deliveries", Data: deletedResponse{}}, s.deleteWebhook)
	s.handle(Route{Method: "POST", Path: "/api/webhooks/{id}/rotate-secret", Tag: tag, Access: editorOnly,
		Summary: "Give a webhook a new secret", Data: webhookCreatedResponse{},
		Notes: "The new secret is shown this once only and signs every attempt from now on, retries of earlier deliveries too; the old one " +
			"signs nothing more."}, s.rotateWebhookSecret)
	s.handle(Route{Method: "POST", Path: "/api/webhooks/{id}/ping", Tag: tag, Access: editorOnly, Status: http.StatusAccepted,
		Errors: []int{409}, Summary: "Send a test event", Data: webhookDeliveryResponse{},
		Notes: "Queues the event webhook.ping (data: environment_id, webhook_id) for this webhook alone, whatever events it wants, due now; " +
			"it is sent, retried and logged as any delivery. A webhook switched off is a 409."}, s.pingWebhook)
	s.handle(Route{Method: "GET", Path: "/api/webhooks/{id}/deliveries", Tag: tag, Access: editorOnly, List: true,
		Summary: "A webhook's deliveries with their attempts", Query: pageQuery{}, Data: webhookDeliveryResponse{},
		Notes: "Newest first. Each attempt says its status code, duration and the first 1024 bytes of the answer, or why it failed."},
		s.listWebhookDeliveries)
	s.handle(Route{Method: "POST", Path: "/api/webhooks/{id}/deliveries/{delivery_id}/resend", Tag: tag, Access: editorOnly,
		Status: http.StatusAccepted, Errors: []int{409}, Summary: "Send a delivery again",
		Data: webhookDeliveryResponse{},
		Notes: "Sends it again now with the same webhook-id and body (signed anew), with a new schedule of retries. A delivery being sent, " +
			"or a webhook switched off, is a 409."}, s.resendWebhookDelivery)
}

type webhookRequest struct {
	EnvironmentID int64    `json:"environment_id" binding:"required,gt=0"`
	URL           string   `json:"url" binding:"required,max=2048"`
	Events        []string `json:"events" binding:"required,min=1,max=20,dive,oneof=post.published post.failed run.succeeded run.failed autopilot.paused budget.reached keywords.imported"`
	Description   string   `json:"description" binding:"max=500"`
	Enabled       *bool    `json:"enabled" doc:"default true"`
}

type webhookUpdateRequest struct {
	URL         *string   `json:"url" binding:"omitempty,min=1,max=2048"`
	Events      *[]string `json:"events" binding:"omitempty,min=1,max=20,dive,oneof=post.published post.failed run.succeeded run.failed autopilot.paused budget.reached keywords.imported"`
	Description *string   `json:"description" binding:"omitempty,max=500"`
	Enabled     *bool     `json:"enabled"`
}

type webhookListQuery struct {
	pageQuery
	EnvironmentID *int64 `form:"environment_id" binding:"omitempty,gt=0"`
}

type webhookResponse struct {
	ID                  int64      `json:"id"`
	EnvironmentID       int64      `json:"environment_id"`
	URL                 string     `json:"url"`
	Description         string     `json:"description"`
	Events              []string   `json:"events"`
	SecretPrefix        string     `json:"secret_prefix" doc:"the secret's first characters, to tell secrets apart; never enough to sign"`
	Enabled             bool       `json:"enabled"`
	DisabledReason      string     `json:"disabled_reason" doc:"why it is switched off; empty while on"`
	ConsecutiveFailures int        `json:"consecutive_failures" doc:"attempts in a row that failed; 0 after a success"`
	FailingSince        *Timestamp `json:"failing_since" doc:"the first failed attempt since the last success; null when the last one succeeded"`
	LastSuccessAt       *Timestamp `json:"last_success_at"`
	LastFailureAt       *Timestamp `json:"last_failure_at"`
	CreatedBy           *int64     `json:"created_by"`
	CreatedAt           Timestamp  `json:"created_at"`
	UpdatedAt           Timestamp  `json:"updated_at"`
}

type webhookCreatedResponse struct {
	webhookResponse
	Secret string `json:"secret" doc:"whsec_ and the base64 of the key: verify signatures with it. Shown this once only"`
}

func webhookJSON(w *store.Webhook) webhookResponse {
	return webhookResponse{ID: w.ID, EnvironmentID: w.EnvironmentID, URL: w.URL, Description: w.Description, Events: w.Events,
		SecretPrefix: w.SecretPrefix, Enabled: w.Enabled, DisabledReason: w.DisabledReason, ConsecutiveFailures: w.ConsecutiveFailures,
		FailingSince: (*Timestamp)(w.FailingSince), LastSuccessAt: (*Timestamp)(w.LastSuccessAt), LastFailureAt: (*Timestamp)(w.LastFailureAt),
		CreatedBy: w.CreatedBy, CreatedAt: Timestamp(w.CreatedAt), UpdatedAt: Timestamp(w.UpdatedAt)}
}

type webhookAttemptResponse struct {
	ID         int64      `json:"id"`
	StartedAt  Timestamp  `json:"started_at"`
	FinishedAt *Timestamp `json:"finished_at" doc:"null while under way, or when the server stopped mid-request (error says so)"`
	StatusCode *int       `json:"status_code" doc:"the receiver's HTTP status; null when no answer came"`
	DurationMS *int64     `json:"duration_ms"`
	Response   string     `json:"response" doc:"the first 1024 bytes of the answer's body"`
	Error      string     `json:"error" doc:"why the attempt failed; empty when it succeeded"`
}

type webhookBody struct {
	Type      string         `json:"type"`
	Timestamp string         `json:"timestamp" doc:"when the event happened, RFC 3339 to the second"`
	Data      map[string]any `json:"data" doc:"the ids a receiver needs (environment_id always; docs/webhooks.md lists each event's)"`
}

type webhookDeliveryResponse struct {
	ID            int64                    `json:"id"`
	WebhookID     int64                    `json:"webhook_id"`
	EnvironmentID int64                    `json:"environment_id"`
	MessageID     string                   `json:"message_id" doc:"the webhook-id header, the same on every attempt: receivers de-duplicate by it"`
	Type          string                   `json:"type" doc:"the event type, or webhook.ping"`
	Payload       webhookBody              `json:"payload" doc:"the body sent"`
	Status        string                   `json:"status" enum:"pending,sending,succeeded,failed"`
	Attempts      int                      `json:"attempts" doc:"attempts of its current schedule (a re-send starts a new one)"`
	NextAttemptAt *Timestamp               `json:"next_attempt_at" doc:"when it is tried next (pending), or until when it is claimed (sending); null when done"`
	LastStatus    *int                     `json:"last_status"`
	LastError     string                   `json:"last_error"`
	CreatedAt     Timestamp                `json:"created_at"`
	UpdatedAt     Timestamp                `json:"updated_at"`
	AttemptList   []webhookAttemptResponse `json:"attempt_list" doc:"every attempt, oldest first (in lists only; empty otherwise)"`
}

func webhookDeliveryJSON(d *store.WebhookDelivery) webhookDeliveryResponse {
	out := webhookDeliveryResponse{ID: d.ID, WebhookID: d.WebhookID, EnvironmentID: d.EnvironmentID, MessageID: d.MsgID, Type: d.EventType,
		Status: d.Status, Attempts: d.Attempts, NextAttemptAt: (*Timestamp)(d.NextAttemptAt),
		LastStatus: d.LastStatus, LastError: d.LastError, CreatedAt: Timestamp(d.CreatedAt), UpdatedAt: Timestamp(d.UpdatedAt),
		AttemptList: []webhookAttemptResponse{}}
	_ = json.Unmarshal([]byte(d.Payload), &out.Payload) // written by webhook.Emit
	for _, a := range d.AttemptList {
		out.AttemptList = append(out.AttemptList, webhookAttemptResponse{ID: a.ID, StartedAt: Timestamp(a.StartedAt),
			FinishedAt: (*Timestamp)(a.FinishedAt), StatusCode: a.StatusCode, DurationMS: a.DurationMS, Response: a.ResponseBody, Error: a.Error})
	}
	return out
}

func (s *Server) listWebhooks(c *gin.Context) {
	var q webhookListQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	list, total, err := s.webhooks.List(c.Request.Context(), scope(c), q.EnvironmentID, q.page())
	if err != nil {
		fail(c, err)
		return
	}
	respondList(c, list, total, q.page(), webhookJSON, "webhooks")
}

func (s *Server) createWebhook(c *gin.Context) {
	var req webhookRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	made, err := s.webhooks.Create(c.Request.Context(), scope(c), webhook.Input{EnvironmentID: req.EnvironmentID, URL: req.URL,
		Events: req.Events, Description: req.Description, Enabled: req.Enabled == nil || *req.Enabled})
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusCreated, webhookCreatedResponse{webhookJSON(made.Webhook), made.Secret},
		"webhook created: copy its secret now, it is not shown again")
}

func (s *Server) getWebhook(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	w, err := s.webhooks.Get(c.Request.Context(), scope(c), id)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, webhookJSON(w), "webhook")
}

func (s *Server) updateWebhook(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var req webhookUpdateRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	w, err := s.webhooks.Update(c.Request.Context(), scope(c), id, webhook.Change{URL: req.URL, Events: req.Events,
		Description: req.Description, Enabled: req.Enabled})
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, webhookJSON(w), "webhook updated")
}

func (s *Server) deleteWebhook(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	if err := s.webhooks.Delete(c.Request.Context(), scope(c), id); err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, deletedResponse{ID: id, Deleted: true}, "webhook deleted")
}

func (s *Server) rotateWebhookSecret(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	made, err := s.webhooks.Rotate(c.Request.Context(), scope(c), id)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, webhookCreatedResponse{webhookJSON(made.Webhook), made.Secret},
		"new secret made: copy it now, it is not shown again")
}

func (s *Server) pingWebhook(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	d, err := s.webhooks.Ping(c.Request.Context(), scope(c), id)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusAccepted, webhookDeliveryJSON(d), "ping queued")
}

func (s *Server) listWebhookDeliveries(c *gin.Context) {
	listChildren(c, "id", s.webhooks.Deliveries, webhookDeliveryJSON, "deliveries")
}

func (s *Server) resendWebhookDelivery(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	did, err := pathID(c, "delivery_id")
	if err != nil {
		fail(c, err)
		return
	}
	d, err := s.webhooks.Resend(c.Request.Context(), scope(c), id, did)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusAccepted, webhookDeliveryJSON(d), "delivery queued again")
}
