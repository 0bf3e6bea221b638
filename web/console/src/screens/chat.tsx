// Chat: the user's conversations (searchable, newest activity first) and
// one conversation, whose reply streams in as the model writes it. The
// reply runs on the server: a page that goes away and comes back finds it
// finished, or follows the rest of it (GET /api/openchat/messages/{id}/stream,
// resumed with Last-Event-ID after a drop). Replies are shown through the
// Markdown preview (elements, never HTML) with a Copy button on code blocks.
// Regenerated replies and edited messages are branches, stepped through
// with the buttons beside "2 / 3". Export downloads through the API with
// the Authorization header (a blob: address, no token in a URL).
import { useEffect, useRef, useState } from "preact/hooks";
import { ApiError, api, download, url, type Schemas } from "../api/client";
import { follow, post, type SSEvent } from "../api/sse";
import type { ScreenProps } from "../lazy";
import { Markdown } from "../markdown";
import { NoProvider, useNoProvider } from "../noprovider";
import { envPath, navigate } from "../router";
import { DeleteMessage } from "./chat-delete";
import { Alert, canEdit, errorText, Field, Heading, Link, Select, TextArea, useAction, useDebounced, useResource, When } from "../ui";
import { Confirm } from "../confirm";

type Conversation = Schemas["chatConversationResponse"];
type Message = Schemas["chatMessageResponse"];

export const untitled = "New conversation";

// A message typed before its conversation existed: the new conversation's
// screen sends it when it opens (the address changes to ?c=<id> first).
let pending: { conversation: number; content: string } | null = null;

export function Chat({ env }: ScreenProps) {
  const open = Number(new URLSearchParams(location.search).get("c")) || null;
  const [q, setQ] = useState("");
  const query = useDebounced(q.trim(), 250);
  const list = useResource(
    (signal) => api.get("/api/openchat/conversations", { query: { sort: "-activity_at", per_page: 100, ...(query ? { q: query } : {}) }, signal }),
    [query],
  );
  const items = list.data?.data.items ?? [];
  const provider = useNoProvider(env);
  return (
    <>
      <Heading>Chat</Heading>
      {provider.missing && <NoProvider needs="chat" />}
      <div class="chat">
        <section class="chat-list" aria-labelledby="chat-list-h">
          <h2 id="chat-list-h">Conversations</h2>
          <div role="search">
            <Field label="Search conversations" name="q" type="search" value={q} onValue={setQ} />
          </div>
          <p>
            <Link href={envPath(env, "chat")}>New conversation</Link>
          </p>
          {list.error && <Alert>{list.error}</Alert>}
          {list.data && items.length === 0 && (
            <p class="muted">{query ? `No conversation holds “${query}”.` : "No conversations yet: write a message to start one."}</p>
          )}
          <ul class="plain">
            {items.map((c) => (
              <li key={c.id}>
                <Link href={envPath(env, "chat") + "?c=" + c.id} aria-current={c.id === open ? "page" : undefined}>
                  {c.title || untitled}
                </Link>
                <span class="muted small">
                  {" "}
                  <When at={c.activity_at} />
                </span>
              </li>
            ))}
          </ul>
        </section>
        <div class="chat-main">
          {open ? <Open key={open} id={open} env={env} onChanged={list.reload} saw={provider.saw} /> : <Start env={env} saw={provider.saw} missing={provider.missing} />}
        </div>
      </div>
    </>
  );
}

// Start is the composer of a conversation not made yet: sending makes it
// (its usage counts in this environment) and opens it.
// saw(e) takes the server's refusal for want of a credential (the screen
// shows the empty state instead). While none is configured (missing),
// there is no composer: sending would make a conversation the model
// cannot answer.
function Start({ env, saw, missing }: { env: number; saw: (e: unknown) => boolean; missing: boolean }) {
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const agents = useResource((signal) => api.get("/api/agents", { query: { environment_id: env, is_active: true, per_page: 200 }, signal }), [env]);
  const [agent, setAgent] = useState("");
  async function start(content: string) {
    setBusy(true);
    setError(null);
    try {
      const c = await api.post("/api/openchat/conversations", { body: { environment_id: env, ...(agent ? { agent_id: Number(agent) } : {}) } });
      pending = { conversation: c.data.id, content };
      navigate(envPath(env, "chat") + "?c=" + c.data.id);
    } catch (e) {
      if (!saw(e)) setError(errorText(e));
      setBusy(false);
    }
  }
  return (
    <section aria-labelledby="chat-new-h">
      <h2 id="chat-new-h">{untitled}</h2>
      {canEdit() && (agents.data?.data.items.length ?? 0) > 0 && (
        <Select label="Answered by" name="agent" value={agent} onValue={setAgent}
          options={[["", "The default model"] as const, ...(agents.data?.data.items ?? []).map((a) => [String(a.id), `${a.name} (agent)`] as const)]} />
      )}
      {error && <Alert>{error}</Alert>}
      {!missing && <Composer busy={busy} onSend={start} />}
    </section>
  );
}

