// Costs: the environment's spend per day as a chart against the daily
// budget, the breakdown by model, source and agent, the budgets (the
// autopilot's, which count every use of the environment), and the usage
// CSV as a download (fetched with the Authorization header, handed over
// as a blob: address; the token never goes into a URL).
import { useState } from "preact/hooks";
import { api, download, url, type Schemas } from "../api/client";
import { isoDay, lastDays, SpendChart } from "../chart";
import type { ScreenProps } from "../lazy";
import { envPath } from "../router";
import { Alert, canEdit, errorText, Heading, Link, num, Select, Thead, usd, useResource } from "../ui";

type Point = Schemas["usagePointResponse"];
type Source = "autopilot" | "cie" | "execution" | "chat" | "live" | "scout" | "search" | "test";
const sourceWords: Record<Source, string> = {
  autopilot: "Autopilot",
  cie: "Write (archetypes)",
  execution: "Agent runs",
  chat: "Chat",
  live: "Live sessions",
  scout: "Keyword scout",
  search: "Search phrases",
  test: "Credential tests",
};

export function Costs({ env, envName }: ScreenProps) {
  const [range, setRange] = useState("30");
  const n = Number(range);
  const status = useResource((signal) => api.get("/api/autopilot/status", { query: { environment_id: env }, signal }), [env]);
  const cfg = status.data?.data.autopilot.config;
  // The days are the environment's (its autopilot's time zone, as its
  // daily budget counts them); UTC until the status says, or if it fails.
  const tz = cfg?.timezone ?? (status.error ? "UTC" : null);
  const q = { environment_id: env, from: isoDay(-(n - 1), tz ?? "UTC"), to: isoDay(0, tz ?? "UTC"), tz: tz ?? "UTC" };
  const series = useSeries(tz, (signal) => api.get("/api/token-analytics/series", { query: { ...q, group_by: "day" }, signal }), [env, n]);
  const byModel = useSeries(tz, (signal) => api.get("/api/token-analytics/series", { query: { ...q, group_by: "model" }, signal }), [env, n]);
  const byAgent = useSeries(tz, (signal) => api.get("/api/token-analytics/series", { query: { ...q, group_by: "agent" }, signal }), [env, n]);
  const bySource = useSeries(
    tz,
    async (signal) => {
      const r = await api.get("/api/token-analytics/series", { query: { ...q, group_by: "source" }, signal });
      return r.data.points.map((p): Point => ({ ...p, label: sourceWords[p.key as Source] ?? p.key }));
    },
    [env, n],
  );
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const days = series.data && tz ? lastDays(n, series.data.data.points, tz) : null;

  async function exportCSV() {
    setBusy(true);
    setError(null);
    try {
      await download(url("/api/token-analytics/export.csv", undefined, q), `usage-${envName ?? env}-${q.from}-to-${q.to}.csv`.replace(/[^\w.-]+/g, "-"), "text/csv");
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  }

  return (
    <>
      <Heading>Costs</Heading>
      <div class="row">
        <Select label="Period" name="range" value={range} onValue={setRange} options={[["7", "Last 7 days"], ["30", "Last 30 days"], ["90", "Last 90 days"]]} />
        <button type="button" onClick={() => void exportCSV()} disabled={busy}>
          Download the usage as CSV
        </button>
      </div>
      {error && <Alert>{error}</Alert>}
      <section aria-labelledby="costs-day">
        <h2 id="costs-day">Spend per day</h2>
        {series.error && <Alert>{series.error}</Alert>}
        {days && <SpendChart days={days} budget={cfg?.daily_budget_usd ?? null} title="Spend per day" tz={tz ?? "UTC"} />}
      </section>
      <section aria-labelledby="costs-budgets" class="card">
        <h2 id="costs-budgets">Budgets</h2>
        {status.error && <Alert>{status.error}</Alert>}
        {status.data && cfg && (
          <dl class="facts">
            <dt>Today</dt>
            <dd>
              {usd(status.data.data.spent_today_usd)} of {cfg.daily_budget_usd == null ? "no daily budget" : usd(cfg.daily_budget_usd)}
            </dd>
            <dt>This month</dt>
            <dd>
              {usd(status.data.data.spent_month_usd)} of {cfg.monthly_budget_usd == null ? "no monthly budget" : usd(cfg.monthly_budget_usd)}
            </dd>
          </dl>
        )}
        <p class="muted small">
          Budgets count every use of the environment, in its time zone ({cfg?.timezone ?? "…"}); the autopilot pauses when one is reached.{" "}
          {canEdit() && <Link href={envPath(env, "autopilot")}>Change them in the autopilot's configuration</Link>}
        </p>
      </section>
      <div class="grid">
        <Breakdown id="costs-model" title="By model" r={byModel} />
        <Breakdown id="costs-source" title="By source" r={{ data: bySource.data ? { data: { points: bySource.data } } : null, error: bySource.error }} />
        <Breakdown id="costs-agent" title="By agent" r={byAgent} none="No agent" />
      </div>
    </>
  );
}

// useSeries is useResource for a request that needs the environment's
// time zone: it waits (loading) until tz is known.
function useSeries<T>(tz: string | null, fn: (signal: AbortSignal) => Promise<T>, deps: unknown[]) {
  return useResource((signal) => (tz === null ? new Promise<T>(() => {}) : fn(signal)), [...deps, tz]);
}

function Breakdown({ id, title, r, none = "—" }: { id: string; title: string; r: { data: { data: { points: Point[] } } | null; error: string | null }; none?: string }) {
  const points = [...(r.data?.data.points ?? [])].sort((a, b) => (b.cost_usd ?? 0) - (a.cost_usd ?? 0));
  return (
    <section aria-labelledby={id} class="card">
      <h2 id={id}>{title}</h2>
      {r.error && <Alert>{r.error}</Alert>}
      {r.data && points.length === 0 && <p class="muted">Nothing spent in this period.</p>}
      {points.length > 0 && (
        <table aria-labelledby={id}>
          <Thead cols={["Name", "Calls", "Tokens in / out", "Cost"]} />
          <tbody>
            {points.map((p) => (
              <tr key={p.key}>
                <th scope="row">{p.label || p.key || none}</th>
                <td class="num">{num(p.calls)}</td>
                <td class="num">
                  {num(p.input_tokens)} / {num(p.output_tokens)}
                </td>
                <td class="num">
                  {usd(p.cost_usd)}
                  {p.unpriced_calls > 0 && <span class="muted small"> ({num(p.unpriced_calls)} unpriced)</span>}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
