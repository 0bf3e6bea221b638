// Live sessions: an agent's session in this environment that several
// people watch at once. Generating queues the work on the server; every
// watcher follows GET /api/live-agents/sessions/{id}/stream (fetch with the
// Authorization header, api/sse.ts): a snapshot of the text so far first
// (so one who opens it late catches up), then the pieces as they come, and
// who else is watching. Cancel keeps the text so far; the last output that
// succeeded can be saved as a WordPress or Astro draft.
import { useEffect, useState } from "preact/hooks";
import { api, url, type Schemas } from "../api/client";
import { follow } from "../api/sse";
import { Confirm } from "../confirm";
import type { ScreenProps } from "../lazy";
import { Markdown } from "../markdown";
import { NoProvider, useNoProvider } from "../noprovider";
import { envPath, navigate } from "../router";
import { SaveDraft } from "../savedraft";
import { Alert, canEdit, errorText, Field, Heading, Link, Select, TextArea, useAction, useResource, When } from "../ui";

type Session = Schemas["liveSessionResponse"];
type Generation = Schemas["liveGenerationResponse"];
type Watcher = Schemas["Watcher"];

export function Live({ env }: ScreenProps) {
  const open = Number(new URLSearchParams(location.search).get("s")) || null;
  const list = useResource((signal) => api.get("/api/live-agents/sessions", { query: { environment_id: env, sort: "-updated_at", per_page: 100 }, signal }), [env]);
  const sessions = list.data?.data.items ?? [];
  const provider = useNoProvider(env);
  return (
    <>
      <Heading>Live sessions</Heading>
      {provider.missing && <NoProvider needs="a live session" />}
      {open ? (
        <>
          <p>
            <Link href={envPath(env, "live")}>All live sessions</Link>
          </p>
          <Watch key={open} id={open} env={env} saw={provider.saw} />
        </>
      ) : (
        <>
          <StartSession env={env} />
          <section aria-labelledby="live-list-h">
            <h2 id="live-list-h">Sessions</h2>
            {list.error && <Alert>{list.error}</Alert>}
            {list.data && sessions.length === 0 && <p class="muted">No live session yet.</p>}
            <ul class="plain">
              {sessions.map((s) => (
                <li key={s.id}>
                  <Link href={envPath(env, "live") + "?s=" + s.id}>{s.title}</Link>
                  <span class="muted small">
                    {" "}
                    {s.status === "closed" ? "closed" : "open"} · <When at={s.updated_at} />
                  </span>
                </li>
              ))}
            </ul>
          </section>
        </>
      )}
    </>
  );
}

// StartSession opens a session with one of the agents that may run here.
function StartSession({ env }: { env: number }) {
  const agents = useResource((signal) => api.get("/api/agents", { query: { environment_id: env, is_active: true, per_page: 200 }, signal }), [env]);
  const items = agents.data?.data.items ?? [];
  const [agent, setAgent] = useState("");
  const [title, setTitle] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  if (!canEdit()) return <p class="notice">Starting a live session needs the editor role; you can watch the sessions below.</p>;
  if (agents.error) return <Alert>{agents.error}</Alert>;
  if (!agents.data) return null;
  if (items.length === 0) {
    return (
      <p class="notice">
        There is no agent in this environment yet: a live session runs one. <Link href={`/e/${env}/agents`}>Create an agent</Link>.
      </p>
    );
  }
  const chosen = agent || String(items[0]?.id ?? "");
  async function start(e: Event) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const r = await api.post("/api/live-agents/sessions", { body: { environment_id: env, agent_id: Number(chosen), ...(title.trim() ? { title: title.trim() } : {}) } });
      navigate(envPath(env, "live") + "?s=" + r.data.id);
    } catch (err) {
      setError(errorText(err));
      setBusy(false);
    }
  }
  return (
    <form onSubmit={start} aria-labelledby="live-start-h">
      <h2 id="live-start-h">Start a live session</h2>
      <div class="row">
        <Select label="Agent" name="agent" value={chosen} onValue={setAgent} options={items.map((a) => [String(a.id), a.name] as const)} />
        <Field label="Title (optional)" name="title" value={title} onValue={setTitle} />
        <button type="submit" class="primary" disabled={busy}>
          Start the session
        </button>
      </div>
      {error && <Alert>{error}</Alert>}
    </form>
  );
}

