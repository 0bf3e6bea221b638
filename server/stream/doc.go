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
// # Text generations (agent runs, chat replies, live agent sessions)
//
// The producer of a generation, say run 42:
//
//	b.WaitSubscriber(ctx, "runs/42") // when it works for one client (see below)
//	b.Open("runs/42", stream.TopicOptions{Snapshot: &textSoFar{}})
//	defer b.Finish("runs/42")
//	b.Publish("runs/42", stream.Event{Name: "run", Data: run})        // id 1
//	for each piece of text:
//	    b.Publish("runs/42", stream.Event{Name: "delta", Data: delta}) // ids 2, 3, ...
//	record the outcome durably, then
//	b.Publish("runs/42", stream.Event{Name: "done", Data: finished})  // the final event
//
// textSoFar implements Snapshot: Apply appends each delta's text (and keeps
// the run and the final event), Event returns one `event: snapshot` with the
// run and the text so far. Every watcher, the requester included, calls
// b.Serve(w, r, "runs/42", opts) with no Replayer:
//
//   - one that joins mid-generation gets the snapshot (with the id of the
//     last delta folded into it), then the live deltas that follow it,
//     neither missing nor repeating one;
//   - one that reconnects with Last-Event-ID gets the deltas it missed from
//     the replay buffer, or the snapshot when they are no longer there;
//   - when the producer calls Finish, each stream ends after its last
//     queued event (the final `done` or `error` event, which the client
//     takes as the end). For Options.Linger after Finish the topic still
//     answers late joiners (snapshot, then the end); after that the stored
//     outcome does, so a watcher checks the run is still going before it
//     calls Serve.
//
// A generation started by one client for itself (an agent run streamed to
// the request that started it, server/agent) is produced elsewhere (a job),
// so the request may subscribe after the first events: the producer waits
// for it first (WaitSubscriber, with a bound in ctx), and the requester gets
// every event rather than a snapshot.
//
// Cancelling a generation is the producer's business: it stops publishing,
// publishes its final event and calls Finish.
//
// # The database
//
// Serve never holds the database between events, so a restore does not
// wait for open streams: ServeOptions.Hold (the server's restore gate) is
// taken only around each Recheck and each Replayer page.
package stream
