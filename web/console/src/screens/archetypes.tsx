// Archetypes: the article blueprints the Write screen and the campaigns
// use (GET /api/cie/archetypes: the built-ins, the global ones and the
// environment's). Editors create one in the environment (admins may make
// it global), edit its name, description, sections, prompt template (whose
// {{name}} placeholders are the variables the Write form asks for),
// optional variables, length and tone, make an editable copy of a built-in
// or a global one, and delete one after a confirmation naming it. The
// server's 422 is shown beside the field it names. Viewers read.
import { useState } from "preact/hooks";
import { api, type Schemas } from "../api/client";
import { Confirm } from "../confirm";
import type { ScreenProps } from "../lazy";
import { envPath } from "../router";
import { sentence } from "../session";
import { Alert, canEdit, Field, FormActions, Heading, isAdmin, Link, NewButton, Notice, num, Pager, Select, Table, TextArea, useAction, useResource, useSubmit, When } from "../ui";

type Archetype = Schemas["archetypeResponse"];
type Section = Schemas["sectionJSON"];

// placeholders are the {{name}} variables of a template, in order (the
// server's rule: it answers them as `variables` once saved).
export function placeholders(tmpl: string): string[] {
  const out: string[] = [];
  for (const m of tmpl.matchAll(/\{\{\s*([A-Za-z][A-Za-z0-9_]{0,39})\s*\}\}/g)) if (m[1] && !out.includes(m[1])) out.push(m[1]);
  return out;
}

const where = (a: Archetype, env: number) => (a.builtin ? "Built in" : a.environment_id === null ? "Global" : a.environment_id === env ? "This environment" : "Another environment");
// manageable: the server lets this user change it (a built-in never; a global one, admins only).
const manageable = (a: Archetype) => canEdit() && !a.builtin && (a.environment_id !== null || isAdmin());

export function Archetypes({ env }: ScreenProps) {
  const editor = canEdit();
  const [page, setPage] = useState(1);
  const list = useResource((signal) => api.get("/api/cie/archetypes", { query: { environment_id: env, page, per_page: 50 }, signal }), [env, page]);
  const [open, setOpen] = useState<number | null>(Number(new URLSearchParams(location.search).get("id")) || null);
  const [creating, setCreating] = useState(false);
  const [notice, setNotice] = useState<string | null>(null);
  const d = list.data?.data;
  const items = d?.items ?? [];
  const pages = d ? Math.max(1, Math.ceil(d.total / d.per_page)) : 1;
  function changed(message: string, id: number | null) {
    setNotice(message);
    setOpen(id);
    list.reload();
  }
  return (
    <>
      <Heading>Archetypes</Heading>
      <p class="muted">
        An archetype is an article's blueprint: its sections, length, tone and the prompt the model is given. Its prompt's <code>{"{{name}}"}</code> placeholders
        are the variables the <Link href={envPath(env, "write")}>Write screen</Link> asks for.
      </p>
      <Notice text={notice} />
      <section aria-labelledby="arch-list">
        <h2 id="arch-list">Archetypes of this environment</h2>
        {list.error && <Alert>{list.error}</Alert>}
        {d && items.length === 0 && <p>{editor ? "No archetype yet. Create one: a name and a prompt." : "No archetype yet. An editor creates them."}</p>}
        {items.length > 0 && (
          <div class="table-wrap">
            <Table aria-labelledby="arch-list" cols={["Name", "Where", "Variables", "Words"]}>
              {items.map((a) => (
                <tr key={a.id}>
                  <th scope="row">
                    <button type="button" class="link" aria-expanded={open === a.id} onClick={() => { setCreating(false); setOpen(open === a.id ? null : a.id); }}>
                      {a.name}
                    </button>
                  </th>
                  <td>{where(a, env)}</td>
                  <td>{[...a.variables, ...a.optional_variables.filter((v) => !a.variables.includes(v)).map((v) => v + " (optional)")].join(", ") || <span class="muted">none</span>}</td>
                  <td>{num(a.target_words)}</td>
                </tr>
              ))}
            </Table>
          </div>
        )}
        <Pager label="Pages of archetypes" page={page} pages={pages} onPage={setPage} />
        <NewButton shown={editor && !creating} onClick={() => { setOpen(null); setCreating(true); }}>New archetype</NewButton>
        {creating && <ArchetypeForm env={env} onDone={(a) => { setCreating(false); if (a) changed(`Archetype “${a.name}” created.`, a.id); }} />}
      </section>
      {open && !creating && <Detail key={open} env={env} id={open} onChanged={changed} onClose={() => setOpen(null)} />}
    </>
  );
}

