package server

// The events of the API's Server-Sent Events streams, as the document
// describes them (Route.Events, the x-events extension of each
// text/event-stream content): a client generator or a reader learns from
// the document what each stream sends, not from prose alone.

import (
	"bytes"
	"net/http"
	"slices"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/server/chat"
	"github.com/copydesk/copydesk/server/live"
)

// Event is one kind of event of a stream: its `event:` name, the type of
// its `data:` JSON (nil: none), and when it comes.
type Event struct {
	Name string
	Data any
	Doc  string
}

// textDelta is the data of a generation's `delta` event.
type textDelta struct {
	Text string `json:"text" doc:"the next piece of the text: append it"`
}

// streamDetail is the data of an `error`, `retry` or `end` event.
type streamDetail struct {
	Detail string `json:"detail"`
}

// streamLagged is the data of a `lagged` event.
type streamLagged struct {
	LastEventID int64  `json:"last_event_id" doc:"reconnect with this Last-Event-ID: nothing is lost"`
	Detail      string `json:"detail"`
}

// The data of chat and live events, named for the document (the same
// structs their services send).
type (
	chatTitleEvent    chat.Title
	livePresenceEvent live.Presence
	liveDeltaEvent    live.Delta
	liveFailureEvent  live.Failure
	liveClosedEvent   live.Closed
)

// streamMissed is the data of a `missed` event.
type streamMissed struct {
	After  int64  `json:"after" doc:"the Last-Event-ID asked for"`
	Detail string `json:"detail"`
}

// The events every stream may end with.
var (
	eventEnd = Event{Name: "end", Data: streamDetail{},
		Doc: "Ends the stream: the session was revoked or expired, access was lost, the database is being restored, or the server stops. Reconnect (with a fresh token when the session ended)."}
	eventLagged = Event{Name: "lagged", Data: streamLagged{},
		Doc: "Ends the stream of a client that fell behind: reconnect with Last-Event-ID last_event_id."}
	eventMissed = Event{Name: "missed", Data: streamMissed{},
		Doc: "Starts a resumed stream whose Last-Event-ID is older than the server remembers: what follows is everything it still has."}
	eventDelta = Event{Name: "delta", Data: textDelta{}, Doc: "A piece of the text as the model writes it."}
	eventError = Event{Name: "error", Data: streamDetail{}, Doc: "The generation failed or was cancelled: the last event."}
)

// generationEvents are the events of a streamed agent run or archetype
// generation (stream true): first the record, then its text, then its end.
func generationEvents(record any, what string, extra ...Event) []Event {
	out := []Event{
		{Name: "run", Data: record, Doc: "First: the " + what + " as recorded (queued or running)."},
		eventDelta,
	}
	out = append(out, extra...)
	return append(out,
		Event{Name: "done", Data: record, Doc: "The " + what + " as recorded when it succeeded: the last event."},
		eventError, eventEnd)
}

// chatReplyEvents are the events of a streamed chat reply, sent or resumed.
func chatReplyEvents(resumed bool) []Event {
	out := []Event{
		{Name: "message", Data: chatMessageResponse{}, Doc: "First: the reply as stored, status generating."},
	}
	if resumed {
		out = []Event{eventMissed,
			{Name: "snapshot", Data: chatSnapshotResponse{}, Doc: "In place of events no longer kept: the reply and its text so far (replace the text)."}}
	}
	return append(out, eventDelta,
		Event{Name: "title", Data: chatTitleEvent{}, Doc: "The conversation got its automatic title."},
		Event{Name: "done", Data: chatDoneResponse{}, Doc: "The stored reply, whatever its status (complete, incomplete, failed), and what it cost: the last event."},
		eventError, eventEnd, eventLagged)
}

// liveEvents are the events of a live session's stream.
var liveEvents = []Event{
	{Name: "snapshot", Data: liveSnapshotResponse{}, Doc: "First: the generation of the moment (or null), its text so far, and who watches."},
	{Name: "resync", Data: liveSnapshotResponse{}, Doc: "For a watcher that fell behind, in place of what it had not read: replace the text with it."},
	{Name: "presence", Data: livePresenceEvent{}, Doc: "Someone started or stopped watching."},
	{Name: "generation", Data: liveGenerationResponse{}, Doc: "A generation was queued, and again when it starts: its text starts empty."},
	{Name: "delta", Data: liveDeltaEvent{}, Doc: "A piece of the text of the generation under way."},
	{Name: "done", Data: liveGenerationResponse{}, Doc: "A generation ended (succeeded, failed or cancelled), with its output as recorded."},
	{Name: "error", Data: liveFailureEvent{}, Doc: "A generation ended without being recorded (a database restore): read the session again."},
	{Name: "closed", Data: liveClosedEvent{}, Doc: "The session was closed or deleted: the last event."},
	eventEnd,
}

// autopilotEvents are the events of an environment's autopilot stream.
var autopilotEvents = []Event{
	{Name: "snapshot", Data: autopilotSnapshotResponse{}, Doc: "First, and after a gap the server no longer remembers: the state and the latest run."},
	{Name: "status", Data: autopilotStateResponse{}, Doc: "The state changed."},
	{Name: "run", Data: autopilotRunResponse{}, Doc: "A step of a run began or ended: the run with its steps."},
	eventLagged, eventEnd,
}

// notificationEvents are the events of your notification stream.
var notificationEvents = []Event{
	{Name: "notification", Data: notificationResponse{}, Doc: "A new notification; its id is the event's id."},
	eventMissed, eventLagged, eventEnd,
}

// checkEvents reports each event a stream of route r writes that r.Events
// do not name (Options.OnUndeclaredEvent). It reads the `event:` lines of
// what the stream writes; the stream writes an event in one piece.
func checkEvents(r Route, report func(route, event string)) gin.HandlerFunc {
	names := make([]string, len(r.Events))
	for i, ev := range r.Events {
		names[i] = ev.Name
	}
	route := r.Method + " " + r.Path
	return func(c *gin.Context) {
		c.Writer = &eventChecker{ResponseWriter: c.Writer, check: func(name string) {
			if !slices.Contains(names, name) {
				report(route, name)
			}
		}}
		c.Next()
	}
}

type eventChecker struct {
	gin.ResponseWriter
	check func(name string)
}

func (w *eventChecker) Write(b []byte) (int, error) {
	if w.Header().Get("Content-Type") == "text/event-stream" {
		for line := range bytes.Lines(b) {
			if name, ok := bytes.CutPrefix(line, []byte("event: ")); ok {
				w.check(string(bytes.TrimSpace(name)))
			}
		}
	}
	return w.ResponseWriter.Write(b)
}

func (w *eventChecker) WriteString(s string) (int, error) { return w.Write([]byte(s)) }

// Unwrap lets http.ResponseController reach the connection.
func (w *eventChecker) Unwrap() http.ResponseWriter { return w.ResponseWriter }
