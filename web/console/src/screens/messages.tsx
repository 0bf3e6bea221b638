// Messages between users: the conversations (one per person, with the
// number unread), the directory of the people one may write to
// (searchable), and a conversation (?with=<user id>): its messages oldest
// first, those received marked read when it opens, each deletable for
// oneself after a confirmation, and a form to write.
import { useEffect, useState } from "preact/hooks";
import { api, type Schemas } from "../api/client";
import { Confirm } from "../confirm";
import { notifications } from "../notifications";
import { messagesPath, usePath } from "../router";
import { session } from "../session";
import { Alert, errorText, Field, Heading, Link, num, TextArea, useAction, useDebounced, useResource, useSubmit, When } from "../ui";

type Person = Schemas["userSummaryResponse"];
type Message = Schemas["messageResponse"];
const nameOf = (p: Person) => p.full_name || p.username;
const newestReceived = () => notifications.recent.find((n) => n.kind === "message.received")?.id ?? 0;

export function Messages() {
  const path = usePath();
  const withId = Number(new URLSearchParams(path.split("?")[1] ?? "").get("with")) || null;
  // A message received (its notification) reads the conversations again.
  const [latest, setLatest] = useState(newestReceived);
  useEffect(() => notifications.subscribe(() => setLatest(newestReceived())), []);
  const convs = useResource((signal) => api.get("/api/messages/conversations", { query: { per_page: 100 }, signal }), [latest]);
  const [q, setQ] = useState("");
  const query = useDebounced(q.trim());
  const people = useResource((signal) => api.get("/api/messages/recipients", { query: { per_page: 50, ...(query ? { q: query } : {}) }, signal }), [query]);
  const list = convs.data?.data.items ?? [];
  const other = list.find((c) => c.with.id === withId)?.with ?? people.data?.data.items.find((p) => p.id === withId);

  return (
    <>
      <Heading>Messages</Heading>
      <div class="grid">
        <section aria-labelledby="msg-convs" class="card">
          <h2 id="msg-convs">Conversations</h2>
          {convs.error && <Alert>{convs.error}</Alert>}
          {convs.data && list.length === 0 && <p class="empty">No messages yet. Choose someone in the directory to write the first one.</p>}
          {list.length > 0 && (
            <ul class="notes">
              {list.map((c) => (
                <li key={c.with.id} class={c.unread ? "unread" : ""}>
                  <p class="note-title">
                    <Link href={`${messagesPath}?with=${c.with.id}`} aria-current={c.with.id === withId ? "page" : undefined}>
                      {nameOf(c.with)}
                      {c.unread > 0 && `, ${num(c.unread)} unread`}
                    </Link>
                  </p>
                  <p class="note-body">
                    {c.last_message.sender_id === c.with.id ? "" : "You: "}
                    {c.last_message.body.length > 80 ? c.last_message.body.slice(0, 80) + "…" : c.last_message.body}
                  </p>
                  <p class="muted small">
                    <When at={c.last_message.created_at} /> · {num(c.total)} message{c.total === 1 ? "" : "s"}
                  </p>
                </li>
              ))}
            </ul>
          )}
        </section>
        <section aria-labelledby="msg-people" class="card">
          <h2 id="msg-people">Directory</h2>
          <Field label="Find a person" name="q" type="search" value={q} onValue={setQ} />
          {people.error && <Alert>{people.error}</Alert>}
          {people.data && people.data.data.total === 0 && (
            <p class="empty">{query ? "Nobody by that name." : "Nobody to write to yet: you can write to people who share an environment with you, and to administrators."}</p>
          )}
          <ul class="people">
            {people.data?.data.items.map((p) => (
              <li key={p.id}>
                <Link href={`${messagesPath}?with=${p.id}`}>
                  Write to {nameOf(p)}
                  {p.full_name && <span class="muted small"> ({p.username})</span>}
                </Link>
              </li>
            ))}
          </ul>
        </section>
      </div>
      {withId !== null && <Conversation key={withId} id={withId} other={other} latest={latest} onChanged={convs.reload} />}
    </>
  );
}

