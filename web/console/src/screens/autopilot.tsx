// The autopilot: its state with start, pause, resume, stop and run now
// (for editors), the current run's steps as they happen (from GET
// /api/autopilot/stream: a snapshot, then a status event at each change of
// state and a run event at each step), and its configuration as a form
// whose fields show the server's 422 detail beside them.
import { useEffect, useState } from "preact/hooks";
import { api, url, type Schemas } from "../api/client";
import { follow } from "../api/sse";
import type { ScreenProps } from "../lazy";
import { envPath } from "../router";
import { sentence } from "../session";
import { Alert, canEdit, errorText, Field, formErrors, Heading, Link, noErrors, num, Select, Thead, usd, useResource, When, type FormErrors } from "../ui";

type Status = Schemas["autopilotStatusResponse"];
type Run = NonNullable<Schemas["autopilotRunResponse"]>;
type Config = Schemas["autopilotConfigResponse"];
type Action = "start" | "pause" | "resume" | "stop" | "run-now";

const stateWords: Record<string, string> = { stopped: "Stopped", running: "Running", paused: "Paused" };
const stepWords: Record<string, string> = { pick_keyword: "Pick a keyword", generate: "Generate the article", create_post: "Create the post", publish: "Publish" };
const pauseWords: Record<string, string> = {
  manual: "by hand",
  daily_budget: "the daily budget is reached",
  monthly_budget: "the monthly budget is reached",
  daily_limit: "today's posts are done",
  failures: "runs failed three times in a row",
};

export function Autopilot({ env }: ScreenProps) {
  const editor = canEdit();
  const status = useResource((signal) => api.get("/api/autopilot/status", { query: { environment_id: env }, signal }), [env]);
  const [run, setRun] = useState<Run | null>(null);
  const { reload } = status;
  // The stream says when the state changed (ask the status again) and
  // carries each step of the run under way.
  useEffect(() => {
    const ac = new AbortController();
    void follow(url("/api/autopilot/stream", undefined, { environment_id: env }), {
      signal: ac.signal,
      onEvent: (e) => {
        const d = e.data as { run?: Run | null; autopilot?: unknown } & Partial<Run>;
        if (e.event === "snapshot") setRun(d.run ?? null);
        else if (e.event === "run" && typeof d.id === "number") setRun(d as Run);
        if (e.event === "status" || e.event === "snapshot" || (e.event === "run" && d.finished_at)) reload();
      },
    });
    return () => ac.abort();
  }, [env, reload]);
  const s = status.data?.data;
  const current = run ?? s?.active_run ?? null;
  return (
    <>
      <Heading>Autopilot</Heading>
      {status.error && <Alert>{status.error}</Alert>}
      {s && <State env={env} s={s} editor={editor} onChanged={(next) => status.set({ ...status.data!, data: next })} reload={reload} />}
      <section aria-labelledby="ap-run">
        <h2 id="ap-run">Current run</h2>
        {current ? <RunSteps run={current} /> : <p class="muted">No run yet.</p>}
      </section>
      {s && <ConfigForm env={env} config={s.autopilot.config} editor={editor} onSaved={reload} />}
    </>
  );
}