function Composer({ busy, onSend }: { busy: boolean; onSend: (content: string) => Promise<void> | void }) {
  const [text, setText] = useState("");
  if (!canEdit()) return <p class="notice">Writing in a conversation needs the editor role.</p>;
  return (
    <form
      class="composer"
      onSubmit={(e) => {
        e.preventDefault();
        const t = text.trim();
        if (!t || busy) return;
        setText("");
        void onSend(t);
      }}
    >
      <TextArea label="Message" name="message" value={text} onValue={setText} rows={3} />
      <div class="actions">
        <button type="submit" class="primary" disabled={busy || !text.trim()}>
          Send
        </button>
      </div>
    </form>
  );
}

// The reply being written: its id (once known) and its text so far.
type Live = { id: number | null; text: string };

function Open({ id, env, onChanged, saw }: { id: number; env: number; onChanged: () => void; saw: (e: unknown) => boolean }) {
  const editor = canEdit();
  const conv = useResource((signal) => api.get("/api/openchat/conversations/{id}", { path: { id }, signal }), [id]);
  const msgs = useResource((signal) => api.get("/api/openchat/conversations/{id}/messages", { path: { id }, query: { per_page: 200 }, signal }), [id]);
  const [live, setLive] = useState<Live | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [madeTitle, setMadeTitle] = useState<string | null>(null);
  const ac = useRef<AbortController | null>(null);
  useEffect(() => () => ac.current?.abort(), []);
  const c = conv.data?.data;
  const messages = msgs.data?.data.items ?? [];
  const title = c?.title || madeTitle || untitled;

  // on applies one event of a reply's stream; it says whether the reply ended.
  function on(ev: SSEvent): boolean {
    const d = ev.data as Record<string, unknown>;
    switch (ev.event) {
      case "message":
        setLive({ id: (d as Message).id, text: "" });
        return false;
      case "delta":
        if (typeof d.text === "string") {
          const piece = d.text;
          setLive((l) => ({ id: l?.id ?? null, text: (l?.text ?? "") + piece }));
        }
        return false;
      case "snapshot":
        setLive({ id: (d.message as Message | undefined)?.id ?? null, text: String(d.text ?? "") });
        return false;
      case "title":
        if (typeof d.title === "string") setMadeTitle(d.title);
        onChanged();
        return false;
      case "done": {
        const m = d.message as Message | undefined;
        if (m?.status === "failed") setError(`The reply failed: ${m.error || "the model gave no answer"}`);
        return true;
      }
      case "error":
        setError(String(d.detail ?? "the reply failed"));
        return true;
      default:
        return false;
    }
  }

  // finished reloads what the server stored once a reply ended.
  function finished() {
    setLive(null);
    ac.current = null;
    msgs.reload();
    conv.reload();
    onChanged();
  }

  // watch follows a reply being written, from the start or from lastId.
  async function watch(replyId: number, lastId?: number) {
    const a = new AbortController();
    ac.current = a;
    setLive((l) => (lastId && l ? l : { id: replyId, text: "" }));
    await follow(url("/api/openchat/messages/{id}/stream", { id: replyId }), {
      ...(lastId ? { lastId } : {}),
      signal: a.signal,
      onEvent: (ev) => {
        if (on(ev)) a.abort();
      },
    });
    if (ac.current === a) finished();
  }

  // run sends a request that answers with the reply's stream; a stream
  // cut before the reply ended is followed on from its last event.
  async function run(path: string, body: unknown, method: "post" | "put" = "post") {
    setError(null);
    setNotice(null);
    const a = new AbortController();
    ac.current = a;
    setLive({ id: null, text: "" });
    let replyId: number | null = null;
    let lastId = 0;
    let ended = false;
    try {
      await post(path, body, (ev) => {
        if (Number(ev.id) > lastId) lastId = Number(ev.id);
        if (ev.event === "message") replyId = (ev.data as Message).id;
        if (on(ev)) ended = true;
      }, a.signal, method);
    } catch (e) {
      if (a.signal.aborted) return;
      // A stream cut after the reply was stored: the reply goes on.
      if (!ended && replyId !== null && !(e instanceof ApiError)) return watch(replyId, lastId || undefined);
      if (!saw(e)) setError(errorText(e));
      setLive(null);
      ac.current = null;
      return;
    }
    if (a.signal.aborted) return;
    if (!ended && replyId !== null) return watch(replyId, lastId || undefined);
    finished();
  }

  const send = (content: string) => run(url("/api/openchat/conversations/{id}/messages", { id }), { content, stream: true });
  const regenerate = (m: Message) => run(url("/api/openchat/messages/{id}/regenerate", { id: m.id }), { stream: true });
  const edit = (m: Message, content: string) => run(url("/api/openchat/messages/{id}", { id: m.id }), { content, stream: true }, "put");

  // A message typed on the new conversation's screen is sent here; a reply
  // still being written when the conversation opens is followed.
  const started = useRef(false);
  useEffect(() => {
    if (started.current || !msgs.data) return;
    started.current = true;
    if (pending?.conversation === id) {
      const content = pending.content;
      pending = null;
      void send(content);
      return;
    }
    const last = messages[messages.length - 1];
    if (last?.role === "assistant" && last.status === "generating") void watch(last.id);
  }, [msgs.data]);

  async function stop() {
    const replyId = live?.id;
    if (!replyId) return;
    try {
      await api.post("/api/openchat/messages/{id}/stop", { path: { id: replyId } });
      setNotice("Stopped: the reply keeps what it had written.");
    } catch (e) {
      if (!(e instanceof ApiError && e.status === 409)) setError(errorText(e));
    }
    ac.current?.abort();
    finished();
  }

  async function showBranch(messageId: number) {
    setError(null);
    try {
      await api.put("/api/openchat/conversations/{id}", { path: { id }, body: { current_message_id: messageId } });
      msgs.reload();
    } catch (e) {
      setError(errorText(e));
    }
  }

  if (conv.error) return <Alert>{conv.error}</Alert>;
  if (!c) return <p role="status">Loading the conversation…</p>;
  const writing = live !== null;
  // While a reply is written, the stored one (status generating) gives way to the live text.
  const shown = messages.filter((m) => !(writing && m.id === live.id));
  const lastReply = [...shown].reverse().find((m) => m.role === "assistant");
  return (
    <section aria-labelledby="chat-h">
      <h2 id="chat-h">{title}</h2>
      <Manage conv={c} env={env} editor={editor} onRenamed={(x) => conv.data && conv.set({ ...conv.data, data: x })} onChanged={onChanged} />
      {msgs.error && <Alert>{msgs.error}</Alert>}
      <ol class="messages" aria-label="Messages">
        {shown.map((m, n) => (
          <MessageItem key={m.id} m={m} n={n + 1} editor={editor && !writing} last={m === lastReply}
            onBranch={showBranch} onRegenerate={regenerate} onEdit={edit}
            remove={<DeleteMessage m={m} n={n + 1} below={shown.length - n - 1} onDeleted={(k) => { setNotice(`Deleted ${k} message${k === 1 ? "" : "s"}.`); msgs.reload(); conv.reload(); onChanged(); }} />} />
        ))}
        {writing && (
          <li class="msg assistant">
            <p class="who">The model</p>
            <div aria-busy="true">
              <Markdown text={live.text} label="Reply being written" copy />
            </div>
          </li>
        )}
      </ol>
      <p role="status" class="muted">
        {writing ? "The model is writing…" : ""}
      </p>
      {notice && <p class="notice">{notice}</p>}
      {error && <Alert>{error}</Alert>}
      {writing && editor && (
        <div class="actions">
          <button type="button" onClick={() => void stop()} disabled={!live.id}>
            Stop
          </button>
        </div>
      )}
      <Composer busy={writing} onSend={send} />
    </section>
  );
}

