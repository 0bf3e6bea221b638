// An environment's overview, from what the API gives cheaply: the
// autopilot's status and last runs, the drafts waiting for review, the
// spend, and the user's latest notifications (live, from the bell's
// stream). Everything but the notifications is asked again together
// (useLive): at each event of the autopilot's stream, at each new
// notification, and every 30 seconds while the tab is visible (spend from
// chat or write raises no event the console follows).
import { useEffect, useState } from "preact/hooks";
import { api, url } from "./api/client";
import { follow } from "./api/sse";
import { isoDay, lastDays, SpendChart } from "./chart";
import { envPath } from "./router";
import { notifications } from "./notifications";
import { useNotifications, NoteList } from "./shell";
import { Alert, Heading, Link, Thead, usd, useResource, When } from "./ui";

const stateWords: Record<string, string> = { stopped: "Stopped", running: "Running", paused: "Paused" };

// every is how often the overview asks again while its tab is visible.
const every = 30_000;

// useLive is a number that grows each time the overview should ask the
// server again: after an event of the autopilot's stream or a new
// notification (a burst of them asks once, 200 ms after the last), every
// 30 seconds while the tab is visible, and when the tab becomes visible
// again. The data on screen stays while it is asked again.
function useLive(env: number): number {
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const ac = new AbortController();
    let soon: number | undefined;
    const again = (delay: number) => {
      window.clearTimeout(soon);
      soon = window.setTimeout(() => setTick((n) => n + 1), delay);
    };
    void follow(url("/api/autopilot/stream", undefined, { environment_id: env }), { signal: ac.signal, onEvent: () => again(200) });
    let newest = notifications.recent[0]?.id ?? 0;
    const unsubscribe = notifications.subscribe(() => {
      const id = notifications.recent[0]?.id ?? 0;
      if (id > newest) again(200);
      newest = Math.max(newest, id);
    });
    let timer: number | undefined;
    const schedule = () => {
      window.clearInterval(timer);
      timer = document.visibilityState === "visible" ? window.setInterval(() => again(0), every) : undefined;
    };
    const onVisibility = () => {
      if (document.visibilityState === "visible") again(0);
      schedule();
    };
    schedule();
    document.addEventListener("visibilitychange", onVisibility);
    return () => {
      ac.abort();
      unsubscribe();
      window.clearTimeout(soon);
      window.clearInterval(timer);
      document.removeEventListener("visibilitychange", onVisibility);
    };
  }, [env]);
  return tick;
}

export function Overview({ env, envName }: { env: number; envName: string | undefined }) {
  const tick = useLive(env);
  const status = useResource((signal) => api.get("/api/autopilot/status", { query: { environment_id: env }, signal }), [env, tick]);
  const runs = useResource((signal) => api.get("/api/autopilot/runs", { query: { environment_id: env, per_page: 5 }, signal }), [env, tick]);
  const notes = useNotifications();
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
        <Drafts env={env} tick={tick} />
        <section class="card" aria-labelledby="ov-notes">
          <h2 id="ov-notes">Latest notifications</h2>
          <p class="muted small">{notes.unread === null ? "" : `${notes.unread} unread`}</p>
          <NoteList notes={notes.recent.slice(0, 5)} />
        </section>
      </div>
      {s && (
        <Spend env={env} daily={s.autopilot.config.daily_budget_usd ?? null} monthly={s.autopilot.config.monthly_budget_usd ?? null}
          today={s.spent_today_usd} month={s.spent_month_usd} tz={s.autopilot.config.timezone} tick={tick} />
      )}
    </>
  );
}

type Draft = { key: string; title: string; href: string; kind: string; at: string };

// Drafts lists the newest posts waiting for review: WordPress drafts and
// posts pending review, and Astro drafts.
function Drafts({ env, tick }: { env: number; tick: number }) {
  const r = useResource(async (signal) => {
    const q = { environment_id: env, per_page: 5 };
    const [draft, pending, astro] = await Promise.all([
      api.get("/api/wordpress-posts", { query: { ...q, status: "draft" }, signal }),
      api.get("/api/wordpress-posts", { query: { ...q, status: "pending" }, signal }),
      api.get("/api/astro-posts", { query: { ...q, draft: true }, signal }),
    ]);
    const items: Draft[] = [];
    for (const p of [...draft.data.items, ...pending.data.items]) {
      if (p) items.push({ key: "w" + p.id, title: p.title, href: envPath(env, "posts") + `?post=${p.id}`, kind: p.status === "pending" ? "WordPress, pending review" : "WordPress draft", at: p.updated_at });
    }
    for (const p of astro.data.items) {
      if (p) items.push({ key: "a" + p.id, title: p.title, href: envPath(env, "posts") + `?target=astro&post=${p.id}`, kind: "Astro draft", at: p.updated_at });
    }
    items.sort((a, b) => b.at.localeCompare(a.at));
    return { items: items.slice(0, 5), total: draft.data.total + pending.data.total + astro.data.total };
  }, [env, tick]);
  return (
    <section class="card" aria-labelledby="ov-drafts">
      <h2 id="ov-drafts">Drafts waiting for review</h2>
      {r.error && <Alert>{r.error}</Alert>}
      {r.data && r.data.items.length === 0 && <p class="muted">No draft is waiting.</p>}
      {r.data && r.data.items.length > 0 && (
        <>
          <ul class="notes">
            {r.data.items.map((d) => (
              <li key={d.key}>
                <Link href={d.href}>{d.title || "(untitled)"}</Link>
                <p class="muted small">
                  {d.kind} · <When at={d.at} />
                </p>
              </li>
            ))}
          </ul>
          <p class="small">
            <Link href={envPath(env, "posts")}>All posts</Link> ({r.data.total} waiting)
          </p>
        </>
      )}
    </section>
  );
}

// Spend draws the last 30 days of the environment's time zone tz (the
// days its daily budget counts).
function Spend({ env, daily, monthly, today, month, tz, tick }: {
  env: number; daily: number | null; monthly: number | null; today: number; month: number; tz: string; tick: number;
}) {
  const series = useResource(
    (signal) => api.get("/api/token-analytics/series", { query: { environment_id: env, group_by: "day", from: isoDay(-29, tz), to: isoDay(0, tz), tz }, signal }),
    [env, tz, tick],
  );
  return (
    <section class="card spend" aria-labelledby="ov-spend">
      <h2 id="ov-spend">Spend, last 30 days</h2>
      {series.error && <Alert>{series.error}</Alert>}
      {series.data && <SpendChart days={lastDays(30, series.data.data.points, tz)} budget={daily} title="Spend in the last 30 days" tz={tz} />}
      <p class="small">
        Today: {usd(today)} {daily == null ? "(no daily budget)" : `of the daily budget of ${usd(daily)}`}.{" "}
        This month: {usd(month)} {monthly == null ? "(no monthly budget)" : `of the monthly budget of ${usd(monthly)}`}.{" "}
        <Link href={envPath(env, "costs")}>Costs</Link>
      </p>
    </section>
  );
}

