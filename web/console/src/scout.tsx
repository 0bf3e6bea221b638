// SendToScout starts a keyword scout run of an environment that reads one
// of its sources (web: the titles of its web sources' items; ideas: its
// search phrases' ideas), follows it while it runs (asking again every
// second: the run has no stream) and lists the keywords it proposes, which
// editors add to the environment's keywords.
import { useEffect, useState } from "preact/hooks";
import { api, type Schemas } from "./api/client";
import { envPath } from "./router";
import { Alert, errorText, Link, num, Thead } from "./ui";

type Run = Schemas["scoutRunDetailResponse"];
const finished = new Set(["succeeded", "failed", "cancelled"]);
const words = { web: "the titles of the web sources' items", ideas: "the search phrases' ideas" } as const;

export function SendToScout({ env, source, what, disabled }: { env: number; source: "web" | "ideas"; what: string; disabled?: boolean }) {
  const [run, setRun] = useState<Run | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [chosen, setChosen] = useState<Set<number>>(new Set());
  const [added, setAdded] = useState<string | null>(null);
  const running = run !== null && !finished.has(run.status);

  useEffect(() => {
    if (!run || !running) return;
    const t = window.setTimeout(() => {
      api.get("/api/seo/scout/runs/{id}", { path: { id: run.id } }).then(
        (r) => {
          setRun(r.data);
          if (r.data.status === "succeeded") setChosen(new Set(r.data.candidates.filter((c) => c.status === "new").map((c) => c.id)));
        },
        (e: unknown) => setError(errorText(e)),
      );
    }, 1000);
    return () => window.clearTimeout(t);
  }, [run, running]);

  async function start() {
    setBusy(true);
    setError(null);
    setAdded(null);
    try {
      const r = await api.post("/api/seo/scout/runs", { body: { environment_id: env, sources: [source] } });
      setRun({ ...r.data, candidates: [] });
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  }

  async function cancel() {
    if (!run) return;
    try {
      const r = await api.post("/api/seo/scout/runs/{id}/cancel", { path: { id: run.id } });
      setRun({ ...r.data, candidates: [] });
    } catch (e) {
      setError(errorText(e));
    }
  }

  async function accept() {
    if (!run) return;
    setBusy(true);
    setError(null);
    try {
      const r = await api.post("/api/seo/scout/runs/{id}/accept", { path: { id: run.id }, body: { candidates: [...chosen] } });
      setAdded(`${num(r.data.created)} keyword${r.data.created === 1 ? "" : "s"} added` + (r.data.skipped ? `, ${num(r.data.skipped)} skipped (the environment had them)` : "") + ".");
      const again = await api.get("/api/seo/scout/runs/{id}", { path: { id: run.id } });
      setRun(again.data);
      setChosen(new Set());
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  }

  const toggle = (id: number) => {
    const next = new Set(chosen);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    setChosen(next);
  };

  return (
    <section aria-labelledby={`scout-${source}`} class="card">
      <h2 id={`scout-${source}`}>Keyword scout</h2>
      <p class="muted small">The scout reads {words[source]} and proposes the keywords this environment does not have yet.</p>
      <button type="button" onClick={() => void start()} disabled={disabled || busy || running}>
        Send {what} to the scout
      </button>
      {error && <Alert>{error}</Alert>}
      {run && running && (
        <div class="progress" role="status">
          <label for={`scout-${source}-progress`}>Scout run {run.id}: {run.status === "queued" ? "waiting to start" : "reading"}…</label>
          <progress id={`scout-${source}-progress`} />
          <button type="button" onClick={() => void cancel()}>
            Cancel the scout run
          </button>
        </div>
      )}
      {run && !running && (
        <div role="status">
          <p>
            Scout run {run.id} {run.status}
            {run.status === "succeeded" && `: ${num(run.candidate_count)} keyword${run.candidate_count === 1 ? "" : "s"} proposed, ${num(run.known)} already known.`}
            {run.error && `: ${run.error}`}
          </p>
          {run.notes && <p class="muted small">{run.notes}</p>}
          {added && (
            <p>
              {added} <Link href={envPath(env, "keywords")}>See the keywords</Link>
            </p>
          )}
        </div>
      )}
      {run && run.status === "succeeded" && run.candidates.length > 0 && (
        <>
          <table aria-label="Proposed keywords">
            <Thead cols={["Add", "Keyword", "Score", "Found by", "Status"]} />
            <tbody>
              {run.candidates.map((c) => (
                <tr key={c.id}>
                  <td>
                    <input type="checkbox" aria-label={`Add ${c.keyword}`} checked={chosen.has(c.id)} disabled={c.status !== "new"} onChange={() => toggle(c.id)} />
                  </td>
                  <th scope="row">{c.keyword}</th>
                  <td class="num">{c.score}</td>
                  <td>{c.found_by.join(", ")}</td>
                  <td>{c.status === "new" ? "Proposed" : c.status === "accepted" ? "Added" : "Already a keyword"}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <button type="button" onClick={() => void accept()} disabled={busy || chosen.size === 0}>
            Add {num(chosen.size)} as keywords
          </button>
        </>
      )}
    </section>
  );
}