function Detail({ env, id, onChanged, onClose }: { env: number; id: number; onChanged: (m: string, id: number | null) => void; onClose: () => void }) {
  const one = useResource(async (signal) => (await api.get("/api/cie/archetypes/{id}", { path: { id }, signal })).data, [id]);
  const [editing, setEditing] = useState(false);
  const [asking, setAsking] = useState(false);
  const { busy, error, run } = useAction<"copy" | "delete">();
  const a = one.data;
  if (one.error) return <Alert>{one.error}</Alert>;
  if (!a) return <p role="status">Loading the archetype…</p>;
  if (editing) return <ArchetypeForm env={env} a={a} onDone={(b) => { setEditing(false); if (b) { one.set(b); onChanged(`Archetype “${b.name}” saved.`, b.id); } }} />;
  return (
    <section class="card" aria-labelledby="arch-detail">
      <h2 id="arch-detail">{a.name}</h2>
      <p class="muted small">
        {where(a, env)}
        {a.builtin ? " (read-only: make a copy to change it)" : ""} · changed <When at={a.updated_at} />
      </p>
      {a.description && <p>{a.description}</p>}
      <dl class="facts">
        <dt>Variables the prompt uses</dt>
        <dd>{a.variables.join(", ") || "none"}</dd>
        <dt>Optional variables</dt>
        <dd>{a.optional_variables.join(", ") || "none"}</dd>
        <dt>Length</dt>
        <dd>About {num(a.target_words)} words</dd>
        <dt>Tone</dt>
        <dd>{a.tone || "the AI settings' tone"}</dd>
      </dl>
      <h3>Sections</h3>
      {a.outline.length === 0 ? (
        <p class="muted">No sections: the model chooses them.</p>
      ) : (
        <ol>
          {a.outline.map((s, i) => (
            <li key={i}>
              <strong>{s.heading}</strong>
              {s.guidance && <span class="muted"> — {s.guidance}</span>}
            </li>
          ))}
        </ol>
      )}
      <h3>Prompt template</h3>
      <pre class="prompt" tabIndex={0} role="region" aria-label="Prompt template">{a.prompt_template}</pre>
      {error && <Alert>{error}</Alert>}
      <div class="actions">
        {manageable(a) && (
          <>
            <button type="button" onClick={() => setEditing(true)}>
              Edit
            </button>
            <button type="button" class="danger" onClick={() => setAsking(true)} disabled={!!busy}>
              Delete
            </button>
          </>
        )}
        {canEdit() && (
          <button type="button" disabled={!!busy}
            onClick={() => void run("copy", async () => {
              const c = (await api.post("/api/cie/archetypes/{id}/copy", { path: { id: a.id }, body: { environment_id: env } })).data;
              onChanged(`Copied as “${c.name}” in this environment: edit it as you like.`, c.id);
            })}>
            Make an editable copy
          </button>
        )}
        <button type="button" onClick={onClose}>
          Close
        </button>
      </div>
      {asking && (
        <Confirm label={`Delete the archetype ${a.name}`} action="Delete the archetype" busy={busy === "delete"}
          question={<>Delete the archetype “{a.name}”? The Write screen and the campaigns no longer offer it; the articles already generated with it stay.</>}
          onConfirm={() => void run("delete", async () => {
            await api.del("/api/cie/archetypes/{id}", { path: { id: a.id } });
            setAsking(false);
            onChanged(`Archetype “${a.name}” deleted.`, null);
          }).then((ok) => ok || setAsking(false))}
          onCancel={() => setAsking(false)} />
      )}
    </section>
  );
}

type Form = { name: string; description: string; prompt: string; optional: string; words: string; tone: string; outline: Section[]; global: boolean };