type Now = { generation: Generation | null; text: string };

// saw(e) takes the server's refusal for want of a credential (the screen
// shows the empty state instead).
function Watch({ id, env, saw }: { id: number; env: number; saw: (e: unknown) => boolean }) {
  const editor = canEdit();
  const detail = useResource((signal) => api.get("/api/live-agents/sessions/{id}", { path: { id }, signal }), [id]);
  const [now, setNow] = useState<Now>({ generation: null, text: "" });
  const [watchers, setWatchers] = useState<Watcher[]>([]);
  const [closed, setClosed] = useState<string | null>(null);
  const { busy: acting, error, setError, act } = useAction();
  const busy = acting !== null;
  const [prompt, setPrompt] = useState("");
  const session: Session | undefined = detail.data?.data.session;
  const isOpen = session?.status === "open" && closed === null;

  // Follow the session's stream while it is open.
  useEffect(() => {
    if (!detail.data || detail.data.data.session.status !== "open") return;
    const ac = new AbortController();
    void follow(url("/api/live-agents/sessions/{id}/stream", { id }), {
      signal: ac.signal,
      onEvent: (ev) => {
        const d = ev.data as Record<string, unknown>;
        switch (ev.event) {
          case "snapshot":
          case "resync": {
            const g = (d.generation as Generation | null) ?? null;
            setNow({ generation: g && (g.status === "queued" || g.status === "running") ? g : null, text: String(d.text ?? "") });
            setWatchers((d.watchers as Watcher[] | undefined) ?? []);
            break;
          }
          case "presence":
            setWatchers((d.watchers as Watcher[] | undefined) ?? []);
            break;
          case "generation":
            // queued, then started: its text starts empty
            setNow({ generation: ev.data as Generation, text: "" });
            break;
          case "delta":
            if (typeof d.text === "string") {
              const piece = d.text;
              setNow((n) => (n.generation && n.generation.id !== d.generation_id ? n : { ...n, text: n.text + piece }));
            }
            break;
          case "done":
          case "error":
            setNow({ generation: null, text: "" });
            if (ev.event === "error") setError(String(d.detail ?? "the generation ended unrecorded"));
            detail.reload();
            break;
          case "closed":
            setClosed(d.deleted ? "The session was deleted." : "The session was closed.");
            ac.abort();
            break;
        }
      },
    });
    return () => ac.abort();
  }, [detail.data?.data.session.status ?? null, id]);

  const generate = (e: Event) => {
    e.preventDefault();
    if (!prompt.trim()) return;
    void act(async () => {
      // The stream brings the generation (queued, started, its text, done):
      // taking it from this answer could bring back one already done.
      try {
        await api.post("/api/live-agents/sessions/{id}/generate", { path: { id }, body: { prompt: prompt.trim() } });
      } catch (err) {
        if (saw(err)) return;
        throw err;
      }
      setPrompt("");
    });
  };
  const cancel = () => act(() => api.post("/api/live-agents/sessions/{id}/cancel", { path: { id } }));
  const close = () => act(async () => {
    await api.post("/api/live-agents/sessions/{id}/close", { path: { id } });
    detail.reload();
  });

  if (detail.error) return <Alert>{detail.error}</Alert>;
  if (!detail.data || !session) return <p role="status">Loading the session…</p>;
  const transcript = detail.data.data.transcript;
  const running = now.generation !== null;
  const lastOk = [...transcript].reverse().find((t) => t.role === "output" && t.status === "complete");
  // Only a complete output is saved as a draft (docs/DECISIONS.md): a
  // newest output that was cancelled or failed is said to be left out.
  const newest = [...transcript].reverse().find((t) => t.role === "output");
  const leftOut = newest && newest.status !== "complete" && newest.content.trim() !== "";
  return (
    <section aria-labelledby="live-h">
      <h2 id="live-h">{session.title}</h2>
      <p class="muted small">
        {session.status === "closed" || closed ? "Closed" : "Open"} · started <When at={session.created_at} />
      </p>
      {isOpen && (
        <div class="watchers">
          <h3 id="live-watchers">Watching now</h3>
          <ul class="plain inline" aria-labelledby="live-watchers">
            {watchers.map((w) => (
              <li key={w.user_id}>{w.username}</li>
            ))}
          </ul>
        </div>
      )}
      {closed && <p class="notice">{closed}</p>}
      <ol class="messages" aria-label="Transcript">
        {transcript.map((t, n) => (
          <li key={n} class={"msg " + (t.role === "prompt" ? "user" : "assistant")}>
            {t.role === "prompt" ? (
              <>
                <p class="who">Prompt</p>
                <p class="user-text">{t.content}</p>
              </>
            ) : (
              <>
                <p class="who">Output{t.status === "incomplete" ? " (cancelled: the text so far)" : t.status === "failed" ? ` (failed: ${t.error})` : ""}</p>
                <Markdown text={t.content} label={`Output ${n + 1}`} copy />
              </>
            )}
          </li>
        ))}
        {running && now.generation && (
          <>
            <li class="msg user">
              <p class="who">Prompt</p>
              <p class="user-text">{now.generation.prompt}</p>
            </li>
            <li class="msg assistant">
              <p class="who">Output</p>
              <div class="stream" role="region" aria-label="Text so far" aria-busy="true" tabIndex={0}>
                {now.text}
              </div>
            </li>
          </>
        )}
      </ol>
      <p role="status" class="muted">
        {running ? (now.generation?.status === "queued" ? "Queued…" : "The agent is writing…") : ""}
      </p>
      {error && <Alert>{error}</Alert>}
      {editor && isOpen && (
        <>
          {running ? (
            <div class="actions">
              <button type="button" onClick={() => void cancel()} disabled={busy}>
                Cancel the generation
              </button>
            </div>
          ) : (
            <form onSubmit={generate}>
              <TextArea label="Prompt" name="prompt" value={prompt} onValue={setPrompt} rows={3} />
              <div class="actions">
                <button type="submit" class="primary" disabled={busy || !prompt.trim()}>
                  Generate
                </button>
              </div>
            </form>
          )}
        </>
      )}
      {editor && leftOut && !running && (
        <p class="muted small">
          The last output did not complete: its text so far is kept here but is not saved as a draft.
          {lastOk ? " Saving takes the last complete output." : " Generate again to have one to save."}
        </p>
      )}
      {editor && lastOk && !running && (
        <SaveDraft env={env} what="the last complete output" save={(target) => api.post("/api/live-agents/sessions/{id}/save-as-post", { path: { id }, body: { target } })} />
      )}
      {editor && (
        <div class="actions">
          {isOpen && (
            <button type="button" onClick={() => void close()} disabled={busy}>
              Close the session
            </button>
          )}
          <DeleteSession id={id} env={env} title={session.title} />
        </div>
      )}
    </section>
  );
}

function DeleteSession({ id, env, title }: { id: number; env: number; title: string }) {
  const [asking, setAsking] = useState(false);
  const [error, setError] = useState<string | null>(null);
  async function remove() {
    try {
      await api.del("/api/live-agents/sessions/{id}", { path: { id } });
      navigate(envPath(env, "live"));
    } catch (e) {
      setError(errorText(e));
    }
  }
  return (
    <>
      <button type="button" class="danger" onClick={() => setAsking(!asking)} aria-expanded={asking}>
        Delete…
      </button>
      {asking && (
        <Confirm label="Confirm deletion" action={`Delete “${title}”`} onConfirm={() => void remove()} onCancel={() => setAsking(false)}
          question={<p>Delete the live session “{title}” and its transcript? Posts saved from it stay. This cannot be undone.</p>} />
      )}
      {error && <Alert>{error}</Alert>}
    </>
  );
}
