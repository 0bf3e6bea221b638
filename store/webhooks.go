package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Signed webhooks (issue 26, server/webhook): an environment's receivers
// of events, their deliveries and every attempt.

// Statuses of a webhook delivery.
const (
	DeliveryPending   = "pending"
	DeliverySending   = "sending"
	DeliverySucceeded = "succeeded"
	DeliveryFailed    = "failed"
)

// Webhook is a receiver of one environment's events.
type Webhook struct {
	ID            int64
	EnvironmentID int64
	URL           string
	Description   string
	Events        []string
	// SecretSealed is the signing secret sealed with secret.key for this
	// row (WebhookAAD); SecretPrefix its first characters.
	SecretSealed        []byte
	SecretPrefix        string
	Enabled             bool
	DisabledReason      string
	ConsecutiveFailures int
	// FailingSince is the first failed attempt since the last success.
	FailingSince  *time.Time
	LastSuccessAt *time.Time
	LastFailureAt *time.Time
	CreatedBy     *int64
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// WebhookAAD binds a sealed webhook secret to its row.
func WebhookAAD(id int64) string { return fmt.Sprintf("webhook:%d", id) }

const webhookColumns = `w.id, w.environment_id, w.url, w.description, w.events, w.secret_sealed, w.secret_prefix, w.enabled,
	w.disabled_reason, w.consecutive_failures, w.failing_since, w.last_success_at, w.last_failure_at, w.created_by, w.created_at, w.updated_at`

func scanWebhook(row rowScanner) (*Webhook, error) {
	var w Webhook
	var events, created, updated string
	var failing, success, failure sql.NullString
	var by sql.NullInt64
	if err := row.Scan(&w.ID, &w.EnvironmentID, &w.URL, &w.Description, &events, &w.SecretSealed, &w.SecretPrefix, &w.Enabled,
		&w.DisabledReason, &w.ConsecutiveFailures, &failing, &success, &failure, &by, &created, &updated); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(events), &w.Events); err != nil {
		return nil, fmt.Errorf("webhook %d events: %w", w.ID, err)
	}
	w.FailingSince, w.LastSuccessAt, w.LastFailureAt = parseNullTime(failing), parseNullTime(success), parseNullTime(failure)
	w.CreatedBy = nullID(by)
	w.CreatedAt, w.UpdatedAt = parseTime(created), parseTime(updated)
	return &w, nil
}

func eventsJSON(events []string) string {
	if events == nil {
		events = []string{}
	}
	b, _ := json.Marshal(events)
	return string(b)
}

// NewWebhook is what CreateWebhook needs. Seal seals the secret for the
// new row's id, inside the transaction.
type NewWebhook struct {
	EnvironmentID int64
	URL           string
	Description   string
	Events        []string
	Enabled       bool
	SecretPrefix  string
	Seal          func(id int64) ([]byte, error)
	CreatedBy     *int64
}

