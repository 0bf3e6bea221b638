package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/server/outbound"
	"github.com/copydesk/copydesk/store"
)

// batch is how many due deliveries one run of DeliverJob claims and sends
// at once; the next run, planned at once when more are due, takes the rest.
const batch = 16

// MaxResponse is how much of a receiver's answer an attempt keeps.
const MaxResponse = 1024

// Sign is the webhook-signature header of a message: "v1," and the base64
// of the HMAC-SHA256, keyed with the secret's bytes (the base64 after
// "whsec_"), of "msgID.timestamp.body".
func Sign(secret, msgID string, timestamp int64, body []byte) (string, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, SecretPrefix))
	if err != nil {
		return "", fmt.Errorf("webhook: secret: %w", err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(msgID + "." + strconv.FormatInt(timestamp, 10) + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}

// Delay is the wait after the nth failed attempt in a row of a delivery
// (n from 1): the first delay doubled n-1 times, at most the cap.
func Delay(first, limit time.Duration, n int) time.Duration {
	d := first
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// next is DeliverJob's schedule: when the earliest delivery is due.
func (s *Service) next(ctx context.Context, _ time.Time) (time.Time, bool, error) {
	at, err := s.db.NextWebhookDelivery(ctx)
	if err != nil || at == nil {
		return time.Time{}, false, err
	}
	return *at, true, nil
}

// claimHold is how long a claimed delivery stays claimed: longer than any
// attempt can take, so that only a sender that died leaves one to expire.
func (s *Service) claimHold() time.Duration { return 2*s.opt.Timeout + time.Minute }

// deliverDue is DeliverJob's handler: it claims up to batch due deliveries
// and sends them side by side, each within the timeout, and records every
// attempt. The sends outlive the job's cancellation (a server stopping, a
// restore starting) by at most the timeout, so that an answer that came is
// recorded rather than sent again after a restart.
func (s *Service) deliverDue(ctx context.Context, _ *store.Job) error {
	claimed, err := s.db.ClaimWebhookDeliveries(ctx, s.claimHold(), batch)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(claimed))
	for i, c := range claimed {
		wg.Go(func() { errs[i] = s.deliver(context.WithoutCancel(ctx), c) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// deliver makes one attempt and records it; only a failure to record is
// an error.
func (s *Service) deliver(ctx context.Context, c *store.ClaimedDelivery) error {
	res := s.attempt(ctx, c)
	res.AttemptID = c.AttemptID
	now := s.now()
	if res.Error != "" && c.Attempts < s.opt.MaxAttempts {
		at := now.Add(Delay(s.opt.RetryDelay, s.opt.MaxDelay, c.Attempts))
		res.NextAt = &at
	}
	res.DisableIfFailingSince = now.Add(-s.opt.DisableAfter)
	res.DisableReason = fmt.Sprintf("switched off on %s: every delivery failed for %s", now.UTC().Format(time.RFC3339), s.opt.DisableAfter)
	rec, err := s.db.RecordWebhookAttempt(ctx, c.ID, res)
	if store.IsNotFound(err) {
		return nil // deleted with its webhook meanwhile
	}
	if err != nil {
		s.log.Error("webhooks: record an attempt", "delivery", c.ID, "err", err)
		return err
	}
	if res.Error != "" {
		s.log.Info("webhook delivery failed", "webhook", c.WebhookID, "delivery", c.ID, "attempt", c.Attempts, "err", res.Error,
			"next", res.NextAt)
	}
	if rec.Disabled {
		s.tell(ctx, rec.Webhook)
	}
	return nil
}

// attempt sends a delivery once, signed now, and says how it went.
func (s *Service) attempt(ctx context.Context, c *store.ClaimedDelivery) store.WebhookAttemptResult {
	var res store.WebhookAttemptResult
	secret, err := s.keys.Open(c.SecretSealed, store.WebhookAAD(c.WebhookID))
	if err != nil {
		res.Error = "the secret cannot be opened (secret.key changed?): rotate it"
		return res
	}
	ts := s.now().Unix()
	sig, err := Sign(string(secret), c.MsgID, ts, []byte(c.Payload))
	if err != nil {
		res.Error = err.Error()
		return res
	}
	ctx, cancel := context.WithTimeout(ctx, s.opt.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader([]byte(c.Payload)))
	if err != nil {
		res.Error = outbound.Excerpt(err.Error(), 500)
		return res
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "copydesk-webhooks")
	req.Header.Set("webhook-id", c.MsgID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", sig)
	start := time.Now()
	resp, err := s.http.Do(req)
	if err != nil {
		res.Duration = time.Since(start)
		res.Error = outbound.Excerpt(err.Error(), 500)
		if ctx.Err() == context.DeadlineExceeded {
			res.Error = fmt.Sprintf("no answer within %s: %s", s.opt.Timeout, res.Error)
		}
		return res
	}
	// A body that breaks off is kept as far as it came: the status said
	// what matters.
	b, _ := io.ReadAll(io.LimitReader(resp.Body, MaxResponse))
	resp.Body.Close()
	res.Duration = time.Since(start)
	res.StatusCode = &resp.StatusCode
	res.Body = strings.ToValidUTF8(string(b), "\uFFFD")
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		res.Error = fmt.Sprintf("the receiver answered %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	return res
}

// tell notifies a webhook's creator that it was switched off.
func (s *Service) tell(ctx context.Context, w *store.Webhook) {
	if s.notify == nil || w.CreatedBy == nil {
		return
	}
	s.notify.User(ctx, *w.CreatedBy, notify.Note{Kind: notify.WebhookDisabled, Title: "Webhook switched off: " + notify.Preview(w.URL, 120),
		Body: fmt.Sprintf("Its deliveries have failed since %s (%d attempts in a row). Fix the receiver, then enable it again; "+
			"the deliveries it kept waiting are sent then.", w.FailingSince.UTC().Format(time.RFC3339), w.ConsecutiveFailures),
		Link: fmt.Sprintf("/api/webhooks/%d", w.ID), EnvironmentID: &w.EnvironmentID})
}
