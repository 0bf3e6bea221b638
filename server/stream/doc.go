// Package stream is copydesk's one way of pushing live events to clients:
// a broker of topics, and the one Server-Sent Events loop (Serve) every
// streaming route wires its request to. It owns the response headers, event
// ids, heartbeats, the session re-check, Last-Event-ID replay, what happens
// to a subscriber that falls behind, and the end of every stream on
// shutdown (Close) or restore (EndAll). Modelled on PocketBase's
// tools/subscriptions.
//
// # Topics
//
// A topic is a name ("notifications/7", "runs/42"). There are two kinds:
//
//   - Durable topics carry events that are kept elsewhere, such as
//     notifications in the database. Nobody opens them: they exist while
//     someone listens, the publisher gives each event its own id (increasing
//     within the topic), and Serve answers Last-Event-ID through the
//     caller's Replayer, not from memory.
//   - Live topics carry what exists only while it happens: the text of a
//     generation, the autopilot's status. The producer opens them (Open),
//     the broker numbers their events, keeps the last few for Last-Event-ID
//     (TopicOptions.Replay), optionally folds them into a snapshot for late
//     joiners (TopicOptions.Snapshot), and the producer ends them (Finish).
//
// # A subscriber never silently loses an event
//
// Each subscriber has a bounded queue. One that falls behind is cut off: it
// is sent what was queued, then `event: lagged` with
// {"last_event_id": N, "detail": "reconnect with Last-Event-ID: N"}, and the
// stream ends. Reconnecting with that id resumes exactly there: from the
// replay buffer, the snapshot or the Replayer. A client that resumes from
// further back than a live topic remembers and that has no snapshot gets
// `event: missed` first, saying so.
//
// A live topic opened with TopicOptions.Resync keeps its slow subscribers
// instead: when one's queue is full, what waits in it is replaced by one
// event of that name holding the topic's snapshot (the whole text so far),
// and the subscriber goes on from there. Many watchers of one session
// would otherwise each reconnect for that same snapshot.
//
// # Text generations
//
// A model call run as a job (agent runs, archetype generations, chat
// replies, live generations) publishes on a live topic through
// server/generation, which holds the recipe as code: it waits for the
// requester to subscribe (WaitSubscriber), opens the topic with a snapshot
// of the text so far, publishes the row, the deltas and the final event
// once the outcome is stored, and calls Finish. Watchers call Serve with
// no Replayer, and check the generation is still going before they do:
// after Options.Linger a finished topic no longer answers, the stored
// outcome does.
//
// # Several instances
//
// On PostgreSQL several instances share the database. A live topic with
// one producer (a generation's) is opened with TopicOptions.Relay: its
// steps go to Options.Relay, the server carries them to the other
// instances, and there Received mirrors the topic with the same ids for
// their subscribers (relay.go). Durable topics need none of this: their
// events are rows, announced by the database.
//
// # The database
//
// Serve never holds the database between events, so a restore does not
// wait for open streams: ServeOptions.Hold (the server's restore gate) is
// taken only around each Recheck and each Replayer page.
package stream
