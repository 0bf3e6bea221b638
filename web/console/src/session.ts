// The one place that holds the bearer token. It is kept in localStorage so
// that a reload and another tab of the same browser keep the session; it
// never goes into a URL or a cookie. The token is refreshed (POST
// /api/auth/refresh) before it expires, by a timer and again before any
// request that finds it close to expiry (timers sleep in background tabs).
import type { components } from "./api/schema";

export type Token = components["schemas"]["tokenResponse"];
export type User = components["schemas"]["userResponse"];

const KEY = "copydesk.session";

// Why there is no session: never signed in (null), signed out on purpose,
// or ended by the server (revoked, expired, disabled) with its detail.
export type Ended = { reason: "signed-out" | "ended"; message: string; userId: number | null; email?: string; user?: User };

type State = { token: Token | null; ended: Ended | null };

function margin(t: Token): number {
  // Refresh a quarter of the lifetime before expiry, at most 5 minutes before.
  return Math.min(5 * 60_000, (t.expires_in * 1000) / 4);
}

function load(): State {
  let raw: string | null = null;
  try {
    raw = localStorage.getItem(KEY);
  } catch {
    return { token: null, ended: null };
  }
  if (!raw) return { token: null, ended: null };
  try {
    const t = JSON.parse(raw) as Token;
    if (typeof t.access_token !== "string" || !t.user) throw new Error("bad");
    if (Date.parse(t.expires_at) <= Date.now()) {
      localStorage.removeItem(KEY);
      return { token: null, ended: { reason: "ended", message: "Your session expired: sign in again.", userId: t.user.id, email: t.user.email } };
    }
    return { token: t, ended: null };
  } catch {
    localStorage.removeItem(KEY);
    return { token: null, ended: null };
  }
}

class Session {
  private state: State = load();
  private listeners = new Set<() => void>();
  private timer: number | undefined;
  private refreshing: Promise<void> | null = null;

  constructor() {
    window.addEventListener("storage", (e) => {
      if (e.key !== KEY && e.key !== null) return;
      this.adopt(load());
    });
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible") void this.token();
    });
    this.schedule();
  }

  get current(): Token | null {
    return this.state.token;
  }
  get ended(): Ended | null {
    return this.state.ended;
  }
  // user is the signed-in user, and while the sign-in dialog asks again
  // after the server ended the session, the user it was: the screen under
  // the dialog stays as it was (what it shows depends on the role).
  get user(): User | null {
    return this.state.token?.user ?? this.state.ended?.user ?? null;
  }

  subscribe(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private emit() {
    for (const fn of this.listeners) fn();
  }

  // What another tab wrote: a refreshed token, a new sign-in, or none.
  private adopt(next: State) {
    const prev = this.state.token;
    if (!next.token) {
      if (prev) {
        this.state = { token: null, ended: { reason: "ended", message: "You were signed out in another tab.", userId: prev.user.id, email: prev.user.email, user: prev.user } };
        this.schedule();
        this.emit();
      }
      return;
    }
    if (prev && prev.access_token === next.token.access_token) return;
    this.state = { token: next.token, ended: null };
    this.schedule();
    this.emit();
  }

  // signedIn keeps the token of a login.
  signedIn(t: Token) {
    this.state = { token: t, ended: null };
    this.save();
    this.schedule();
    this.emit();
  }

  // updatedUser keeps the signed-in user's new profile (the account
  // screen's answer), so the header shows it at once.
  updatedUser(u: User) {
    const t = this.state.token;
    if (!t || t.user.id !== u.id) return;
    this.state = { token: { ...t, user: u }, ended: null };
    this.save();
    this.emit();
  }

  private save() {
    try {
      if (this.state.token) localStorage.setItem(KEY, JSON.stringify(this.state.token));
      else localStorage.removeItem(KEY);
    } catch {
      // storage refused (private mode quota): the session lives in this tab only
    }
  }

  // end records that the server refused token, with its detail. A refusal of
  // a token that is no longer the current one (a reply to a request sent
  // before a refresh or a new sign-in) changes nothing.
  end(token: string, detail: string) {
    const cur = this.state.token;
    if (!cur || cur.access_token !== token) return;
    this.state = { token: null, ended: { reason: "ended", message: sentence(detail), userId: cur.user.id, email: cur.user.email, user: cur.user } };
    this.save();
    this.schedule();
    this.emit();
  }

  // signOut forgets the token locally; the caller has revoked it.
  signedOut(message = "You signed out.") {
    const cur = this.state.token;
    this.state = { token: null, ended: { reason: "signed-out", message, userId: cur?.user.id ?? null } };
    this.save();
    this.schedule();
    this.emit();
  }

  private schedule() {
    window.clearTimeout(this.timer);
    const t = this.state.token;
    if (!t) return;
    const at = Date.parse(t.expires_at) - margin(t);
    this.timer = window.setTimeout(() => void this.refresh(), Math.max(0, Math.min(at - Date.now(), 2 ** 31 - 1)));
  }

  // token is the token to send, refreshed first when it is close to expiry.
  async token(): Promise<string | null> {
    const t = this.state.token;
    if (!t) return null;
    if (Date.now() >= Date.parse(t.expires_at) - margin(t)) await this.refresh();
    return this.state.token?.access_token ?? t.access_token;
  }

  refresh(): Promise<void> {
    if (!this.refreshing) {
      this.refreshing = this.doRefresh().finally(() => {
        this.refreshing = null;
      });
    }
    return this.refreshing;
  }

  private async doRefresh() {
    const t = this.state.token;
    if (!t) return;
    let res: Response;
    try {
      res = await fetch("/api/auth/refresh", {
        method: "POST",
        headers: { Accept: "application/json", Authorization: "Bearer " + t.access_token },
        cache: "no-store",
        credentials: "omit",
      });
    } catch {
      // Offline for now: try again in 30 s; the token still works until it expires.
      window.clearTimeout(this.timer);
      this.timer = window.setTimeout(() => void this.refresh(), 30_000);
      return;
    }
    if (this.state.token?.access_token !== t.access_token) return; // another tab or a sign-in moved on
    if (res.ok) {
      this.signedIn((await res.json()) as Token);
      return;
    }
    let detail = `the server answered ${res.status}`;
    try {
      const b = (await res.json()) as { detail?: string };
      if (b.detail) detail = b.detail;
    } catch {
      // keep the status
    }
    if (res.status === 401) this.end(t.access_token, detail);
    else {
      window.clearTimeout(this.timer);
      this.timer = window.setTimeout(() => void this.refresh(), 30_000);
    }
  }
}

// sentence gives a server detail a capital and a full stop.
export function sentence(s: string): string {
  if (!s) return s;
  const t = s.charAt(0).toUpperCase() + s.slice(1);
  return /[.!?]$/.test(t) ? t : t + ".";
}

export const session = new Session();