function MessageItem({ m, n, editor, last, onBranch, onRegenerate, onEdit, remove }: {
  m: Message;
  n: number;
  editor: boolean;
  last: boolean;
  onBranch: (id: number) => void;
  onRegenerate: (m: Message) => void;
  onEdit: (m: Message, content: string) => void;
  remove: preact.ComponentChildren;
}) {
  const [editing, setEditing] = useState<string | null>(null);
  const mine = m.role === "user";
  const at = m.sibling_ids.indexOf(m.id);
  const what = mine ? "version of this message" : "reply";
  return (
    <li class={"msg " + m.role}>
      <p class="who">{mine ? "You" : "The model"}</p>
      {m.sibling_ids.length > 1 && (
        <div class="branches" role="group" aria-label={mine ? `Versions of message ${n}` : `Replies at message ${n}`}>
          <button type="button" class="small" aria-label={`Previous ${what}`} disabled={at <= 0} onClick={() => onBranch(m.sibling_ids[at - 1] as number)}>
            ‹
          </button>
          <span>
            {at + 1} / {m.sibling_ids.length}
          </span>
          <button type="button" class="small" aria-label={`Next ${what}`} disabled={at >= m.sibling_ids.length - 1} onClick={() => onBranch(m.sibling_ids[at + 1] as number)}>
            ›
          </button>
        </div>
      )}
      {editing !== null ? (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            if (!editing.trim()) return;
            onEdit(m, editing.trim());
            setEditing(null);
          }}
        >
          <TextArea label="Edit your message" name="edit" value={editing} onValue={setEditing} rows={3} />
          <div class="actions">
            <button type="submit" class="primary">
              Send the edited message
            </button>
            <button type="button" onClick={() => setEditing(null)}>
              Cancel editing
            </button>
          </div>
        </form>
      ) : mine ? (
        <p class="user-text">{m.content}</p>
      ) : (
        <Markdown text={m.content} label={`Reply ${n}`} copy />
      )}
      {!mine && m.status !== "complete" && m.status !== "generating" && (
        <p class="muted small">{m.status === "incomplete" ? "Incomplete: the reply was stopped or cut off." : `Failed: ${m.error}`}</p>
      )}
      {editor && editing === null && (
        <div class="actions">
          {mine && (
            <button type="button" class="small" onClick={() => setEditing(m.content)}>
              Edit message {n}
            </button>
          )}
          {!mine && last && (
            <button type="button" class="small" onClick={() => onRegenerate(m)}>
              Regenerate
            </button>
          )}
          {remove}
        </div>
      )}
    </li>
  );
}

