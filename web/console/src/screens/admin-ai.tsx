// AI settings (admins): the defaults of generation (credential, model,
// temperature, length, tone, language, budgets) and the price overrides per
// model, globally or as an environment's override; an empty field inherits
// (an environment from the global settings, global from the built-in
// defaults), and the effective value is shown beside each field.
import { useState } from "preact/hooks";
import { api, type Schemas } from "../api/client";
import { adminPath } from "../router";
import { Alert, Field, formErrors, type FormErrors, Heading, Link, noErrors, Select, Thead, useResource } from "../ui";

type Level = NonNullable<Schemas["aiSettingsLevel"]>;
type Price = Schemas["Price"];
const ai = ["openai", "anthropic", "openai_compatible"];
const fields = ["credential_id", "model", "temperature", "max_output_tokens", "target_word_count", "tone", "language", "monthly_budget_usd", "price_overrides"] as const;
type Form = Record<(typeof fields)[number] extends infer K ? Exclude<K, "price_overrides"> : never, string>;

export function AISettings() {
  const envs = useResource((signal) => api.get("/api/environments", { query: { per_page: 100 }, signal }), []);
  const [level, setLevel] = useState("");
  return (
    <>
      <Heading>AI settings</Heading>
      <Select label="Settings of" name="level" value={level} onValue={setLevel}
        options={[["", "Every environment (global)"], ...(envs.data?.data.items ?? []).map((e) => [String(e.id), e.name] as const)]}
        hint="An environment's settings override the global ones field by field." />
      <LevelForm key={level} env={level ? Number(level) : null} />
    </>
  );
}

const str = (v: unknown) => (v === null || v === undefined ? "" : String(v));

function LevelForm({ env }: { env: number | null }) {
  const s = useResource((signal) => api.get("/api/settings/ai-content", { query: env ? { environment_id: env } : {}, signal }), [env]);
  const creds = useResource((signal) => api.get("/api/configurations", { query: { per_page: 100 }, signal }), []);
  if (s.error) return <Alert>{s.error}</Alert>;
  if (!s.data || !creds.data) return <p role="status">Loading the settings…</p>;
  const d = s.data.data;
  const own = (env ? d.override : d.global) ?? {};
  const usable = creds.data.data.items.filter((c) => ai.includes(c.provider) && (c.environment_id === null || c.environment_id === env));
  return <Editor env={env} own={own} effective={d.effective} creds={usable} onSaved={(r) => s.set(r)} />;
}

type Row = { model: string; input: string; output: string; cached: string };

