// The frame around every signed-in screen: a skip link, the header with
// the environment, the notifications bell and the user's sign-out, and for
// an environment's screens the navigation between its sections.
import type { ComponentChildren } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { api } from "./api/client";
import { notifications, type Note } from "./notifications";
import { envPath, navigate, screenOf, sections, type Section } from "./router";
import { session, sentence } from "./session";
import { Link, When } from "./ui";

export function useNotifications() {
  const [, force] = useState(0);
  useEffect(() => notifications.subscribe(() => force((n) => n + 1)), []);
  return notifications;
}

function BellIcon() {
  return (
    <svg width="20" height="20" viewBox="0 0 24 24" aria-hidden="true" focusable="false">
      <path fill="currentColor" d="M12 22a2.5 2.5 0 0 0 2.45-2h-4.9A2.5 2.5 0 0 0 12 22Zm7-6V11a7 7 0 0 0-5.5-6.84V3a1.5 1.5 0 0 0-3 0v1.16A7 7 0 0 0 5 11v5l-2 2v1h18v-1Z" />
    </svg>
  );
}

export function Bell() {
  const n = useNotifications();
  const [open, setOpen] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const button = useRef<HTMLButtonElement>(null);
  const panel = useRef<HTMLDivElement>(null);
  const count = n.unread;
  const label = count === null ? "Notifications" : `Notifications, ${count} unread`;

  useEffect(() => {
    if (!open) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key === "Escape") {
        setOpen(false);
        button.current?.focus();
      }
    };
    const onClick = (e: MouseEvent) => {
      const t = e.target as Node;
      if (!panel.current?.contains(t) && !button.current?.contains(t)) setOpen(false);
    };
    document.addEventListener("keydown", onKey);
    document.addEventListener("click", onClick);
    return () => {
      document.removeEventListener("keydown", onKey);
      document.removeEventListener("click", onClick);
    };
  }, [open]);

  const act = (p: Promise<unknown>) =>
    p.then(() => setError(null), (e: unknown) => setError(e instanceof Error ? sentence(e.message) : String(e)));

  return (
    <div class="bell">
      <button ref={button} type="button" class="icon" aria-label={label} aria-expanded={open} aria-controls="notifications-panel"
        onClick={() => setOpen(!open)}>
        <BellIcon />
        {count ? (
          <span class="badge" aria-hidden="true">
            {count > 99 ? "99+" : count}
          </span>
        ) : null}
      </button>
      <div ref={panel} id="notifications-panel" class="panel" role="region" aria-label="Notifications" hidden={!open}>
        <div class="panel-head">
          <h2>Notifications</h2>
          <button type="button" onClick={() => act(n.markAllRead())} disabled={!count}>
            Mark all as read
          </button>
        </div>
        {error && <p role="alert">{error}</p>}
        <NoteList notes={n.recent} onRead={(x) => act(n.markRead(x))} onOpen={() => setOpen(false)} />
      </div>
    </div>
  );
}

// NoteTitle is a link to the screen the notification is about, when the
// console has one; opening it marks the notification read.
function NoteTitle({ note, onOpen }: { note: Note; onOpen?: (() => void) | undefined }) {
  const to = screenOf(note.link, note.environment_id);
  if (!to) return <span>{note.title}</span>;
  return (
    <Link href={to} onFollow={() => {
      if (!note.read_at) void notifications.markRead(note).catch(() => undefined);
      onOpen?.();
    }}>
      {note.title}
    </Link>
  );
}

export function NoteList({ notes, onRead, onOpen }: { notes: Note[]; onRead?: (n: Note) => void; onOpen?: () => void }) {
  if (!notes.length) return <p class="muted">No notifications yet.</p>;
  return (
    <ul class="notes">
      {notes.map((x) => (
        <li key={x.id} class={x.read_at ? "" : "unread"}>
          <p class="note-title">
            {!x.read_at && <span class="visually-hidden">Unread: </span>}
            <NoteTitle note={x} onOpen={onOpen} />
          </p>
          {x.body && <p class="note-body">{x.body}</p>}
          <p class="muted small">
            <When at={x.created_at} />
            {onRead && !x.read_at && (
              <>
                {" · "}
                <button type="button" class="link" onClick={() => onRead(x)}>
                  Mark as read<span class="visually-hidden">: {x.title}</span>
                </button>
              </>
            )}
          </p>
        </li>
      ))}
    </ul>
  );
}

function UserMenu() {
  const user = session.user;
  const [busy, setBusy] = useState(false);
  async function signOut() {
    setBusy(true);
    try {
      await api.post("/api/auth/logout", {});
    } catch {
      // already ended on the server (401) or unreachable: forget it here all the same
    }
    session.signedOut();
    navigate("/", true);
  }
  return (
    <div class="user">
      <span class="muted" title={user?.email}>
        {user?.username}
      </span>
      <button type="button" onClick={signOut} disabled={busy}>
        Sign out
      </button>
    </div>
  );
}

export function Shell({ env, envName, section, children }: { env?: number; envName?: string | undefined; section?: Section; children: ComponentChildren }) {
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <Link href="/" class="brand">
          copydesk
        </Link>
        {env !== undefined && (
          <span class="env">
            <span class="visually-hidden">Environment: </span>
            {envName ?? "…"}
            <Link href="/" class="small">
              Change environment
            </Link>
          </span>
        )}
        <span class="spacer" />
        <Bell />
        <UserMenu />
      </header>
      <div class={env !== undefined ? "frame with-nav" : "frame"}>
        {env !== undefined && (
          <nav aria-label="Sections">
            <ul>
              {sections.map((s) => (
                <li key={s.id}>
                  <Link href={envPath(env, s.id)} aria-current={s.id === section ? "page" : undefined}>
                    {s.label}
                  </Link>
                </li>
              ))}
            </ul>
          </nav>
        )}
        <main id="main" tabIndex={-1}>
          {children}
        </main>
      </div>
    </>
  );
}
