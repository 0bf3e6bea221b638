// Search phrases: the phrases an environment watches, each run on request
// (or on its schedule) to find the queries people search around it; the
// run is followed while it goes (asking again every 2 s: there is no
// stream), its ideas listed (?phrase=<id>), and the ideas sent to the
// keyword scout. Editors add, run and delete phrases.
import { useEffect, useState } from "preact/hooks";
import { api, type Schemas } from "../api/client";
import { Confirm } from "../confirm";
import type { ScreenProps } from "../lazy";
import { envPath } from "../router";
import { SendToScout } from "../scout";
import { session } from "../session";
import { Alert, canEdit, Field, Heading, Link, num, Pager, Select, Thead, useAction, useResource, useSubmit, When } from "../ui";

type Phrase = Schemas["phraseResponse"];
const schedules = [["0", "Only when run"], ["86400", "Every day"], ["604800", "Every week"], ["2592000", "Every 30 days"]] as const;
const kindWord = { related: "Related search", question: "Question", autocomplete: "Autocomplete" } as const;
const statusWord: Record<Phrase["run_status"], string> = { idle: "Never run", queued: "Waiting to run", running: "Running", succeeded: "Done", failed: "Failed", cancelled: "Cancelled" };
const isAdmin = () => session.user?.role === "admin" || session.user?.role === "super_admin";
const busy = (p: Phrase) => p.run_status === "queued" || p.run_status === "running";

export function SearchPhrases({ env }: ScreenProps) {
  const open = Number(new URLSearchParams(location.search).get("phrase")) || null;
  const [page, setPage] = useState(1);
  const list = useResource((signal) => api.get("/api/search-phrases", { query: { environment_id: env, page, per_page: 50 }, signal }), [env, page]);
  const [note, setNote] = useState<string | null>(null);
  const items = list.data?.data.items ?? [];
  const total = list.data?.data.total ?? 0;
  const anyRunning = items.some(busy);
  // While a run goes, the list is asked again every 2 s.
  useEffect(() => {
    if (!anyRunning) return;
    const t = window.setTimeout(list.reload, 2000);
    return () => window.clearTimeout(t);
  }, [list.data]);
  return (
    <>
      <Heading>Search phrases</Heading>
      <p class="muted">
        Phrases whose related searches, questions and autocompletions this environment collects as ideas for keywords. A run asks Google through SerpApi (with a
        SerpApi credential) and the AI provider of the environment's AI settings.{" "}
        {isAdmin() && <Link href="/admin/credentials">Credentials</Link>}
      </p>
      {canEdit() && <AddPhrase env={env} onAdded={(p) => { setNote(`Added “${p.phrase}”. Run it to find its ideas.`); list.reload(); }} />}
      {note && <p role="status">{note}</p>}
      {list.error && <Alert>{list.error}</Alert>}
      {list.data && total === 0 && (
        <p class="empty">No search phrases yet. {canEdit() ? "Add a phrase your readers search for above, then run it." : "An editor adds the phrases to watch."}</p>
      )}
      {items.length > 0 && (
        <table aria-label="Search phrases">
          <Thead cols={["Phrase", "Language", "Last run", "Schedule", "Actions"]} />
          <tbody>
            {items.map((p) => (
              <PhraseRow key={p.id} p={p} env={env} open={open === p.id} onChanged={(m) => { if (m) setNote(m); list.reload(); }} />
            ))}
          </tbody>
        </table>
      )}
      <Pager label="Pages of search phrases" page={page} pages={Math.ceil(total / 50)} onPage={setPage} />
      {open !== null && <Ideas env={env} id={open} phrase={items.find((p) => p.id === open)} />}
      {total > 0 && canEdit() && <SendToScout env={env} source="ideas" what="the ideas" />}
    </>
  );
}

function AddPhrase({ env, onAdded }: { env: number; onAdded: (p: Phrase) => void }) {
  const [phrase, setPhrase] = useState("");
  const [locale, setLocale] = useState("");
  const [schedule, setSchedule] = useState("0");
  const { errors, busy: sending, submit } = useSubmit(["phrase", "locale", "refresh_interval"], async () => {
    const r = await api.post("/api/search-phrases", {
      body: { environment_id: env, phrase, ...(locale.trim() ? { locale: locale.trim() } : {}), refresh_interval: Number(schedule) },
    });
    setPhrase("");
    onAdded(r.data);
  });
  return (
    <form class="row" onSubmit={submit} aria-label="Add a search phrase">
      <Field label="Phrase" name="phrase" value={phrase} onValue={setPhrase} error={errors.fields.phrase} required />
      <Field label="Language (optional)" name="locale" value={locale} onValue={setLocale} error={errors.fields.locale} hint="en, de, pt-BR; else the environment's" />
      <Select label="Run" name="refresh_interval" value={schedule} onValue={setSchedule} options={schedules} error={errors.fields.refresh_interval} />
      <button type="submit" disabled={sending}>
        Add the phrase
      </button>
      {errors.form && <Alert>{errors.form}</Alert>}
    </form>
  );
}

