// Agents: the environment's agents (its own, the global ones and those
// assigned to it); editors create and edit one (provider credential,
// model, system prompt, temperature, limits), assign it to environments
// and campaigns, run it with an input and watch the output stream in, and
// see its past runs with their usage and cost; deleting asks first and
// names the agent.
import { useEffect, useRef, useState } from "preact/hooks";
import { api, ApiError, url, type Schemas } from "../api/client";
import { post } from "../api/sse";
import type { ScreenProps } from "../lazy";
import { sentence } from "../session";
import {
  Alert, canEdit, errorText, Field, FormActions, formErrors, Heading, Labelled, NewButton, noErrors, Notice, num, Select, Table, TextArea, usd, useAction, useResource, useSubmit, When, type FormErrors,
} from "../ui";
import { Confirm } from "../confirm";
import { isNoProvider, NoProvider } from "../noprovider";

type Agent = Schemas["agentResponse"];
type Run = Schemas["runResponse"];
type Credential = Schemas["agentCredentialResponse"];
type Kind = Agent["kind"];

const kinds = [["writer", "Writer"], ["editor", "Editor"], ["researcher", "Researcher"], ["seo", "SEO"]] as const;
const kindWord = Object.fromEntries(kinds) as Record<Kind, string>;

// useCredentials is the AI credentials an agent of env may use (GET
// /api/agents/credentials, for editors and up); null for a viewer.
function useCredentials(env: number) {
  const editor = canEdit();
  return useResource(
    (signal) => (editor ? api.get("/api/agents/credentials", { query: { environment_id: env, per_page: 200 }, signal }).then((r) => r.data.items) : Promise.resolve(null)),
    [env, editor],
  );
}

