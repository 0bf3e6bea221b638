// Write an article: choose an archetype, fill in the variables it declares
// (a form made from its template's placeholders and optional variables),
// generate with stream true and watch the text arrive (POST read as an
// event stream with fetch and the Authorization header), stop, and save
// the article as a WordPress or Astro draft. The model's text is shown as
// text while it streams and through the Markdown preview (which builds
// elements, never HTML) when it is done.
import { useEffect, useRef, useState } from "preact/hooks";
import { ApiError, api, url, type Schemas } from "../api/client";
import { follow, post, type SSEvent } from "../api/sse";
import type { ScreenProps } from "../lazy";
import { Markdown } from "../markdown";
import { NoProvider, useNoProvider } from "../noprovider";
import { SaveDraft } from "../savedraft";
import { sentence } from "../session";
import { Alert, canEdit, errorText, Field, FormActions, formErrors, Heading, Select, TextArea, useResource } from "../ui";

type Archetype = Schemas["archetypeResponse"];
type Run = Schemas["cieRunResponse"];
type Target = "wordpress" | "astro";

// The variables every generation has a value for (from the archetype or
// the AI content settings) unless the form gives one.
const standard = ["tone", "target_words", "language"];

export function varLabel(name: string): string {
  const s = name.replace(/_/g, " ");
  return s.charAt(0).toUpperCase() + s.slice(1);
}

// fieldsOf is the form of an archetype: its placeholders in order, then the
// optional variables the template does not use.
export function fieldsOf(a: Archetype): { name: string; required: boolean }[] {
  const names = [...a.variables, ...a.optional_variables.filter((v) => !a.variables.includes(v))];
  return names.map((name) => ({ name, required: !a.optional_variables.includes(name) && !standard.includes(name) }));
}

// variableErrors places a 422 about variables at the fields it names:
// "variables.keyword: ..." at that field, and a missing-variables 422's
// "fields" (variables.a, variables.b) at each of them.
export function variableErrors(e: unknown, names: string[]): { fields: Record<string, string>; form: string | null } {
  if (e instanceof ApiError && e.fields.length) {
    const missing = e.fields.filter((f) => f.startsWith("variables.")).map((f) => f.slice("variables.".length)).filter((n) => names.includes(n));
    if (missing.length) return { fields: Object.fromEntries(missing.map((n) => [n, "needs a value"])), form: null };
  }
  const fe = formErrors(e, names.map((n) => "variables." + n));
  return { fields: Object.fromEntries(Object.entries(fe.fields).map(([k, v]) => [k.slice("variables.".length), v])), form: fe.form };
}

type Phase =
  | { kind: "idle" }
  | { kind: "writing"; runId: number | null }
  | { kind: "stopped"; runId: number | null }
  | { kind: "cancelled" }
  | { kind: "done"; run: Run }
  | { kind: "failed"; detail: string; runId: number | null };