function PhraseRow({ p, env, open, onChanged }: { p: Phrase; env: number; open: boolean; onChanged: (message: string | null) => void }) {
  const { busy: working, error, run: act } = useAction<"run" | "delete">();
  const [asking, setAsking] = useState(false);
  const run = () =>
    act("run", async () => {
      await api.post("/api/search-phrases/{id}/run", { path: { id: p.id } });
      onChanged(null);
    });
  const remove = () =>
    act("delete", async () => {
      await api.del("/api/search-phrases/{id}", { path: { id: p.id } });
      setAsking(false);
      if (open) history.replaceState(null, "", envPath(env, "phrases")); // the screen stays (with its note); the ideas close
      onChanged(`Deleted “${p.phrase}” and its ideas.`);
    });
  return (
    <tr>
      <th scope="row">
        <Link href={envPath(env, "phrases") + `?phrase=${p.id}`} aria-current={open ? "true" : undefined}>
          {p.phrase}
        </Link>
        {!p.is_active && <span class="muted small"> (paused)</span>}
      </th>
      <td>{p.locale}</td>
      <td>
        {busy(p) ? (
          <span class="progress-cell" role="status">
            <progress aria-label={`Run of ${p.phrase}`} /> {statusWord[p.run_status]}…
          </span>
        ) : (
          <>
            {statusWord[p.run_status]}
            {p.last_run_at && (
              <>
                {" "}
                <When at={p.last_run_at} />
                {p.run_status === "succeeded" && <span class="muted small"> ({num(p.last_run_ideas)} new ideas)</span>}
              </>
            )}
          </>
        )}
        {p.last_run_error && <p class="field-error small">{p.last_run_error}</p>}
      </td>
      <td>
        {schedules.find((s) => Number(s[0]) === p.refresh_interval)?.[1] ?? `Every ${Math.round(p.refresh_interval / 3600)} hours`}
        {p.next_run_at && (
          <span class="muted small">
            {" "}
            (next <When at={p.next_run_at} />)
          </span>
        )}
      </td>
      <td>
        {canEdit() && (
          <div class="actions">
            <button type="button" onClick={() => void run()} disabled={working !== null || busy(p)}>
              Run<span class="visually-hidden"> “{p.phrase}”</span>
            </button>
            <button type="button" onClick={() => setAsking(true)} disabled={working !== null} aria-expanded={asking}>
              Delete…<span class="visually-hidden"> “{p.phrase}”</span>
            </button>
          </div>
        )}
        {error && <Alert>{error}</Alert>}
        {asking && (
          <Confirm label={`Delete “${p.phrase}”`} action="Delete the phrase" busy={working === "delete"} onConfirm={() => void remove()} onCancel={() => setAsking(false)}
            question={<p>Delete the phrase “{p.phrase}” and every idea found for it? The keywords already made from them stay.</p>} />
        )}
      </td>
    </tr>
  );
}

function Ideas({ env, id, phrase }: { env: number; id: number; phrase: Phrase | undefined }) {
  const [page, setPage] = useState(1);
  const ideas = useResource((signal) => api.get("/api/search-phrases/{id}/ideas", { path: { id }, query: { page, per_page: 50 }, signal }), [id, page, phrase?.last_run_at]);
  const total = ideas.data?.data.total ?? 0;
  return (
    <section aria-labelledby="phrase-ideas" class="card">
      <h2 id="phrase-ideas">Ideas for “{phrase?.phrase ?? id}”</h2>
      <p class="small">
        <Link href={envPath(env, "phrases")}>Close the ideas</Link>
      </p>
      {ideas.error && <Alert>{ideas.error}</Alert>}
      {ideas.data && total === 0 && <p class="empty">No ideas yet: {phrase && busy(phrase) ? "the run is going." : "run the phrase to find them."}</p>}
      {total > 0 && (
        <table aria-label={`Ideas for ${phrase?.phrase ?? id}`}>
          <Thead cols={["Idea", "Kind", "Found by", "Found"]} />
          <tbody>
            {ideas.data?.data.items.map((i) => (
              <tr key={i.id}>
                <th scope="row">{i.idea}</th>
                <td>{kindWord[i.kind]}</td>
                <td>{i.source === "serp" ? "Google (SerpApi)" : "AI"}</td>
                <td>
                  <When at={i.created_at} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <Pager label="Pages of ideas" page={page} pages={Math.ceil(total / 50)} onPage={setPage} />
    </section>
  );
}
