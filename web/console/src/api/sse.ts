// Server-Sent Events read with fetch, so the Authorization header goes
// with them (EventSource cannot send it). follow keeps a stream open until
// signal aborts: it reconnects after a drop, a "lagged" or an "end" event
// with Last-Event-ID (so nothing raised in between is lost), with a fresh
// token each time; a 401 ends the session as any request's does.
import { session } from "../session";
import { ApiError, request, SessionEnded } from "./client";

export type SSEvent = { event: string; id: string; data: unknown };

export type Follow = {
  // lastId is where to resume from; the last id seen is kept in it.
  lastId?: number;
  onEvent: (e: SSEvent) => void;
  // onOpen runs each time a connection is answered (to catch up on state).
  onOpen?: () => void;
  signal: AbortSignal;
};

export async function follow(path: string, f: Follow): Promise<void> {
  let wait = 1000;
  while (!f.signal.aborted) {
    try {
      if (await once(path, f)) wait = 1000;
    } catch (e) {
      if (f.signal.aborted || e instanceof SessionEnded) return;
    }
    if (f.signal.aborted || !session.current) return;
    await sleep(wait, f.signal);
    wait = Math.min(wait * 2, 30_000);
  }
}

// once reads one connection to its end; it reports whether it opened.
async function once(path: string, f: Follow): Promise<boolean> {
  const token = await session.token();
  if (!token) throw new SessionEnded(401, "signed out");
  const headers: Record<string, string> = { Accept: "text/event-stream", Authorization: "Bearer " + token };
  if (f.lastId) headers["Last-Event-ID"] = String(f.lastId);
  const res = await fetch(path, { headers, signal: f.signal, cache: "no-store", credentials: "omit" });
  if (res.status === 401) {
    let detail = "the session has ended: sign in again";
    try {
      detail = ((await res.json()) as { detail?: string }).detail ?? detail;
    } catch {
      // keep the generic words
    }
    session.end(token, detail);
    throw new SessionEnded(401, detail);
  }
  if (!res.ok || !res.body) return false;
  f.onOpen?.();
  await read(res.body, (event, id, raw) => dispatch(f, event, id, raw));
  return true;
}

// read parses a stream of Server-Sent Events to its end.
async function read(body: ReadableStream<BufferSource>, on: (event: string, id: string, data: string) => void): Promise<void> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  let ev = { event: "message", id: "", data: [] as string[] };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let nl: number;
    while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + (buf.startsWith("\r\n", nl) ? 2 : 1));
      if (line === "") {
        if (ev.data.length) on(ev.event, ev.id, ev.data.join("\n"));
        ev = { event: "message", id: "", data: [] };
        continue;
      }
      if (line.startsWith(":")) continue; // heartbeat
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let val = colon < 0 ? "" : line.slice(colon + 1);
      if (val.startsWith(" ")) val = val.slice(1);
      if (field === "event") ev.event = val;
      else if (field === "data") ev.data.push(val);
      else if (field === "id") ev.id = val;
    }
  }
}

// post sends a JSON body to a route that answers with an event stream
// (a streamed generation) and reads the events to the stream's end. An
// error status is thrown as the client's ApiError; aborting signal stops
// reading (the server decides whether the work goes on).
export async function post(path: string, body: unknown, onEvent: (e: SSEvent) => void, signal: AbortSignal): Promise<void> {
  const res = await request("post", path, { body, signal, accept: "text/event-stream" });
  if (!res.body) throw new ApiError(0, "the server sent no stream");
  await read(res.body, (event, id, raw) => {
    let data: unknown;
    try {
      data = JSON.parse(raw);
    } catch {
      return;
    }
    onEvent({ event, id, data });
  });
}

function dispatch(f: Follow, event: string, id: string, raw: string) {
  let data: unknown;
  try {
    data = JSON.parse(raw);
  } catch {
    return;
  }
  const n = Number(id);
  if (n > (f.lastId ?? 0)) f.lastId = n;
  if (event === "lagged") {
    // The stream ends next; resume from the id the server names.
    const last = (data as { last_event_id?: unknown }).last_event_id;
    if (typeof last === "number") f.lastId = last;
  }
  // "end": the server closes the stream next; follow reconnects with a
  // fresh token, and a revoked session answers 401 there.
  f.onEvent({ event, id, data });
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = window.setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      window.clearTimeout(t);
      resolve();
    }, { once: true });
  });
}
