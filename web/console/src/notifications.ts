// The signed-in user's notifications: the unread count and the newest few,
// kept live from GET /api/notifications/stream. The stream is read with
// fetch, which can send the Authorization header (EventSource cannot), and
// resumed with Last-Event-ID after a drop, a "lagged" or an "end" event, so
// nothing raised in between is missed.
import { api, SessionEnded, type Schemas } from "./api/client";
import { session } from "./session";

export type Note = Schemas["notificationResponse"];

const RECENT = 10;

class Notifications {
  unread: number | null = null;
  recent: Note[] = [];
  error: string | null = null;
  private lastId = 0;
  private ac: AbortController | null = null;
  private listeners = new Set<() => void>();
  private countTimer: number | undefined;

  subscribe(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => void this.listeners.delete(fn);
  }
  private emit() {
    for (const fn of this.listeners) fn();
  }

  start() {
    if (this.ac) return;
    const ac = new AbortController();
    this.ac = ac;
    void this.run(ac.signal);
  }

  stop() {
    this.ac?.abort();
    this.ac = null;
    this.unread = null;
    this.recent = [];
    this.lastId = 0;
    this.emit();
  }

  private async run(signal: AbortSignal) {
    try {
      const list = await api.get("/api/notifications", { query: { per_page: RECENT }, signal });
      this.recent = list.data.items;
      this.lastId = Math.max(0, ...list.data.items.map((n) => n.id));
      this.emit();
    } catch (e) {
      if (signal.aborted || e instanceof SessionEnded) return;
    }
    let wait = 1000;
    while (!signal.aborted) {
      try {
        const opened = await this.stream(signal);
        if (opened) wait = 1000;
      } catch (e) {
        if (signal.aborted || e instanceof SessionEnded) return;
      }
      if (signal.aborted || !session.current) return;
      await sleep(wait, signal);
      wait = Math.min(wait * 2, 30_000);
    }
  }

  // refreshCount asks the server, which is always right; events only say
  // when to ask (an event replayed after a reconnect is not counted twice).
  refreshCount(delay = 0) {
    window.clearTimeout(this.countTimer);
    this.countTimer = window.setTimeout(async () => {
      try {
        const r = await api.get("/api/notifications/unread-count", { signal: this.ac?.signal });
        this.unread = r.data.unread;
        this.emit();
      } catch {
        // the next event or reconnect asks again
      }
    }, delay);
  }

  // stream reads one connection to its end; it reports whether it opened.
  private async stream(signal: AbortSignal): Promise<boolean> {
    const token = await session.token();
    if (!token) throw new SessionEnded(401, "signed out");
    const headers: Record<string, string> = { Accept: "text/event-stream", Authorization: "Bearer " + token };
    if (this.lastId) headers["Last-Event-ID"] = String(this.lastId);
    const res = await fetch("/api/notifications/stream", { headers, signal, cache: "no-store", credentials: "omit" });
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
    this.refreshCount();
    // With no id to resume from (nothing was listed), the stream replays
    // nothing: what was raised between the list and now is listed again.
    if (!this.lastId) void this.catchUp(signal);
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    let ev = { event: "message", id: "", data: [] as string[] };
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return true;
      buf += value;
      let nl: number;
      while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + (buf.startsWith("\r\n", nl) ? 2 : 1));
        if (line === "") {
          if (ev.data.length) this.dispatch(ev.event, ev.id, ev.data.join("\n"));
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

  private async catchUp(signal: AbortSignal) {
    try {
      const list = await api.get("/api/notifications", { query: { per_page: RECENT }, signal });
      const known = new Set(this.recent.map((n) => n.id));
      const added = list.data.items.filter((n) => !known.has(n.id));
      if (!added.length) return;
      this.recent = [...this.recent, ...added].sort((a, b) => b.id - a.id).slice(0, RECENT);
      this.lastId = Math.max(this.lastId, ...added.map((n) => n.id));
      this.emit();
    } catch {
      // the next reconnection lists them
    }
  }

  private dispatch(event: string, id: string, data: string) {
    let v: unknown;
    try {
      v = JSON.parse(data);
    } catch {
      return;
    }
    if (event === "notification") {
      const n = v as Note;
      const nid = Number(id) || n.id;
      if (nid > this.lastId) this.lastId = nid;
      if (!this.recent.some((r) => r.id === n.id)) this.recent = [n, ...this.recent].slice(0, RECENT);
      this.emit();
      this.refreshCount(150);
    } else if (event === "lagged") {
      const last = (v as { last_event_id?: number }).last_event_id;
      if (typeof last === "number") this.lastId = last;
    }
    // "end": the server closes the stream next; the loop reconnects with a
    // fresh token, and a revoked session answers 401 there.
  }

  async markRead(n: Note) {
    if (n.read_at) return;
    const r = await api.post("/api/notifications/{id}/read", { path: { id: n.id } });
    this.recent = this.recent.map((x) => (x.id === n.id ? r.data : x));
    this.emit();
    this.refreshCount();
  }

  async markAllRead() {
    await api.post("/api/notifications/read-all", {});
    const now = new Date().toISOString();
    this.recent = this.recent.map((x) => (x.read_at ? x : { ...x, read_at: now }));
    this.emit();
    this.refreshCount();
  }
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

export const notifications = new Notifications();
