// The signed-in user's notifications: the unread count and the newest few,
// kept live from GET /api/notifications/stream (read by api/sse.ts, which
// resumes it with Last-Event-ID, so nothing raised in between is missed).
import { api, SessionEnded, type Schemas } from "./api/client";
import { follow, type Follow, type SSEvent } from "./api/sse";

export type Note = Schemas["notificationResponse"];

const RECENT = 10;

class Notifications {
  unread: number | null = null;
  recent: Note[] = [];
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
    this.emit();
  }

  private async run(signal: AbortSignal) {
    const f: Follow = { signal, onEvent: (e) => this.onEvent(e), onOpen: () => this.opened(f) };
    try {
      const list = await api.get("/api/notifications", { query: { per_page: RECENT }, signal });
      this.recent = list.data.items;
      f.lastId = Math.max(0, ...list.data.items.map((n) => n.id));
      this.emit();
    } catch (e) {
      if (signal.aborted || e instanceof SessionEnded) return;
    }
    await follow("/api/notifications/stream", f);
  }

  private opened(f: Follow) {
    this.refreshCount();
    // With no id to resume from (nothing was listed), the stream replays
    // nothing: what was raised between the list and now is listed again.
    if (!f.lastId) void this.catchUp(f);
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

  private async catchUp(f: Follow) {
    try {
      const list = await api.get("/api/notifications", { query: { per_page: RECENT }, signal: f.signal });
      const known = new Set(this.recent.map((n) => n.id));
      const added = list.data.items.filter((n) => !known.has(n.id));
      if (!added.length) return;
      this.recent = [...this.recent, ...added].sort((a, b) => b.id - a.id).slice(0, RECENT);
      f.lastId = Math.max(f.lastId ?? 0, ...added.map((n) => n.id));
      this.emit();
    } catch {
      // the next reconnection lists them
    }
  }

  private onEvent(e: SSEvent) {
    if (e.event !== "notification") return;
    const n = e.data as Note;
    if (!this.recent.some((r) => r.id === n.id)) this.recent = [n, ...this.recent].slice(0, RECENT);
    this.emit();
    this.refreshCount(150);
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

export const notifications = new Notifications();