export function Write({ env }: ScreenProps) {
  const editor = canEdit();
  const list = useResource((signal) => api.get("/api/cie/archetypes", { query: { environment_id: env, per_page: 200 }, signal }), [env]);
  const archetypes = list.data?.data.items ?? [];
  const [chosen, setChosen] = useState<number | null>(null);
  const archetype = archetypes.find((a) => a.id === chosen) ?? archetypes[0];
  const [values, setValues] = useState<Record<string, string>>({});
  const [errors, setErrors] = useState<{ fields: Record<string, string>; form: string | null }>({ fields: {}, form: null });
  const [phase, setPhase] = useState<Phase>({ kind: "idle" });
  const [text, setText] = useState("");
  const [notice, setNotice] = useState<string | null>(null);
  const provider = useNoProvider(env);
  const ac = useRef<AbortController | null>(null);
  useEffect(() => () => ac.current?.abort(), []);

  const fields = archetype ? fieldsOf(archetype) : [];
  const writing = phase.kind === "writing";

  async function generate(e: Event) {
    e.preventDefault();
    if (!archetype || writing) return;
    const given = Object.fromEntries(fields.map((f) => [f.name, (values[f.name] ?? "").trim()]).filter(([, v]) => v !== ""));
    setErrors({ fields: {}, form: null });
    setNotice(null);
    setText("");
    const c = new AbortController();
    ac.current = c;
    let runId: number | null = null;
    let ended = false;
    let lastId = 0;
    setPhase({ kind: "writing", runId });
    const onEvent = (ev: SSEvent) => {
      const d = ev.data as Record<string, unknown>;
      if (Number(ev.id) > lastId) lastId = Number(ev.id);
      if (ev.event === "run") {
        runId = (d as Run).id;
        setPhase({ kind: "writing", runId });
      } else if (ev.event === "snapshot") {
        // Joined again where the events it missed are no longer kept:
        // the text so far replaces what was shown.
        setText(typeof d.text === "string" ? d.text : "");
      } else if (ev.event === "delta" && typeof d.text === "string") {
        const piece = d.text;
        setText((t) => t + piece);
      } else if (ev.event === "retry") {
        setText("");
        setNotice(`The model's answer could not be read (${String(d.detail ?? "")}); it is asked again.`);
      } else if (ev.event === "done") {
        ended = true;
        setPhase({ kind: "done", run: d as Run });
        setNotice(null);
      } else if (ev.event === "error") {
        ended = true;
        setPhase({ kind: "failed", detail: String(d.detail ?? "the generation failed"), runId });
      }
    };
    try {
      await post(url("/api/cie/archetypes/{id}/generate", { id: archetype.id }), { environment_id: env, variables: given, stream: true }, onEvent, c.signal);
    } catch (err) {
      if (c.signal.aborted) return;
      if (runId == null || err instanceof ApiError) {
        if (provider.saw(err)) {
          setPhase({ kind: "idle" });
          return;
        }
        const ve = variableErrors(err, fields.map((f) => f.name));
        setErrors(ve);
        setPhase(runId ? { kind: "failed", detail: errorText(err) ?? "", runId } : { kind: "idle" });
        return;
      }
      // The connection was cut mid-stream: rejoined below.
    }
    if (ended || c.signal.aborted || runId == null) return;
    // The stream was cut but the generation goes on on the server: join
    // its events again from the last one read (Last-Event-ID), until it
    // ends or Stop.
    setNotice("The connection was cut: joining the generation again…");
    const joined = new AbortController();
    const quit = () => joined.abort();
    c.signal.addEventListener("abort", quit, { once: true });
    await follow(url("/api/cie/runs/{run_id}/events", { run_id: runId }), {
      lastId,
      signal: joined.signal,
      onOpen: () => setNotice(null),
      onEvent: (ev) => {
        onEvent(ev);
        if (ended) joined.abort();
      },
    });
    c.signal.removeEventListener("abort", quit);
    if (!c.signal.aborted) setPhase((p) => (p.kind === "writing" ? { kind: "stopped", runId } : p));
  }

  // stop cancels the generation on the server (its call is cut, what it
  // used is recorded) and stops reading; one that finished meanwhile is
  // fetched and shown.
  async function stop() {
    if (phase.kind !== "writing") return;
    const runId = phase.runId;
    ac.current?.abort();
    if (runId == null) {
      setPhase({ kind: "stopped", runId });
      return;
    }
    try {
      await api.post("/api/cie/runs/{run_id}/cancel", { path: { run_id: runId } });
      setPhase({ kind: "cancelled" });
    } catch (err) {
      if (err instanceof ApiError && err.status === 409) {
        await check(runId);
        return;
      }
      setPhase({ kind: "stopped", runId });
      setNotice(errorText(err));
    }
  }

  // ?run=<id> (a notification's link) opens that generation.
  useEffect(() => {
    const id = Number(new URLSearchParams(location.search).get("run"));
    if (id > 0) {
      setPhase({ kind: "stopped", runId: id });
      void check(id);
    }
  }, []);

  async function check(runId: number) {
    try {
      const r = await api.get("/api/cie/runs/{run_id}", { path: { run_id: runId } });
      if (r.data.status === "succeeded") {
        setText(r.data.body);
        setPhase({ kind: "done", run: r.data });
        setNotice(null);
      } else if (r.data.status === "failed" || r.data.status === "cancelled") setPhase({ kind: "failed", detail: r.data.error || r.data.status, runId });
      else setNotice("The generation is still being written on the server. Check again in a moment.");
    } catch (err) {
      setNotice(errorText(err));
    }
  }

  return (
    <>
      <Heading>Write an article</Heading>
      {provider.missing && <NoProvider needs="writing an article" />}
      {list.error && <Alert>{list.error}</Alert>}
      {!editor && <p class="notice">Writing an article needs the editor role: you can see the archetypes and what they ask for.</p>}
      {list.data && archetypes.length === 0 && <p>There is no archetype yet.</p>}
      {archetype && (
        <form onSubmit={generate} aria-labelledby="write-form" noValidate>
          <h2 id="write-form">What to write</h2>
          <Select label="Archetype" name="archetype" value={String(archetype.id)} onValue={(v) => { setChosen(Number(v)); setErrors({ fields: {}, form: null }); }}
            options={archetypes.map((a) => [String(a.id), a.environment_id ? a.name : `${a.name} (global)`] as const)} />
          {archetype.description && <p class="muted">{archetype.description}</p>}
          <p class="muted small">
            About {archetype.target_words} words{archetype.tone ? `, ${archetype.tone} tone` : ""}
            {archetype.outline.length ? `; sections: ${archetype.outline.map((s) => s.heading).join(", ")}` : ""}.
          </p>
          <fieldset disabled={!editor || writing}>
            <legend>Variables of this archetype</legend>
            {fields.length === 0 && <p class="muted">This archetype asks for nothing.</p>}
            {fields.map((f) => {
              const props = {
                label: varLabel(f.name) + (f.required ? "" : " (optional)"),
                name: f.name,
                value: values[f.name] ?? "",
                onValue: (v: string) => setValues((x) => ({ ...x, [f.name]: v })),
                error: errors.fields[f.name],
                ...(standard.includes(f.name) ? { hint: "Left empty, the archetype's or the settings' value." } : {}),
              };
              return f.name === "notes" || f.name.endsWith("_notes") ? <TextArea key={f.name} {...props} rows={3} /> : <Field key={f.name} {...props} />;
            })}
          </fieldset>
          {errors.form && <Alert>{sentence(errors.form)}</Alert>}
          {editor && (
            <FormActions disabled={writing} onCancel={writing ? () => void stop() : undefined} cancel="Stop">
              Generate
            </FormActions>
          )}
        </form>
      )}

      {phase.kind !== "idle" && (
        <section aria-labelledby="write-out">
          <h2 id="write-out">The article</h2>
          <p role="status" class="muted">
            {phase.kind === "writing" && "The model is writing…"}
            {phase.kind === "stopped" &&
              "Stopped watching. The generation may still finish on the server: check it to save the result."}
            {phase.kind === "cancelled" && "Stopped. The generation was cancelled; its text so far is below and is not saved."}
            {phase.kind === "done" && `Done: ${phase.run.output_tokens} tokens from ${phase.run.model}.`}
            {phase.kind === "failed" && ""}
          </p>
          {notice && <p class="notice">{notice}</p>}
          {phase.kind === "failed" && <Alert>The generation failed: {sentence(phase.detail)}</Alert>}
          {phase.kind === "stopped" && phase.runId && (
            <button type="button" onClick={() => void check(phase.runId as number)}>
              Check the generation
            </button>
          )}
          {phase.kind === "done" ? (
            <Article run={phase.run} env={env} editor={editor} />
          ) : (
            text && (
              <div class="stream" aria-label="Text so far" aria-busy={writing} role="region" tabIndex={0}>
                {text}
              </div>
            )
          )}
        </section>
      )}
    </>
  );
}

function Article({ run, env, editor }: { run: Run; env: number; editor: boolean }) {
  return (
    <>
      <h3>{run.title}</h3>
      {run.description && <p class="muted">{run.description}</p>}
      <Markdown text={run.body} label="Article preview" />
      {editor && <SaveDraft env={env} fallbackTitle={run.title} save={(target) => api.post("/api/cie/runs/{run_id}/save-as-post", { path: { run_id: run.id }, body: { target } })} />}
    </>
  );
}