function State({ env, s, editor, onChanged, reload }: { env: number; s: Status; editor: boolean; onChanged: (s: Status) => void; reload: () => void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const a = s.autopilot;
  async function act(action: Action) {
    setBusy(true);
    setError(null);
    try {
      if (action === "run-now") await api.post("/api/autopilot/run-now", { body: { environment_id: env } });
      else {
        const r = await api.post(`/api/autopilot/${action}`, { body: { environment_id: env } });
        onChanged(r.data);
      }
      reload();
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  }
  const button = (action: Action, label: string) => (
    <button type="button" onClick={() => void act(action)} disabled={busy}>
      {label}
    </button>
  );
  return (
    <section aria-labelledby="ap-state" class="card">
      <h2 id="ap-state">State</h2>
      <dl class="facts">
        <dt>State</dt>
        <dd>
          {stateWords[a.state] ?? a.state}
          {a.pause_reason && ` (${pauseWords[a.pause_reason] ?? a.pause_reason})`}
        </dd>
        {a.pause_detail && (
          <>
            <dt>Why</dt>
            <dd>{a.pause_detail}</dd>
          </>
        )}
        {a.resume_at && (
          <>
            <dt>Resumes</dt>
            <dd>
              <When at={a.resume_at} />
            </dd>
          </>
        )}
        <dt>Next run</dt>
        <dd>
          <When at={s.next_run_at} />
        </dd>
        {a.note && (
          <>
            <dt>Note</dt>
            <dd>{a.note}</dd>
          </>
        )}
        <dt>Posts today</dt>
        <dd>
          {s.posts_today} of {a.config.max_posts_per_day}
        </dd>
        <dt>Spent today</dt>
        <dd>
          {usd(s.spent_today_usd)}
          {a.config.daily_budget_usd != null && ` of ${usd(a.config.daily_budget_usd)}`}
        </dd>
        <dt>Spent this month</dt>
        <dd>
          {usd(s.spent_month_usd)}
          {a.config.monthly_budget_usd != null && ` of ${usd(a.config.monthly_budget_usd)}`}
        </dd>
        <dt>Tokens today</dt>
        <dd>
          {num(s.tokens_today)}
          {a.config.daily_budget_tokens != null && ` of ${num(a.config.daily_budget_tokens)}`}
        </dd>
        <dt>Tokens this month</dt>
        <dd>
          {num(s.tokens_month)}
          {a.config.monthly_budget_tokens != null && ` of ${num(a.config.monthly_budget_tokens)}`}
        </dd>
      </dl>
      {editor && (
        <div class="actions">
          {a.state === "stopped" && button("start", "Start")}
          {a.state === "running" && button("pause", "Pause")}
          {a.state === "paused" && button("resume", "Resume")}
          {a.state !== "stopped" && button("stop", "Stop")}
          {!s.active_run && button("run-now", "Run now")}
        </div>
      )}
      {error && <Alert>{error}</Alert>}
    </section>
  );
}

const runWords: Record<string, string> = { queued: "Queued", running: "Running", paused: "Paused", succeeded: "Succeeded", failed: "Failed", cancelled: "Cancelled" };
const stepStatus: Record<string, string> = { pending: "Waiting", running: "Under way", succeeded: "Done", failed: "Failed", skipped: "Skipped" };

function RunSteps({ run }: { run: Run }) {
  return (
    <>
      <p>
        {run.keyword ? `“${run.keyword}”` : "A run"}: <strong>{runWords[run.status] ?? run.status}</strong>
        {run.error && <span> — {run.error}</span>}
        {run.cost_usd != null && <span class="muted"> · {usd(run.cost_usd)}</span>}
      </p>
      <table aria-label="Steps of the current run" aria-live="polite">
        <Thead cols={["Step", "State", "What it did"]} />
        <tbody>
          {run.steps.map((st) => (
            <tr key={st.step}>
              <th scope="row">{stepWords[st.step] ?? st.step}</th>
              <td>{stepStatus[st.status] ?? st.status}</td>
              <td>
                {st.detail || (st.error ? "" : "—")}
                {st.error && <span class="field-error"> {st.error}</span>}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

type Form = {
  window_start: string;
  window_end: string;
  max_posts_per_day: string;
  daily_budget_usd: string;
  monthly_budget_usd: string;
  daily_budget_tokens: string;
  monthly_budget_tokens: string;
  post_status: Config["post_status"];
  auto_resume: boolean;
  campaign_ids: number[];
  variables: [string, string][];
};

const fieldNames = ["window_start", "window_end", "max_posts_per_day", "daily_budget_usd", "monthly_budget_usd", "daily_budget_tokens", "monthly_budget_tokens", "post_status", "campaign_ids", "variables"];

function ConfigForm({ env, config, editor, onSaved }: { env: number; config: Config; editor: boolean; onSaved: () => void }) {
  const campaigns = useResource((signal) => api.get("/api/seo/campaigns", { query: { environment_id: env, per_page: 100 }, signal }), [env]);
  const [f, setF] = useState<Form>(() => ({
    window_start: config.window_start,
    window_end: config.window_end,
    max_posts_per_day: String(config.max_posts_per_day),
    daily_budget_usd: config.daily_budget_usd == null ? "" : String(config.daily_budget_usd),
    monthly_budget_usd: config.monthly_budget_usd == null ? "" : String(config.monthly_budget_usd),
    daily_budget_tokens: config.daily_budget_tokens == null ? "" : String(config.daily_budget_tokens),
    monthly_budget_tokens: config.monthly_budget_tokens == null ? "" : String(config.monthly_budget_tokens),
    post_status: config.post_status,
    auto_resume: config.auto_resume,
    campaign_ids: config.campaign_ids,
    variables: Object.entries(config.variables).length ? Object.entries(config.variables) : [["audience", ""]],
  }));
  const [errors, setErrors] = useState<FormErrors>(noErrors);
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState(false);
  const set = (patch: Partial<Form>) => {
    setF({ ...f, ...patch });
    setDone(false);
  };
  // An empty budget is none; the PUT replaces the whole configuration, so
  // every budget is sent, the token ones too.
  const amount = (v: string) => (v.trim() === "" ? null : Number(v));

  async function save(e: Event) {
    e.preventDefault();
    setBusy(true);
    setErrors(noErrors);
    try {
      await api.put("/api/autopilot/config", {
        body: {
          environment_id: env,
          window_start: f.window_start.trim(),
          window_end: f.window_end.trim(),
          max_posts_per_day: Number(f.max_posts_per_day),
          daily_budget_usd: amount(f.daily_budget_usd),
          monthly_budget_usd: amount(f.monthly_budget_usd),
          daily_budget_tokens: amount(f.daily_budget_tokens),
          monthly_budget_tokens: amount(f.monthly_budget_tokens),
          post_status: f.post_status,
          auto_resume: f.auto_resume,
          campaign_ids: f.campaign_ids,
          variables: Object.fromEntries(f.variables.filter(([k]) => k.trim()).map(([k, v]) => [k.trim(), v])),
        },
      });
      setDone(true);
      onSaved();
    } catch (err) {
      const names = [...fieldNames, ...f.variables.map(([k]) => "variables." + k.trim())];
      setErrors(formErrors(err, names));
    } finally {
      setBusy(false);
    }
  }
  const fe = errors.fields;
  const list = campaigns.data?.data.items ?? [];
  return (
    <form onSubmit={save} aria-labelledby="ap-config" noValidate class="config">
      <h2 id="ap-config">Configuration</h2>
      <p class="muted small">Times are in the environment's time zone ({config.timezone}).</p>
      <fieldset disabled={!editor || busy}>
        <legend>When</legend>
        <div class="row">
          <Field label="Window start" name="window_start" value={f.window_start} onValue={(v) => set({ window_start: v })} error={fe.window_start} hint="HH:MM" />
          <Field label="Window end" name="window_end" value={f.window_end} onValue={(v) => set({ window_end: v })} error={fe.window_end} hint="HH:MM, up to 24:00" />
          <Field type="number" label="Posts per day" name="max_posts_per_day" value={f.max_posts_per_day} onValue={(v) => set({ max_posts_per_day: v })}
            error={fe.max_posts_per_day} />
        </div>
      </fieldset>
      <fieldset disabled={!editor || busy}>
        <legend>Budgets (every use of the environment)</legend>
        <div class="row">
          <Field type="number" label="Daily budget" name="daily_budget_usd" value={f.daily_budget_usd} onValue={(v) => set({ daily_budget_usd: v })}
            error={fe.daily_budget_usd} hint="US dollars; empty: none" />
          <Field type="number" label="Monthly budget" name="monthly_budget_usd" value={f.monthly_budget_usd} onValue={(v) => set({ monthly_budget_usd: v })}
            error={fe.monthly_budget_usd} hint="US dollars; empty: none" />
        </div>
        <div class="row">
          <Field type="number" label="Daily token budget" name="daily_budget_tokens" value={f.daily_budget_tokens} onValue={(v) => set({ daily_budget_tokens: v })}
            error={fe.daily_budget_tokens} hint="Input and output tokens, priced or not; empty: none" />
          <Field type="number" label="Monthly token budget" name="monthly_budget_tokens" value={f.monthly_budget_tokens}
            onValue={(v) => set({ monthly_budget_tokens: v })} error={fe.monthly_budget_tokens} hint="Input and output tokens, priced or not; empty: none" />
        </div>
        <label class="check-label">
          <input type="checkbox" checked={f.auto_resume} onChange={(e) => set({ auto_resume: e.currentTarget.checked })} />
          Resume by itself the next day or month after a budget or daily limit pause
        </label>
      </fieldset>
      <fieldset disabled={!editor || busy}>
        <legend>What</legend>
        <Select label="Post status" name="post_status" value={f.post_status} onValue={(v) => set({ post_status: v as Form["post_status"] })} error={fe.post_status}
          options={[["campaign", "Each campaign's own"], ["draft", "Draft"], ["publish", "Publish"]]} />
        <fieldset class="terms" aria-describedby={fe.campaign_ids ? "ap-campaigns-error" : undefined}>
          <legend>Campaigns (none chosen: every active campaign)</legend>
          {list.length === 0 && (
            <p class="muted small">
              No campaign in this environment yet: <Link href={envPath(env, "campaigns")}>make one under Campaigns</Link>.
            </p>
          )}
          {list.map((c) => (
            <label key={c.id} class="check-label">
              <input type="checkbox" checked={f.campaign_ids.includes(c.id)}
                onChange={(e) => set({ campaign_ids: e.currentTarget.checked ? [...f.campaign_ids, c.id] : f.campaign_ids.filter((x) => x !== c.id) })} />
              {c.name} <span class="muted small">({c.status})</span>
            </label>
          ))}
          {fe.campaign_ids && (
            <p class="field-error" id="ap-campaigns-error">
              {sentence(fe.campaign_ids)}
            </p>
          )}
        </fieldset>
        <fieldset>
          <legend>Variables given to every generation</legend>
          {f.variables.map(([k, v], i) => (
            <div class="row" key={i}>
              <Field label={`Name of variable ${i + 1}`} name={`var-name-${i}`} value={k}
                onValue={(x) => set({ variables: f.variables.map((p, j) => (j === i ? [x, p[1]] : p)) })} />
              <Field label={`Value of ${k.trim() || `variable ${i + 1}`}`} name={`var-value-${i}`} value={v} error={fe["variables." + k.trim()]}
                onValue={(x) => set({ variables: f.variables.map((p, j) => (j === i ? [p[0], x] : p)) })} />
              {editor && (
                <button type="button" onClick={() => set({ variables: f.variables.filter((_, j) => j !== i) })}>
                  Remove {k.trim() || `variable ${i + 1}`}
                </button>
              )}
            </div>
          ))}
          {fe.variables && <p class="field-error">{sentence(fe.variables)}</p>}
          {editor && (
            <button type="button" onClick={() => set({ variables: [...f.variables, ["", ""]] })}>
              Add a variable
            </button>
          )}
        </fieldset>
      </fieldset>
      {errors.form && <Alert>{sentence(errors.form)}</Alert>}
      {done && (
        <p class="notice" role="status">
          Configuration saved.
        </p>
      )}
      {editor && (
        <div class="actions">
          <button type="submit" class="primary" disabled={busy}>
            Save the configuration
          </button>
        </div>
      )}
    </form>
  );
}