function Editor({ env, own, effective, creds, onSaved }: {
  env: number | null;
  own: Level;
  effective: Schemas["aiSettingsEffective"];
  creds: Schemas["credentialResponse"][];
  onSaved: (r: { data: Schemas["aiSettingsResponse"]; message: string }) => void;
}) {
  const [f, setF] = useState<Form>({
    credential_id: str(own.credential_id),
    model: str(own.model),
    temperature: str(own.temperature),
    max_output_tokens: str(own.max_output_tokens),
    target_word_count: str(own.target_word_count),
    tone: str(own.tone),
    language: str(own.language),
    monthly_budget_usd: str(own.monthly_budget_usd),
  });
  const [rows, setRows] = useState<Row[]>(Object.entries(own.price_overrides ?? {}).map(([model, p]) => ({ model, input: str(p.input), output: str(p.output), cached: str(p.cached_input) })));
  const [errors, setErrors] = useState<FormErrors>(noErrors);
  const [done, setDone] = useState<string | null>(null);
  const set = (k: keyof Form) => (v: string) => setF({ ...f, [k]: v });
  const inherit = env ? "inherits the global setting" : "built-in default";
  const hint = (k: keyof Schemas["aiSettingsEffective"]) => `Now in effect: ${str(effective[k]) || "none"}. Empty: ${inherit}.`;

  async function save(e: Event) {
    e.preventDefault();
    setErrors(noErrors);
    setDone(null);
    const num = (v: string) => (v.trim() === "" ? null : Number(v));
    const text = (v: string) => (v.trim() === "" ? null : v.trim());
    const prices: Record<string, Price> = {};
    for (const r of rows) {
      if (!r.model.trim()) continue;
      prices[r.model.trim()] = { input: Number(r.input || 0), output: Number(r.output || 0), cached_input: num(r.cached) };
    }
    const body: Level = {
      credential_id: num(f.credential_id),
      model: text(f.model),
      temperature: num(f.temperature),
      max_output_tokens: num(f.max_output_tokens),
      target_word_count: num(f.target_word_count),
      tone: text(f.tone),
      language: text(f.language),
      monthly_budget_usd: num(f.monthly_budget_usd),
      price_overrides: prices,
    };
    try {
      const r = await api.put("/api/settings/ai-content", { query: env ? { environment_id: env } : {}, body });
      setDone("The AI settings are saved.");
      onSaved(r);
    } catch (err) {
      setErrors(formErrors(err, fields));
    }
  }
  const row = (i: number, k: keyof Row) => (v: string) => setRows(rows.map((r, j) => (j === i ? { ...r, [k]: v } : r)));
  return (
    <form noValidate onSubmit={save} aria-label={env ? "Environment's AI settings" : "Global AI settings"}>
      {creds.length === 0 ? (
        <p>No AI credential yet: <Link href={adminPath("credentials")}>add one under Credentials</Link> (OpenAI, Anthropic or an OpenAI-compatible server), then choose it here.</p>
      ) : (
        <Select label="Credential" name="credential_id" value={f.credential_id} onValue={set("credential_id")} error={errors.fields.credential_id}
          hint={`Empty: ${env ? "the global choice" : "the only AI credential, when there is one"}.`}
          options={[["", "Not set"], ...creds.map((c) => [String(c.id), `${c.name} (${c.provider})`] as const)]} />
      )}
      <Field label="Model" name="model" value={f.model} onValue={set("model")} error={errors.fields.model} hint={hint("model")} />
      <Field label="Temperature" type="number" name="temperature" value={f.temperature} onValue={set("temperature")} error={errors.fields.temperature} hint={hint("temperature") + " From 0 to 2."} />
      <Field label="Max output tokens" type="number" name="max_output_tokens" value={f.max_output_tokens} onValue={set("max_output_tokens")} error={errors.fields.max_output_tokens} hint={hint("max_output_tokens")} />
      <Field label="Target words" type="number" name="target_word_count" value={f.target_word_count} onValue={set("target_word_count")} error={errors.fields.target_word_count} hint={hint("target_word_count")} />
      <Field label="Tone" name="tone" value={f.tone} onValue={set("tone")} error={errors.fields.tone} hint={hint("tone")} />
      <Field label="Language" name="language" value={f.language} onValue={set("language")} error={errors.fields.language} hint={hint("language")} />
      <Field label="Monthly budget (USD)" type="number" name="monthly_budget_usd" value={f.monthly_budget_usd} onValue={set("monthly_budget_usd")} error={errors.fields.monthly_budget_usd} hint={hint("monthly_budget_usd")} />
      <fieldset>
        <legend>Price overrides (USD per million tokens)</legend>
        <p class="muted small">A model id or the start of one; it replaces the built-in price. Removing a row and saving returns that model to {env ? "the global price" : "the built-in price"}.</p>
        {errors.fields.price_overrides && <Alert>{errors.fields.price_overrides}</Alert>}
        {rows.length === 0 && <p>No price overrides: the built-in price table applies.</p>}
        {rows.length > 0 && (
          <table aria-label="Price overrides">
            <Thead cols={["Model", "Input", "Output", "Cached input", ""]} />
            <tbody>
              {rows.map((r, i) => (
                <tr key={i}>
                  <td><input aria-label={`Model of row ${i + 1}`} value={r.model} onInput={(e) => row(i, "model")(e.currentTarget.value)} /></td>
                  <td><input aria-label={`Input price of ${r.model || `row ${i + 1}`}`} type="number" step="any" min="0" value={r.input} onInput={(e) => row(i, "input")(e.currentTarget.value)} /></td>
                  <td><input aria-label={`Output price of ${r.model || `row ${i + 1}`}`} type="number" step="any" min="0" value={r.output} onInput={(e) => row(i, "output")(e.currentTarget.value)} /></td>
                  <td><input aria-label={`Cached input price of ${r.model || `row ${i + 1}`}`} type="number" step="any" min="0" value={r.cached} onInput={(e) => row(i, "cached")(e.currentTarget.value)} /></td>
                  <td><button type="button" onClick={() => setRows(rows.filter((_, j) => j !== i))}>Remove<span class="visually-hidden"> {r.model || `row ${i + 1}`}</span></button></td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        <button type="button" onClick={() => setRows([...rows, { model: "", input: "", output: "", cached: "" }])}>Add a price</button>
      </fieldset>
      {errors.form && <Alert>{errors.form}</Alert>}
      {done && <p role="status">{done}</p>}
      <button type="submit">Save the AI settings</button>
    </form>
  );
}