// CreateWebhook stores a webhook with its sealed secret in one transaction.
func (db *DB) CreateWebhook(ctx context.Context, n NewWebhook) (*Webhook, error) {
	var w *Webhook
	err := db.tx(ctx, func(tx *sql.Tx) error {
		now := db.now()
		var id int64
		// The secret is sealed for the row's id, known once it is inserted.
		if err := tx.QueryRowContext(ctx, `INSERT INTO webhooks (environment_id, url, description, events, secret_sealed, secret_prefix,
			enabled, created_by, created_at, updated_at) VALUES (?, ?, ?, ?, x'', ?, ?, ?, ?, ?) RETURNING id`,
			n.EnvironmentID, n.URL, n.Description, eventsJSON(n.Events), n.SecretPrefix, boolInt(n.Enabled), n.CreatedBy, now, now).
			Scan(&id); err != nil {
			return translate(err, "webhook")
		}
		sealed, err := n.Seal(id)
		if err != nil {
			return err
		}
		w, err = scanWebhook(tx.QueryRowContext(ctx, `UPDATE webhooks SET secret_sealed = ? WHERE id = ? RETURNING `+returning(webhookColumns),
			sealed, id))
		return err
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

// WebhookByID reads a webhook.
func (db *DB) WebhookByID(ctx context.Context, id int64) (*Webhook, error) {
	return findRow(ctx, db, scanWebhook, "webhook", `SELECT `+webhookColumns+` FROM webhooks w WHERE w.id = ?`, id)
}

// WebhookFilter narrows ListWebhooks.
type WebhookFilter struct {
	Scope         Scope
	EnvironmentID *int64
	Page          Page
}

// ListWebhooks lists the webhooks the scope sees, newest first.
func (db *DB) ListWebhooks(ctx context.Context, f WebhookFilter) ([]*Webhook, int, error) {
	var where []string
	var args []any
	if scoped, more := f.Scope.envIn("w.environment_id"); scoped != "" {
		where, args = append(where, scoped), append(args, more...)
	}
	index := "webhooks_created"
	if f.EnvironmentID != nil {
		where, args = append(where, "w.environment_id = ?"), append(args, *f.EnvironmentID)
		index = "webhooks_env"
	}
	return listPage(ctx, db, listQuery{from: "webhooks w INDEXED BY " + index, count: "webhooks w", where: where, args: args,
		columns: webhookColumns, order: "w.created_at DESC, w.id DESC", what: "webhooks"}, f.Page, scanWebhook)
}

// WebhookUpdate holds the fields to change; nil leaves one alone. Enabling
// a webhook forgets its failures.
type WebhookUpdate struct {
	URL         *string
	Description *string
	Events      *[]string
	Enabled     *bool
	// Sealed and SecretPrefix replace the secret (a rotation).
	Sealed       []byte
	SecretPrefix string
}

// UpdateWebhook changes a webhook.
func (db *DB) UpdateWebhook(ctx context.Context, id int64, up WebhookUpdate) (*Webhook, error) {
	var events any
	if up.Events != nil {
		events = eventsJSON(*up.Events)
	}
	var enabled any
	if up.Enabled != nil {
		enabled = boolInt(*up.Enabled)
	}
	var sealed any
	if up.Sealed != nil {
		sealed = up.Sealed
	}
	w, err := insertRow(ctx, db, scanWebhook, `UPDATE webhooks SET
		url = COALESCE(?1, url), description = COALESCE(?2, description), events = COALESCE(?3, events),
		secret_sealed = COALESCE(?4, secret_sealed), secret_prefix = CASE WHEN ?4 IS NULL THEN secret_prefix ELSE ?5 END,
		consecutive_failures = CASE WHEN ?6 = 1 AND enabled = 0 THEN 0 ELSE consecutive_failures END,
		failing_since = CASE WHEN ?6 = 1 AND enabled = 0 THEN NULL ELSE failing_since END,
		disabled_reason = CASE WHEN ?6 IS NULL THEN disabled_reason WHEN ?6 = 1 THEN '' ELSE 'switched off by a user' END,
		enabled = COALESCE(?6, enabled), updated_at = ?7
		WHERE id = ?8 RETURNING `+returning(webhookColumns),
		up.URL, up.Description, events, sealed, up.SecretPrefix, enabled, db.now(), id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, NotFound("webhook not found")
	}
	if err != nil {
		return nil, translate(err, "webhook")
	}
	return w, nil
}

// DeleteWebhook deletes a webhook with its deliveries.
func (db *DB) DeleteWebhook(ctx context.Context, id int64) error {
	return db.deleteByID(ctx, "webhooks", "webhook", id)
}

// WebhookDelivery is one event for one webhook, with its attempts when
// listed.
type WebhookDelivery struct {
	ID            int64
	WebhookID     int64
	EnvironmentID int64
	MsgID         string
	EventType     string
	Payload       string
	Status        string
	Attempts      int
	NextAttemptAt *time.Time
	LastStatus    *int
	LastError     string
	CreatedAt     time.Time
	UpdatedAt     time.Time
	AttemptList   []*WebhookAttempt
}

// WebhookAttempt is one request of a delivery.
type WebhookAttempt struct {
	ID           int64
	DeliveryID   int64
	StartedAt    time.Time
	FinishedAt   *time.Time
	StatusCode   *int
	DurationMS   *int64
	ResponseBody string
	Error        string
}

const deliveryColumns = `d.id, d.webhook_id, d.environment_id, d.msg_id, d.event_type, d.payload, d.status, d.attempts, d.next_attempt_at,
	d.last_status, d.last_error, d.created_at, d.updated_at`

func scanDelivery(row rowScanner) (*WebhookDelivery, error) {
	var d WebhookDelivery
	var next sql.NullString
	var status sql.NullInt64
	var created, updated string
	if err := row.Scan(&d.ID, &d.WebhookID, &d.EnvironmentID, &d.MsgID, &d.EventType, &d.Payload, &d.Status, &d.Attempts, &next,
		&status, &d.LastError, &created, &updated); err != nil {
		return nil, err
	}
	d.NextAttemptAt = parseNullTime(next)
	if status.Valid {
		n := int(status.Int64)
		d.LastStatus = &n
	}
	d.CreatedAt, d.UpdatedAt = parseTime(created), parseTime(updated)
	return &d, nil
}

// NewWebhookEvent is an event to deliver: Payload is the body every
// webhook that wants it gets, byte for byte.
type NewWebhookEvent struct {
	EnvironmentID int64
	Type          string
	Payload       string
	// WebhookID, when set, delivers to that webhook alone, whatever
	// events it wants (a ping).
	WebhookID *int64
}

// CreateWebhookDeliveries persists one delivery of an event to every
// enabled webhook of its environment that wants it (or to WebhookID
// alone), due now, in one statement, and returns them.
func (db *DB) CreateWebhookDeliveries(ctx context.Context, e NewWebhookEvent) ([]*WebhookDelivery, error) {
	now := db.now()
	q := `INSERT INTO webhook_deliveries (webhook_id, environment_id, msg_id, event_type, payload, next_attempt_at, created_at, updated_at)
		SELECT w.id, w.environment_id, 'msg_' || ` + db.d.RandomHex(12) + `, ?1, ?2, ?3, ?3, ?3 FROM webhooks w
		WHERE w.environment_id = ?4 AND `
	args := []any{e.Type, e.Payload, now, e.EnvironmentID}
	if e.WebhookID != nil {
		q += `w.id = ?5`
		args = append(args, *e.WebhookID)
	} else {
		q += `w.enabled = 1 AND ` + db.d.JSONHas("w.events", "?1")
	}
	if e.WebhookID == nil {
		// Most events of most environments go to no webhook: a read, not a
		// write transaction, says so.
		var wanted bool
		if err := db.r.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM webhooks w WHERE w.environment_id = ? AND w.enabled = 1
			AND `+db.d.JSONHas("w.events", "?")+`)`, e.EnvironmentID, e.Type).Scan(&wanted); err != nil {
			return nil, fmt.Errorf("store: webhooks of an event: %w", err)
		}
		if !wanted {
			return nil, nil
		}
	}
	var out []*WebhookDelivery
	err := db.tx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, q+` ORDER BY w.id RETURNING `+returning(deliveryColumns), args...)
		if err != nil {
			return fmt.Errorf("store: create webhook deliveries: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			d, err := scanDelivery(rows)
			if err != nil {
				return fmt.Errorf("store: create webhook deliveries: %w", err)
			}
			out = append(out, d)
		}
		return rows.Err()
	})
	return out, err
}

// WebhookDeliveryByID reads a delivery (without its attempts).
func (db *DB) WebhookDeliveryByID(ctx context.Context, id int64) (*WebhookDelivery, error) {
	return findRow(ctx, db, scanDelivery, "webhook delivery", `SELECT `+deliveryColumns+` FROM webhook_deliveries d WHERE d.id = ?`, id)
}

// ListWebhookDeliveries lists a page of a webhook's deliveries, newest
// first, each with its attempts in order.
func (db *DB) ListWebhookDeliveries(ctx context.Context, webhookID int64, p Page) ([]*WebhookDelivery, int, error) {
	list, total, err := listPage(ctx, db, listQuery{from: "webhook_deliveries d", where: []string{"d.webhook_id = ?"}, args: []any{webhookID},
		columns: deliveryColumns, order: "d.id DESC", what: "webhook deliveries"}, p, scanDelivery)
	if err != nil || len(list) == 0 {
		return list, total, err
	}
	byID := map[int64]*WebhookDelivery{}
	ids := make([]int64, len(list))
	for i, d := range list {
		d.AttemptList = []*WebhookAttempt{}
		byID[d.ID], ids[i] = d, d.ID
	}
	cond, args := idList("delivery_id", ids)
	rows, err := db.listRows(ctx, `SELECT id, delivery_id, started_at, finished_at, status_code, duration_ms, response_body, error
		FROM webhook_attempts WHERE `+cond+` ORDER BY delivery_id, id`, args...)
	if err != nil {
		return nil, 0, fmt.Errorf("store: webhook attempts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var a WebhookAttempt
		var started string
		var finished sql.NullString
		var status, dur sql.NullInt64
		if err := rows.Scan(&a.ID, &a.DeliveryID, &started, &finished, &status, &dur, &a.ResponseBody, &a.Error); err != nil {
			return nil, 0, fmt.Errorf("store: webhook attempts: %w", err)
		}
		a.StartedAt, a.FinishedAt = parseTime(started), parseNullTime(finished)
		if status.Valid {
			n := int(status.Int64)
			a.StatusCode = &n
		}
		if dur.Valid {
			a.DurationMS = &dur.Int64
		}
		byID[a.DeliveryID].AttemptList = append(byID[a.DeliveryID].AttemptList, &a)
	}
	return list, total, rows.Err()
}

// PruneWebhookDeliveries deletes the finished deliveries (succeeded or
// failed) last changed before cutoff, with their attempts, and says how
// many.
func (db *DB) PruneWebhookDeliveries(ctx context.Context, cutoff time.Time) (int64, error) {
	res, err := db.exec(ctx, `DELETE FROM webhook_deliveries WHERE next_attempt_at IS NULL AND updated_at < ?
		AND status IN ('succeeded', 'failed')`, fmtTime(cutoff))
	if err != nil {
		return 0, fmt.Errorf("store: prune webhook deliveries: %w", err)
	}
	return res.RowsAffected()
}

// ResendWebhookDelivery makes a delivery that is not being sent due now,
// with a new schedule of attempts; the same msg_id and body. A delivery
// being sent is a conflict.
func (db *DB) ResendWebhookDelivery(ctx context.Context, id int64) (*WebhookDelivery, error) {
	d, err := insertRow(ctx, db, scanDelivery, `UPDATE webhook_deliveries SET status = 'pending', attempts = 0, next_attempt_at = ?1,
		updated_at = ?1 WHERE id = ?2 AND status != 'sending' RETURNING `+returning(deliveryColumns), db.now(), id)
	if errors.Is(err, sql.ErrNoRows) {
		if _, err := db.WebhookDeliveryByID(ctx, id); err != nil {
			return nil, err
		}
		return nil, Conflict("this delivery is being sent now: wait for its answer")
	}
	return d, err
}

// NextWebhookDelivery is when the earliest delivery of an enabled webhook
// is due (or its claim expires); nil when none is waiting.
func (db *DB) NextWebhookDelivery(ctx context.Context) (*time.Time, error) {
	var at sql.NullString
	err := db.r.QueryRowContext(ctx, `SELECT MIN(d.next_attempt_at) FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
		WHERE d.next_attempt_at IS NOT NULL AND w.enabled = 1`).Scan(&at)
	if err != nil {
		return nil, fmt.Errorf("store: next webhook delivery: %w", err)
	}
	return parseNullTime(at), nil
}

// ClaimedDelivery is a delivery claimed for one attempt, with what
// sending it needs.
type ClaimedDelivery struct {
	*WebhookDelivery
	AttemptID    int64
	URL          string
	SecretSealed []byte
}

// ClaimWebhookDeliveries claims up to limit due deliveries of enabled
// webhooks, the longest due first, in one transaction: each becomes
// sending until now+hold (then, if nobody recorded its answer, it is due
// again), counts one more attempt, and gets an attempt row started now.
// An attempt an earlier claim left unfinished (the server stopped
// mid-request) is closed as interrupted.
func (db *DB) ClaimWebhookDeliveries(ctx context.Context, hold time.Duration, limit int) ([]*ClaimedDelivery, error) {
	var out []*ClaimedDelivery
	err := db.tx(ctx, func(tx *sql.Tx) error {
		now := db.Now()
		rows, err := tx.QueryContext(ctx, `UPDATE webhook_deliveries SET status = 'sending', attempts = attempts + 1, next_attempt_at = ?1,
			updated_at = ?2 WHERE id IN (SELECT d.id FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
			WHERE d.next_attempt_at IS NOT NULL AND d.next_attempt_at <= ?2 AND w.enabled = 1 ORDER BY d.next_attempt_at, d.id LIMIT ?3)
			RETURNING `+returning(deliveryColumns), fmtTime(now.Add(hold)), fmtTime(now), limit)
		if err != nil {
			return fmt.Errorf("store: claim webhook deliveries: %w", err)
		}
		var claimed []*WebhookDelivery
		for rows.Next() {
			d, err := scanDelivery(rows)
			if err != nil {
				rows.Close()
				return fmt.Errorf("store: claim webhook deliveries: %w", err)
			}
			claimed = append(claimed, d)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return fmt.Errorf("store: claim webhook deliveries: %w", err)
		}
		// RETURNING's order is the engine's (PostgreSQL's is the rows'
		// place on disk): the claimed are sent oldest first.
		slices.SortFunc(claimed, func(a, b *WebhookDelivery) int { return cmp.Compare(a.ID, b.ID) })
		for _, d := range claimed {
			if _, err := tx.ExecContext(ctx, `UPDATE webhook_attempts SET error = 'interrupted: the server stopped before the answer was recorded; `+
				`the receiver may have had it' WHERE delivery_id = ? AND finished_at IS NULL`, d.ID); err != nil {
				return fmt.Errorf("store: close interrupted attempts: %w", err)
			}
			c := &ClaimedDelivery{WebhookDelivery: d}
			if err := tx.QueryRowContext(ctx, `INSERT INTO webhook_attempts (delivery_id, started_at) VALUES (?, ?) RETURNING id`,
				d.ID, fmtTime(now)).Scan(&c.AttemptID); err != nil {
				return fmt.Errorf("store: start webhook attempt: %w", err)
			}
			if err := tx.QueryRowContext(ctx, `SELECT url, secret_sealed FROM webhooks WHERE id = ?`, d.WebhookID).
				Scan(&c.URL, &c.SecretSealed); err != nil {
				return fmt.Errorf("store: claimed delivery's webhook: %w", err)
			}
			out = append(out, c)
		}
		return nil
	})
	return out, err
}