export function Agents({ env }: ScreenProps) {
  const editor = canEdit();
  const list = useResource((signal) => api.get("/api/agents", { query: { environment_id: env, per_page: 200 }, signal }), [env]);
  const creds = useCredentials(env);
  const query = new URLSearchParams(location.search);
  const [open, setOpen] = useState<number | null>(Number(query.get("id")) || null);
  // ?run=<id> (a run's notification) opens its agent with that run's output.
  const [run] = useState(() => Number(query.get("run")) || null);
  useEffect(() => {
    if (!run) return;
    api.get("/api/agents/runs/{run_id}", { path: { run_id: run } }).then((r) => setOpen(r.data.agent_id), (e: unknown) => setNotice(errorText(e)));
  }, [run]);
  const [creating, setCreating] = useState(false);
  const [notice, setNotice] = useState<string | null>(null);
  const items = list.data?.data.items ?? [];
  const chosen = items.find((a) => a.id === open);
  const noCredential = creds.data !== null && creds.data !== undefined && creds.data.length === 0;
  function changed(message: string) {
    setNotice(message);
    list.reload();
  }
  return (
    <>
      <Heading>Agents</Heading>
      <Notice text={notice} />
      {noCredential && <NoProvider needs="an agent" />}
      <section aria-labelledby="ag-list">
        <h2 id="ag-list">Agents of this environment</h2>
        {list.error && <Alert>{list.error}</Alert>}
        {list.data && items.length === 0 && (
          <p>{editor ? "No agent yet. Create one: a name, what kind of work it does, and its prompt." : "No agent yet. An editor creates them."}</p>
        )}
        {items.length > 0 && (
          <Table aria-labelledby="ag-list" cols={["Name", "Kind", "Model", "Where", "State"]}>
            {items.map((a) => (
              <tr key={a.id}>
                <th scope="row">
                  <button type="button" class="link" onClick={() => setOpen(open === a.id ? null : a.id)} aria-expanded={open === a.id}>
                    {a.name}
                  </button>
                </th>
                <td>{kindWord[a.kind]}</td>
                <td>{a.model || <span class="muted">the settings' model</span>}</td>
                <td>{a.environment_id === null ? "Global" : a.environment_id === env ? "This environment" : "Assigned here"}</td>
                <td>{a.is_active ? "Active" : "Inactive"}</td>
              </tr>
            ))}
          </Table>
        )}
        <NewButton shown={editor && !creating} onClick={() => setCreating(true)}>New agent</NewButton>
        {creating && (
          <AgentForm env={env} creds={creds.data ?? null} onDone={(a) => {
            setCreating(false);
            if (a) {
              changed(`Agent “${a.name}” created.`);
              setOpen(a.id);
            }
          }} />
        )}
      </section>
      {chosen && <AgentDetail key={chosen.id} env={env} a={chosen} run={run} editor={editor} creds={creds.data ?? null} onChanged={changed} onDeleted={(m) => { setOpen(null); changed(m); }} />}
    </>
  );
}

const formFields = ["name", "kind", "description", "credential_id", "model", "system_prompt", "temperature", "max_tokens", "is_active"];

// AgentForm creates an agent in env, or with a edits it.
function AgentForm({ env, a, creds, onDone }: { env: number; a?: Agent; creds: Credential[] | null; onDone: (a: Agent | null) => void }) {
  const [f, setF] = useState({
    name: a?.name ?? "",
    kind: (a?.kind ?? "writer") as Kind,
    description: a?.description ?? "",
    credential: a?.credential_id ? String(a.credential_id) : "",
    model: a?.model ?? "",
    system_prompt: a?.system_prompt ?? "",
    temperature: a?.temperature == null ? "" : String(a.temperature),
    max_tokens: a?.max_tokens == null ? "" : String(a.max_tokens),
    is_active: a?.is_active ?? true,
  });
  const set = (patch: Partial<typeof f>) => setF({ ...f, ...patch });
  const numOrNull = (v: string) => (v.trim() === "" ? null : Number(v));
  // cleared names the parameters emptied in the form: a null would keep
  // them, so they are sent back to the settings' with clear.
  const cleared = (a: Agent) => {
    const out: ("temperature" | "max_tokens")[] = [];
    if (a.temperature != null && f.temperature.trim() === "") out.push("temperature");
    if (a.max_tokens != null && f.max_tokens.trim() === "") out.push("max_tokens");
    return out;
  };
  const { errors, busy, submit } = useSubmit(formFields, async () => {
    const common = {
      name: f.name,
      kind: f.kind,
      description: f.description,
      model: f.model.trim(),
      system_prompt: f.system_prompt,
      temperature: numOrNull(f.temperature),
      max_tokens: numOrNull(f.max_tokens),
      is_active: f.is_active,
    };
    const r = a
      ? await api.put("/api/agents/{id}", { path: { id: a.id }, body: { ...common, clear: cleared(a), ...(creds ? { credential_id: Number(f.credential || 0) } : {}) } })
      : await api.post("/api/agents", { body: { ...common, environment_id: env, credential_id: f.credential ? Number(f.credential) : null } });
    onDone(r.data);
  });
  const credOptions: (readonly [string, string])[] = [["", "The AI settings' credential"], ...(creds ?? []).map((c) => [String(c.id), `${c.name} (${c.provider}${c.default_model ? ", " + c.default_model : ""})`] as const)];
  if (a?.credential_id && creds && !creds.some((c) => c.id === a.credential_id)) credOptions.push([String(a.credential_id), `Credential #${a.credential_id}`]);
  return (
    <form class="card" onSubmit={submit} aria-labelledby="ag-form" noValidate>
      <h3 id="ag-form">{a ? `Edit “${a.name}”` : "New agent"}</h3>
      <Field label="Name" name="name" value={f.name} onValue={(v) => set({ name: v })} error={errors.fields.name} required />
      <Select label="Kind" name="kind" value={f.kind} onValue={(v) => set({ kind: v as Kind })} options={kinds} error={errors.fields.kind} />
      <TextArea label="Description" name="description" value={f.description} onValue={(v) => set({ description: v })} error={errors.fields.description} rows={2} />
      {creds ? (
        <Select label="Provider credential" name="credential_id" value={f.credential} onValue={(v) => set({ credential: v })} options={credOptions} error={errors.fields.credential_id}
          hint="Which AI provider's credential it calls with." />
      ) : (
        <p class="muted small">
          Provider credential: {a?.credential_id ? `#${a.credential_id}` : "the AI settings' credential"}.
        </p>
      )}
      <Field label="Model" name="model" value={f.model} onValue={(v) => set({ model: v })} error={errors.fields.model} hint="Left empty, the credential's or the settings' model." />
      <TextArea label="System prompt" name="system_prompt" value={f.system_prompt} onValue={(v) => set({ system_prompt: v })} error={errors.fields.system_prompt} rows={6}
        hint="{{name}} is replaced by the run's variable of that name." />
      <div class="row">
        <Field label="Temperature" name="temperature" type="number" value={f.temperature} onValue={(v) => set({ temperature: v })} error={errors.fields.temperature} hint="0 to 2; empty: the settings' (the model's default)." />
        {f.temperature !== "" && (
          <button type="button" class="link" onClick={() => set({ temperature: "" })}>
            Use the model's default<span class="visually-hidden"> temperature</span>
          </button>
        )}
        <Field label="Max output tokens" name="max_tokens" type="number" value={f.max_tokens} onValue={(v) => set({ max_tokens: v })} error={errors.fields.max_tokens} hint="Empty: the settings' (the model's default)." />
        {f.max_tokens !== "" && (
          <button type="button" class="link" onClick={() => set({ max_tokens: "" })}>
            Use the model's default<span class="visually-hidden"> max output tokens</span>
          </button>
        )}
      </div>
      <Labelled label="Active" error={errors.fields.is_active} control={(c) => (
        <input {...c} type="checkbox" name="is_active" checked={f.is_active} onChange={(e) => set({ is_active: e.currentTarget.checked })} />
      )} />
      <FormActions error={errors.form} disabled={busy} onCancel={() => onDone(null)}>
        {a ? "Save the agent" : "Create the agent"}
      </FormActions>
    </form>
  );
}

function AgentDetail({ env, a, run, editor, creds, onChanged, onDeleted }: {
  env: number;
  a: Agent;
  run: number | null;
  editor: boolean;
  creds: Credential[] | null;
  onChanged: (m: string) => void;
  onDeleted: (m: string) => void;
}) {
  const [editing, setEditing] = useState(false);
  const [runsKey, setRunsKey] = useState(0);
  return (
    <section aria-labelledby="ag-detail" class="detail">
      <h2 id="ag-detail">{a.name}</h2>
      {a.description && <p class="muted">{a.description}</p>}
      <dl class="facts">
        <dt>Kind</dt>
        <dd>{kindWord[a.kind]}</dd>
        <dt>Model</dt>
        <dd>{a.model || "the settings' model"}</dd>
        <dt>Temperature</dt>
        <dd>{a.temperature ?? "the settings'"}</dd>
        <dt>Max output tokens</dt>
        <dd>{a.max_tokens == null ? "the settings'" : num(a.max_tokens)}</dd>
      </dl>
      {editor && !editing && (
        <div class="actions">
          <button type="button" onClick={() => setEditing(true)}>
            Edit the agent
          </button>
        </div>
      )}
      {editing && (
        <AgentForm env={env} a={a} creds={creds} onDone={(x) => {
          setEditing(false);
          if (x) onChanged(`Agent “${x.name}” saved.`);
        }} />
      )}
      <RunAgent env={env} a={a} editor={editor} onRun={() => setRunsKey((n) => n + 1)} />
      <Runs key={runsKey} a={a} shown={run} />
      <Assignments a={a} editor={editor} onChanged={onChanged} />
      <AgentCampaigns env={env} a={a} editor={editor} />
      {editor && <DeleteAgent a={a} onDeleted={onDeleted} />}
    </section>
  );
}

type Phase = { kind: "idle" } | { kind: "running"; runId: number | null } | { kind: "done"; run: Run } | { kind: "failed"; detail: string } | { kind: "cancelled" };

function RunAgent({ env, a, editor, onRun }: { env: number; a: Agent; editor: boolean; onRun: () => void }) {
  const [input, setInput] = useState("");
  const [text, setText] = useState("");
  const [phase, setPhase] = useState<Phase>({ kind: "idle" });
  const [error, setError] = useState<FormErrors>(noErrors);
  const [noProvider, setNoProvider] = useState(false);
  const ac = useRef<AbortController | null>(null);
  useEffect(() => () => ac.current?.abort(), []);
  const running = phase.kind === "running";

  async function run(e: Event) {
    e.preventDefault();
    if (running) return;
    setError(noErrors);
    setNoProvider(false);
    setText("");
    const c = new AbortController();
    ac.current = c;
    let runId: number | null = null;
    setPhase({ kind: "running", runId });
    try {
      await post(url("/api/agents/{id}/execute", { id: a.id }), { input, environment_id: env, stream: true }, (ev) => {
        const d = ev.data as Record<string, unknown>;
        if (ev.event === "run") {
          runId = (d as Run).id;
          setPhase({ kind: "running", runId });
        } else if (ev.event === "delta" && typeof d.text === "string") {
          const piece = d.text;
          setText((t) => t + piece);
        } else if (ev.event === "done") {
          setPhase({ kind: "done", run: d as Run });
        } else if (ev.event === "error") {
          setPhase({ kind: "failed", detail: String(d.detail ?? "the run failed") });
        }
      }, c.signal);
      setPhase((p) => (p.kind === "running" ? { kind: "failed", detail: "the stream was cut; the run may still finish: see the past runs" } : p));
    } catch (err) {
      if (c.signal.aborted) return;
      setNoProvider(isNoProvider(err));
      if (!isNoProvider(err)) setError(formErrors(err, ["input"]));
      setPhase({ kind: "idle" });
    } finally {
      onRun();
    }
  }

  // stop cancels the run on the server while its stream is still read (a
  // stream cut first would cancel it by itself), then stops reading; a run
  // that ended meanwhile is shown as it ended.
  async function stop() {
    if (phase.kind !== "running") return;
    const runId = phase.runId;
    let r: Run | null = null;
    let failed: string | null = null;
    if (runId != null) {
      try {
        r = (await api.post("/api/agents/runs/{run_id}/cancel", { path: { run_id: runId } })).data;
      } catch (err) {
        if (err instanceof ApiError && err.status === 409) r = (await api.get("/api/agents/runs/{run_id}", { path: { run_id: runId } }).catch(() => null))?.data ?? null;
        else failed = errorText(err);
      }
    }
    ac.current?.abort();
    if (failed) setPhase({ kind: "failed", detail: failed });
    else if (r?.status === "succeeded") setPhase({ kind: "done", run: r });
    else if (r?.status === "failed") setPhase({ kind: "failed", detail: r.error || "the run failed" });
    else setPhase({ kind: "cancelled" });
    onRun();
  }

  if (!editor) return null;
  return (
    <section aria-labelledby="ag-run">
      <h3 id="ag-run">Run it</h3>
      <form onSubmit={run} noValidate>
        <TextArea label="Input" name="input" value={input} onValue={setInput} error={error.fields.input} rows={4} hint="What to give the agent; {{name}} in it is replaced by variables." />
        {error.form && <Alert>{sentence(error.form)}</Alert>}
        {noProvider && <NoProvider needs="an agent" />}
        <FormActions disabled={running} onCancel={running ? () => void stop() : undefined} cancel="Stop">
          Run
        </FormActions>
      </form>
      {phase.kind !== "idle" && (
        <>
          <p role="status" class="muted">
            {phase.kind === "running" && "The agent is writing…"}
            {phase.kind === "cancelled" && "Stopped. The run was cancelled; its output so far is below."}
            {phase.kind === "done" && `Done: ${num(phase.run.input_tokens)} tokens in, ${num(phase.run.output_tokens)} out, from ${phase.run.model}, ${usd(phase.run.cost_usd)}.`}
          </p>
          {phase.kind === "failed" && <Alert>The run failed: {sentence(phase.detail)}</Alert>}
          <div class="stream" role="region" aria-label="Output" aria-busy={running}>
            {phase.kind === "done" ? phase.run.output : text}
          </div>
        </>
      )}
    </section>
  );
}

const statusWord: Record<Run["status"], string> = { queued: "Queued", running: "Running", succeeded: "Succeeded", failed: "Failed", cancelled: "Cancelled" };

function Runs({ a, shown }: { a: Agent; shown: number | null }) {
  const runs = useResource((signal) => api.get("/api/agents/{id}/runs", { path: { id: a.id }, query: { per_page: 20 }, signal }), [a.id]);
  const items = runs.data?.data.items ?? [];
  const total = runs.data?.data.total ?? 0;
  return (
    <section aria-labelledby="ag-runs">
      <h3 id="ag-runs">Past runs</h3>
      {runs.error && <Alert>{runs.error}</Alert>}
      {runs.data && items.length === 0 && <p class="muted">It has not run yet.</p>}
      {items.length > 0 && (
        <>
          <Table aria-labelledby="ag-runs" cols={["Queued", "Status", "Model", "Tokens in", "Tokens out", "Cost", "Took"]}>
            {items.map((r) => (
              <tr key={r.id}>
                <td>
                  <When at={r.queued_at} />
                </td>
                <td>
                  {statusWord[r.status]}
                  {r.error && <span class="small muted"> ({r.error})</span>}
                </td>
                <td>{r.model || "—"}</td>
                <td class="num">{num(r.input_tokens)}</td>
                <td class="num">{num(r.output_tokens)}</td>
                <td class="num">{usd(r.cost_usd)}</td>
                <td class="num">{r.duration_ms == null ? "—" : `${(r.duration_ms / 1000).toFixed(1)} s`}</td>
              </tr>
            ))}
          </Table>
          {total > items.length && <p class="muted small">The last {items.length} of {num(total)} runs.</p>}
          {items.filter((r) => r.output).map((r) => (
            <details key={r.id} open={r.id === shown}>
              <summary>
                Output of the run of <When at={r.queued_at} />
              </summary>
              <div class="stream">{r.output}</div>
            </details>
          ))}
        </>
      )}
    </section>
  );
}

function Assignments({ a, editor, onChanged }: { a: Agent; editor: boolean; onChanged: (m: string) => void }) {
  const envs = useResource((signal) => api.get("/api/environments", { query: { per_page: 200 }, signal }), []);
  const [chosen, setChosen] = useState<Set<number>>(() => new Set(a.assignments));
  const saving = useAction();
  const busy = saving.busy !== null;
  const others = (envs.data?.data.items ?? []).filter((e) => e.id !== a.environment_id);
  function toggle(id: number, on: boolean) {
    const next = new Set(chosen);
    if (on) next.add(id);
    else next.delete(id);
    setChosen(next);
  }
  function save(e: Event) {
    e.preventDefault();
    void saving.act(async () => {
      await api.put("/api/agents/{id}/assignments", { path: { id: a.id }, body: { environment_ids: [...chosen] } });
      onChanged(`The environments that may use “${a.name}” are saved.`);
    });
  }
  if (a.environment_id === null) {
    return (
      <section aria-labelledby="ag-envs">
        <h3 id="ag-envs">Environments</h3>
        <p class="muted">A global agent: every environment may use it.</p>
      </section>
    );
  }
  return (
    <section aria-labelledby="ag-envs">
      <h3 id="ag-envs">Environments</h3>
      {envs.error && <Alert>{envs.error}</Alert>}
      {envs.data && others.length === 0 && <p class="muted">There is no other environment to share it with.</p>}
      {others.length > 0 && (
        <form onSubmit={save}>
          <fieldset disabled={!editor || busy}>
            <legend>Other environments that may use it</legend>
            {others.map((e) => (
              <label key={e.id} class="check-label">
                <input type="checkbox" checked={chosen.has(e.id)} onChange={(ev) => toggle(e.id, ev.currentTarget.checked)} /> {e.name}
              </label>
            ))}
          </fieldset>
          {saving.error && <Alert>{saving.error}</Alert>}
          {editor && (
            <div class="actions">
              <button type="submit" disabled={busy}>
                Save the environments
              </button>
            </div>
          )}
        </form>
      )}
    </section>
  );
}

function AgentCampaigns({ env, a, editor }: { env: number; a: Agent; editor: boolean }) {
  const mine = useResource((signal) => api.get("/api/agents/{id}/campaigns", { path: { id: a.id }, query: { per_page: 200 }, signal }), [a.id]);
  const all = useResource((signal) => api.get("/api/seo/campaigns", { query: { environment_id: env, per_page: 200 }, signal }), [env]);
  const [pick, setPick] = useState("");
  const { busy: acting, error, act } = useAction();
  const busy = acting !== null;
  const assigned = mine.data?.data.items ?? [];
  const free = (all.data?.data.items ?? []).filter((c) => c.agent_id !== a.id);
  // A campaign writes with one agent: assigning this one to a campaign
  // that has another replaces it, which is asked first, naming it.
  const [replacing, setReplacing] = useState<{ id: number; campaign: string; agent: string } | null>(null);
  async function assign() {
    const c = free.find((x) => String(x.id) === pick);
    if (!c) return;
    if (c.agent_id == null) return void setAgent(c.id, a.id);
    let name = `#${c.agent_id}`;
    try {
      name = (await api.get("/api/agents/{id}", { path: { id: c.agent_id } })).data.name;
    } catch {
      // one the caller cannot read is named by its id
    }
    setReplacing({ id: c.id, campaign: c.name, agent: name });
  }
  function setAgent(id: number, agent: number) {
    return act(async () => {
      await api.put("/api/seo/campaigns/{id}", { path: { id }, body: { agent_id: agent } });
      setPick("");
      mine.reload();
      all.reload();
    });
  }
  return (
    <section aria-labelledby="ag-cmp">
      <h3 id="ag-cmp">Campaigns</h3>
      {(mine.error || all.error) && <Alert>{mine.error ?? all.error}</Alert>}
      {mine.data && assigned.length === 0 && <p class="muted">No campaign writes with it.</p>}
      {assigned.length > 0 && (
        <ul aria-labelledby="ag-cmp">
          {assigned.map((c) => (
            <li key={c.id}>
              {c.name}
              {editor && (
                <>
                  {" "}
                  <button type="button" class="link" onClick={() => void setAgent(c.id, 0)} disabled={busy}>
                    Take it off<span class="visually-hidden"> {c.name}</span>
                  </button>
                </>
              )}
            </li>
          ))}
        </ul>
      )}
      {editor && free.length > 0 && (
        <div class="row">
          <Select label="Campaign to assign it to" name="campaign" value={pick} onValue={setPick} options={[["", "Choose a campaign"], ...free.map((c) => [String(c.id), c.name] as const)]} />
          <button type="button" onClick={() => void assign()} disabled={busy || !pick}>
            Assign to the campaign
          </button>
        </div>
      )}
      {replacing && (
        <Confirm label="Confirm replacing the agent" question={`The campaign “${replacing.campaign}” writes with the agent “${replacing.agent}”. Assign “${a.name}” instead? “${replacing.agent}” stops writing for it.`}
          action={`Replace “${replacing.agent}”`} busy={busy}
          onConfirm={() => {
            const r = replacing;
            setReplacing(null);
            void setAgent(r.id, a.id);
          }}
          onCancel={() => setReplacing(null)} />
      )}
      {error && <Alert>{error}</Alert>}
    </section>
  );
}

function DeleteAgent({ a, onDeleted }: { a: Agent; onDeleted: (m: string) => void }) {
  const [asking, setAsking] = useState(false);
  const { busy, error, act } = useAction();
  const remove = () =>
    act(async () => {
      await api.del("/api/agents/{id}", { path: { id: a.id } });
      onDeleted(`Agent “${a.name}” deleted.`);
    });
  return (
    <div class="actions-block">
      <div class="actions">
        <button type="button" onClick={() => setAsking(true)} aria-expanded={asking}>
          Delete the agent…
        </button>
      </div>
      {asking && (
        <Confirm label="Confirm deletion" question={`Delete the agent “${a.name}” and all its past runs? This cannot be undone.`} action={`Delete “${a.name}”`}
          busy={busy !== null} onConfirm={() => void remove()} onCancel={() => setAsking(false)} />
      )}
      {error && <Alert>{error}</Alert>}
    </div>
  );
}
