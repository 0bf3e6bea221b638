// An environment's overview, from what the API gives cheaply: the
// autopilot's status and last runs (asked again at each event of the
// autopilot's stream), and the user's latest notifications (live, from the
// bell's stream).
import { useEffect } from "preact/hooks";
import { api, url } from "./api/client";
import { follow } from "./api/sse";
import { useNotifications, NoteList } from "./shell";
import { Alert, Heading, Thead, usd, useResource, When } from "./ui";

const stateWords: Record<string, string> = { stopped: "Stopped", running: "Running", paused: "Paused" };

export function Overview({ env, envName }: { env: number; envName: string | undefined }) {
  const status = useResource((signal) => api.get("/api/autopilot/status", { query: { environment_id: env }, signal }), [env]);
  const runs = useResource((signal) => api.get("/api/autopilot/runs", { query: { environment_id: env, per_page: 5 }, signal }), [env]);
  const notes = useNotifications();
  const { reload: reloadStatus } = status;
  const { reload: reloadRuns } = runs;
  useEffect(() => {
    const ac = new AbortController();
    let timer: number | undefined;
    void follow(url("/api/autopilot/stream", undefined, { environment_id: env }), {
      signal: ac.signal,
      onEvent: () => {
        window.clearTimeout(timer);
        timer = window.setTimeout(() => {
          reloadStatus();
          reloadRuns();
        }, 200);
      },
    });
    return () => {
      window.clearTimeout(timer);
      ac.abort();
    };
  }, [env, reloadStatus, reloadRuns]);
  const s = status.data?.data;
  return (
    <>
      <Heading>{envName ? `Overview of ${envName}` : "Overview"}</Heading>
      <div class="grid">
        <section class="card" aria-labelledby="ov-autopilot">
          <h2 id="ov-autopilot">Autopilot</h2>
          {status.error && <Alert>{status.error}</Alert>}
          {s ? (
            <dl class="facts">
              <dt>State</dt>
              <dd>
                {stateWords[s.autopilot.state] ?? s.autopilot.state}
                {s.autopilot.pause_reason && ` (${s.autopilot.pause_reason.replace(/_/g, " ")})`}
              </dd>
              <dt>Next run</dt>
              <dd>
                <When at={s.next_run_at} />
              </dd>
              <dt>Posts today</dt>
              <dd>{s.posts_today}</dd>
              <dt>Spent today</dt>
              <dd>{usd(s.spent_today_usd)}</dd>
              <dt>Spent this month</dt>
              <dd>{usd(s.spent_month_usd)}</dd>
            </dl>
          ) : (
            !status.error && <p role="status">Loading…</p>
          )}
        </section>
        <section class="card" aria-labelledby="ov-runs">
          <h2 id="ov-runs">Last runs</h2>
          {runs.error && <Alert>{runs.error}</Alert>}
          {runs.data &&
            (runs.data.data.items.filter(Boolean).length === 0 ? (
              <p class="muted">The autopilot has not run yet.</p>
            ) : (
              <table>
                <Thead cols={["Keyword", "Outcome", "Started"]} />
                <tbody>
                  {runs.data.data.items.flatMap((r) => (!r ? [] : [
                    <tr key={r.id}>
                      <td>{r.keyword || "—"}</td>
                      <td>
                        {r.status}
                        {r.error && <span class="muted small"> — {r.error}</span>}
                      </td>
                      <td>
                        <When at={r.started_at ?? r.created_at} />
                      </td>
                    </tr>,
                  ]))}
                </tbody>
              </table>
            ))}
        </section>
        <section class="card" aria-labelledby="ov-notes">
          <h2 id="ov-notes">Latest notifications</h2>
          <p class="muted small">{notes.unread === null ? "" : `${notes.unread} unread`}</p>
          <NoteList notes={notes.recent.slice(0, 5)} />
        </section>
      </div>
    </>
  );
}