// Manage renames, exports and deletes the conversation.
function Manage({ conv, env, editor, onRenamed, onChanged }: {
  conv: Conversation;
  env: number;
  editor: boolean;
  onRenamed: (c: Conversation) => void;
  onChanged: () => void;
}) {
  const [mode, setMode] = useState<"rename" | "delete" | null>(null);
  const [name, setName] = useState(conv.title);
  const { busy: running, error, act } = useAction();
  const busy = running !== null;
  const title = conv.title || untitled;
  const rename = () =>
    act(async () => {
      const r = await api.put("/api/openchat/conversations/{id}", { path: { id: conv.id }, body: { title: name.trim() } });
      onRenamed(r.data);
      onChanged();
      setMode(null);
    });
  const remove = () =>
    act(async () => {
      await api.del("/api/openchat/conversations/{id}", { path: { id: conv.id } });
      onChanged();
      navigate(envPath(env, "chat"));
    });
  const exportAs = (format: "md" | "json") =>
    act(() =>
      download(
        url("/api/openchat/conversations/{id}/export", { id: conv.id }, { format }),
        `${(conv.title || "conversation-" + conv.id).replace(/[^\w.-]+/g, "-")}.${format}`,
        format === "md" ? "text/markdown" : "application/json",
      ),
    );

  return (
    <div class="chat-tools">
      <div class="row">
        {editor && (
          <button type="button" onClick={() => { setName(conv.title); setMode(mode === "rename" ? null : "rename"); }} aria-expanded={mode === "rename"}>
            Rename…
          </button>
        )}
        <button type="button" onClick={() => void exportAs("md")} disabled={busy}>
          Export as Markdown
        </button>
        <button type="button" onClick={() => void exportAs("json")} disabled={busy}>
          Export as JSON
        </button>
        {editor && (
          <button type="button" class="danger" onClick={() => setMode(mode === "delete" ? null : "delete")} aria-expanded={mode === "delete"}>
            Delete…
          </button>
        )}
      </div>
      {mode === "rename" && (
        <form class="row" onSubmit={(e) => { e.preventDefault(); void rename(); }}>
          <Field label="Title" name="title" value={name} onValue={setName} />
          <button type="submit" class="primary" disabled={busy || !name.trim()}>
            Save the title
          </button>
          <button type="button" onClick={() => setMode(null)}>
            Cancel
          </button>
        </form>
      )}
      {mode === "delete" && (
        <Confirm label="Confirm deletion" question={`Delete the conversation “${title}” and all its messages? This cannot be undone.`}
          action={`Delete “${title}”`} busy={busy} onConfirm={() => void remove()} onCancel={() => setMode(null)} />
      )}
      {error && <Alert>{error}</Alert>}
    </div>
  );
}