// WebhookAttemptResult is how one attempt went.
type WebhookAttemptResult struct {
	AttemptID  int64
	StatusCode *int
	Duration   time.Duration
	Body       string
	Error      string // "" on success (a 2xx)
	// NextAt is when to try again after a failure; nil: give up.
	NextAt *time.Time
	// DisableIfFailingSince switches the webhook off after this failure
	// when it has been failing since this moment or earlier.
	DisableIfFailingSince time.Time
	DisableReason         string
}

// WebhookAttemptRecord is what RecordWebhookAttempt did.
type WebhookAttemptRecord struct {
	Delivery *WebhookDelivery
	Webhook  *Webhook
	// Disabled: this attempt switched the webhook off.
	Disabled bool
}

// RecordWebhookAttempt records an attempt's outcome in one transaction:
// the attempt, the delivery (succeeded; pending again at NextAt; or
// failed), and the webhook's run of failures, switching it off when it has
// failed since DisableIfFailingSince.
func (db *DB) RecordWebhookAttempt(ctx context.Context, deliveryID int64, r WebhookAttemptResult) (*WebhookAttemptRecord, error) {
	var rec WebhookAttemptRecord
	err := db.tx(ctx, func(tx *sql.Tx) error {
		now := db.now()
		if _, err := tx.ExecContext(ctx, `UPDATE webhook_attempts SET finished_at = ?, status_code = ?, duration_ms = ?, response_body = ?,
			error = ? WHERE id = ?`, now, r.StatusCode, r.Duration.Milliseconds(), r.Body, r.Error, r.AttemptID); err != nil {
			return fmt.Errorf("store: record webhook attempt: %w", err)
		}
		status := DeliverySucceeded
		var next any
		switch {
		case r.Error == "":
		case r.NextAt != nil:
			status, next = DeliveryPending, fmtTime(*r.NextAt)
		default:
			status = DeliveryFailed
		}
		d, err := scanDelivery(tx.QueryRowContext(ctx, `UPDATE webhook_deliveries SET status = ?, next_attempt_at = ?, last_status = ?,
			last_error = ?, updated_at = ? WHERE id = ? RETURNING `+returning(deliveryColumns), status, next, r.StatusCode, r.Error, now, deliveryID))
		if errors.Is(err, sql.ErrNoRows) {
			return NotFound("webhook delivery not found") // deleted with its webhook meanwhile
		}
		if err != nil {
			return fmt.Errorf("store: record webhook delivery: %w", err)
		}
		rec.Delivery = d
		if r.Error == "" {
			rec.Webhook, err = scanWebhook(tx.QueryRowContext(ctx, `UPDATE webhooks SET consecutive_failures = 0, failing_since = NULL,
				last_success_at = ? WHERE id = ? RETURNING `+returning(webhookColumns), now, d.WebhookID))
			return err
		}
		var wasEnabled bool
		if err := tx.QueryRowContext(ctx, `SELECT enabled FROM webhooks WHERE id = ?`, d.WebhookID).Scan(&wasEnabled); err != nil {
			return fmt.Errorf("store: record webhook failure: %w", err)
		}
		rec.Webhook, err = scanWebhook(tx.QueryRowContext(ctx, `UPDATE webhooks SET consecutive_failures = consecutive_failures + 1,
			failing_since = COALESCE(failing_since, ?1), last_failure_at = ?1,
			enabled = CASE WHEN COALESCE(failing_since, ?1) <= ?2 THEN 0 ELSE enabled END,
			disabled_reason = CASE WHEN enabled = 1 AND COALESCE(failing_since, ?1) <= ?2 THEN ?3 ELSE disabled_reason END
			WHERE id = ?4 RETURNING `+returning(webhookColumns), now, fmtTime(r.DisableIfFailingSince), r.DisableReason, d.WebhookID))
		if err != nil {
			return fmt.Errorf("store: record webhook failure: %w", err)
		}
		rec.Disabled = wasEnabled && !rec.Webhook.Enabled
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &rec, nil
}