// ArchetypeForm creates an archetype in env (or, for an admin, a global one),
// or with a edits it.
function ArchetypeForm({ env, a, onDone }: { env: number; a?: Archetype; onDone: (a: Archetype | null) => void }) {
  const [f, setF] = useState<Form>({
    name: a?.name ?? "",
    description: a?.description ?? "",
    prompt: a?.prompt_template ?? "",
    optional: a?.optional_variables.join(", ") ?? "",
    words: a ? String(a.target_words) : "",
    tone: a?.tone ?? "",
    outline: a?.outline.map((s) => ({ heading: s.heading, guidance: s.guidance ?? "" })) ?? [],
    global: false,
  });
  const set = (patch: Partial<Form>) => setF({ ...f, ...patch });
  const setSection = (i: number, patch: Partial<Section>) => set({ outline: f.outline.map((s, j) => (j === i ? { ...s, ...patch } : s)) });
  const fields = ["name", "description", "prompt_template", "optional_variables", "target_words", "tone", "outline", "environment_id",
    ...f.outline.flatMap((_, i) => [`outline[${i}].heading`, `outline[${i}].guidance`])];
  const { errors, busy, submit } = useSubmit(fields, async () => {
    const body = {
      name: f.name,
      description: f.description,
      prompt_template: f.prompt,
      optional_variables: f.optional.split(/[\s,]+/).filter(Boolean),
      tone: f.tone,
      outline: f.outline.map((s) => ({ heading: s.heading, ...(s.guidance ? { guidance: s.guidance } : {}) })),
      ...(f.words.trim() ? { target_words: Number(f.words) } : {}),
    };
    const r = a
      ? await api.put("/api/cie/archetypes/{id}", { path: { id: a.id }, body })
      : await api.post("/api/cie/archetypes", { body: { ...body, environment_id: f.global ? null : env } });
    onDone(r.data);
  });
  const fe = errors.fields;
  const uses = placeholders(f.prompt);
  const title = a ? `Edit “${a.name}”` : "New archetype";
  return (
    <form class="card" onSubmit={submit} aria-labelledby="arch-form" noValidate>
      <h2 id="arch-form">{title}</h2>
      <Field label="Name" name="name" value={f.name} onValue={(v) => set({ name: v })} error={fe.name} required />
      <TextArea label="Description" name="description" rows={2} value={f.description} onValue={(v) => set({ description: v })} error={fe.description} />
      {!a && isAdmin() && (
        <Select label="Where" name="where" value={f.global ? "global" : "env"} onValue={(v) => set({ global: v === "global" })} error={fe.environment_id}
          options={[["env", "This environment"], ["global", "Every environment (global)"]]} />
      )}
      <TextArea label="Prompt template" name="prompt_template" rows={8} value={f.prompt} onValue={(v) => set({ prompt: v })} error={fe.prompt_template}
        hint="What the model is asked. Write {{name}} where a variable's value goes: each one is a field of the Write form." />
      <p class="muted small">
        Variables the prompt uses: {uses.join(", ") || "none"}.
      </p>
      <Field label="Optional variables" name="optional_variables" value={f.optional} onValue={(v) => set({ optional: v })} error={fe.optional_variables}
        hint="Names separated by commas: fields the Write form offers that may stay empty." />
      <div class="row">
        <Field label="Target words" name="target_words" type="number" value={f.words} onValue={(v) => set({ words: v })} error={fe.target_words} hint="50 to 20,000; empty: 1,200." />
        <Field label="Tone" name="tone" value={f.tone} onValue={(v) => set({ tone: v })} error={fe.tone} hint="Empty: the AI settings' tone." />
      </div>
      <fieldset aria-invalid={fe.outline ? "true" : undefined}>
        <legend>Sections</legend>
        {f.outline.length === 0 && <p class="muted small">No sections: the model chooses them.</p>}
        {f.outline.map((s, i) => (
          <div class="section-row" key={i} role="group" aria-label={`Section ${i + 1}`}>
            <Field label={`Section ${i + 1} heading`} name={`outline-${i}-heading`} value={s.heading} onValue={(v) => setSection(i, { heading: v })} error={fe[`outline[${i}].heading`]} />
            <TextArea label={`Section ${i + 1} guidance`} name={`outline-${i}-guidance`} rows={2} value={s.guidance ?? ""} onValue={(v) => setSection(i, { guidance: v })}
              error={fe[`outline[${i}].guidance`]} />
            <button type="button" onClick={() => set({ outline: f.outline.filter((_, j) => j !== i) })}>
              Remove section {i + 1}
            </button>
          </div>
        ))}
        {fe.outline && <p class="field-error">{sentence(fe.outline)}</p>}
        <button type="button" onClick={() => set({ outline: [...f.outline, { heading: "", guidance: "" }] })} disabled={f.outline.length >= 30}>
          Add a section
        </button>
      </fieldset>
      <FormActions error={errors.form} disabled={busy} onCancel={() => onDone(null)}>
        {a ? "Save the archetype" : "Create the archetype"}
      </FormActions>
    </form>
  );
}