function Conversation({ id, other, latest, onChanged }: { id: number; other: Person | undefined; latest: number; onChanged: () => void }) {
  const thread = useResource((signal) => api.get("/api/messages/conversations/{user_id}", { path: { user_id: id }, query: { per_page: 100 }, signal }), [id, latest]);
  const [error, setError] = useState<string | null>(null);
  const me = session.user?.id;
  const name = other ? nameOf(other) : `user ${id}`;
  const messages = [...(thread.data?.data.items ?? [])].reverse();

  // Opening the conversation reads what was received in it.
  useEffect(() => {
    const unread = messages.filter((m) => m.recipient_id === me && !m.read_at);
    if (!unread.length) return;
    Promise.all(unread.map((m) => api.post("/api/messages/{id}/read", { path: { id: m.id } }))).then(
      () => onChanged(),
      (e: unknown) => setError(errorText(e)),
    );
  }, [thread.data]);

  return (
    <section aria-labelledby="msg-thread" class="card thread">
      <h2 id="msg-thread">Conversation with {name}</h2>
      {thread.error && <Alert>{thread.error}</Alert>}
      {error && <Alert>{error}</Alert>}
      {thread.data && messages.length === 0 && <p class="empty">No messages with {name} yet: write the first one below.</p>}
      {thread.data && thread.data.data.total > messages.length && <p class="muted small">The last {num(messages.length)} of {num(thread.data.data.total)} messages.</p>}
      <ol class="dm">
        {messages.map((m) => (
          <MessageItem key={m.id} m={m} mine={m.sender_id === me} name={name} onDeleted={() => { thread.reload(); onChanged(); }} />
        ))}
      </ol>
      <Write to={id} name={name} onSent={() => { thread.reload(); onChanged(); }} />
    </section>
  );
}

function MessageItem({ m, mine, name, onDeleted }: { m: Message; mine: boolean; name: string; onDeleted: () => void }) {
  const [asking, setAsking] = useState(false);
  const { busy, error, run } = useAction<"delete">();
  const remove = () =>
    run("delete", async () => {
      await api.del("/api/messages/{id}", { path: { id: m.id } });
      setAsking(false);
      onDeleted();
    });
  const from = mine ? "You" : name;
  return (
    <li class={mine ? "mine" : ""}>
      <p class="muted small">
        <strong>{from}</strong>, <When at={m.created_at} />
        {mine && <> · {m.read_at ? <>read <When at={m.read_at} /></> : "not read yet"}</>}
      </p>
      {m.subject && <p><strong>{m.subject}</strong></p>}
      <p class="body">{m.body}</p>
      <button type="button" class="link" onClick={() => setAsking(true)} aria-expanded={asking}>
        Delete<span class="visually-hidden"> the message of {new Date(m.created_at).toLocaleString()}</span>…
      </button>
      {error && <Alert>{error}</Alert>}
      {asking && (
        <Confirm label="Delete the message" action="Delete for me" busy={busy !== null} onConfirm={() => void remove()} onCancel={() => setAsking(false)}
          question={<p>Delete {mine ? "your" : `${name}'s`} message “{m.body.length > 60 ? m.body.slice(0, 60) + "…" : m.body}” from your messages? {name} keeps it.</p>} />
      )}
    </li>
  );
}

function Write({ to, name, onSent }: { to: number; name: string; onSent: () => void }) {
  const [body, setBody] = useState("");
  const { errors, busy: sending, submit } = useSubmit(["body"], async () => {
    await api.post("/api/messages", { body: { recipient_id: to, body } });
    setBody("");
    onSent();
  });
  return (
    <form onSubmit={submit} aria-label={`Write to ${name}`}>
      <TextArea label={`Message to ${name}`} name="body" value={body} onValue={setBody} error={errors.fields.body} rows={3} />
      <button type="submit" disabled={sending || !body.trim()}>
        Send
      </button>
      {errors.form && <Alert>{errors.form}</Alert>}
    </form>
  );
}
