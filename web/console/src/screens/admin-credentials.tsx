// Credentials (admins): the API keys and application passwords the server
// uses (AI providers, WordPress, search data), stored encrypted and shown
// only masked once saved; each can be tested with a real call and deleted
// after a confirmation that names it.
import { useState } from "preact/hooks";
import { api, type Schemas } from "../api/client";
import { Alert, Field, formErrors, type FormErrors, Heading, noErrors, Select, Thead, useAction, useResource, When } from "../ui";
import { Confirm } from "../confirm";

type Credential = Schemas["credentialResponse"];
type Provider = Credential["provider"];
type TestResult = Schemas["credentialTestResponse"];
export const providerWords: Record<Provider, string> = {
  openai: "OpenAI",
  anthropic: "Anthropic",
  openai_compatible: "OpenAI-compatible (Ollama, OpenRouter, …)",
  wordpress: "WordPress application password",
  serp: "Search data API",
};

export function Credentials() {
  const list = useResource((signal) => api.get("/api/configurations", { query: { per_page: 100 }, signal }), []);
  const envs = useResource((signal) => api.get("/api/environments", { query: { per_page: 100 }, signal }), []);
  const [saved, setSaved] = useState<Credential | null>(null);
  const items = list.data?.data.items ?? [];
  const envName = (id: number | null) => (id === null ? "Every environment" : envs.data?.data.items.find((e) => e.id === id)?.name ?? `Environment ${id}`);
  return (
    <>
      <Heading>Credentials</Heading>
      <p class="muted">Keys are stored encrypted. Once saved, a secret is never shown again, only masked.</p>
      {list.error && <Alert>{list.error}</Alert>}
      {list.data && items.length === 0 && <p>No credentials yet. Add one below: an AI provider first, so that writing and agents can work, and a WordPress application password for each site.</p>}
      {items.length > 0 && (
        <div class="table-wrap">
          <table aria-label="Credentials">
            <Thead cols={["Name", "Provider", "Secret", "Usable in", "Last test", ""]} />
            <tbody>
              {items.map((c) => (
                <Row key={c.id} c={c} envName={envName(c.environment_id)} onChanged={list.reload} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {saved && (
        <p role="status">
          {saved.name} is saved. Its secret is stored encrypted and will not be shown again: it reads {saved.secret_hint}.
        </p>
      )}
      <AddCredential envs={envs.data?.data.items ?? []} onAdded={(c) => { setSaved(c); list.reload(); }} />
    </>
  );
}

function Row({ c, envName, onChanged }: { c: Credential; envName: string; onChanged: () => void }) {
  const [result, setResult] = useState<TestResult | null>(null);
  const { busy, error, act } = useAction();
  const [confirm, setConfirm] = useState(false);
  function test() {
    setResult(null);
    return act(async () => setResult((await api.post("/api/configurations/{id}/test", { path: { id: c.id } })).data));
  }
  async function remove() {
    if (await act(() => api.del("/api/configurations/{id}", { path: { id: c.id } }))) onChanged();
  }
  return (
    <tr>
      <td>{c.name}</td>
      <td>{providerWords[c.provider]}{c.base_url && <div class="muted small">{c.base_url}</div>}</td>
      <td><code>{c.secret_hint}</code></td>
      <td>{envName}</td>
      <td>
        {c.last_test_ok === null ? "Never" : c.last_test_ok ? "Worked" : `Failed: ${c.last_test_error}`}
        {c.last_tested_at && <div class="muted small"><When at={c.last_tested_at} /></div>}
      </td>
      <td>
        <div class="row">
          <button type="button" onClick={test} disabled={busy !== null}>Test<span class="visually-hidden"> {c.name}</span></button>
          <button type="button" onClick={() => setConfirm(true)} disabled={busy !== null} aria-expanded={confirm} aria-label={`Delete ${c.name}…`}>Delete…</button>
        </div>
        {result && <TestOutcome r={result} name={c.name} />}
        {error && <Alert>{error}</Alert>}
        {confirm && (
          <Confirm label={`Confirm deleting ${c.name}`} question={`Delete the credential ${c.name}? Environments, agents and settings that use it stop working until another is chosen.`}
            action={`Delete ${c.name}`} busy={busy !== null} onConfirm={() => void remove()} onCancel={() => setConfirm(false)} />
        )}
      </td>
    </tr>
  );
}

// TestOutcome says what the server found when it called the provider.
export function TestOutcome({ r, name }: { r: TestResult; name: string }) {
  return (
    <div role="status" class="test-outcome">
      <p>
        {r.ok ? `${name} works` : `${name} failed`} ({r.latency_ms} ms): {r.detail}
      </p>
      {r.models.length > 0 && <p class="muted small">Models: {r.models.slice(0, 12).join(", ")}{r.models.length > 12 ? ` and ${r.models.length - 12} more` : ""}</p>}
    </div>
  );
}

const fields = ["name", "provider", "api_key", "application_password", "username", "base_url", "default_model", "environment_id"] as const;

function AddCredential({ envs, onAdded }: { envs: Schemas["environmentResponse"][]; onAdded: (c: Credential) => void }) {
  const [f, setF] = useState({ name: "", provider: "openai" as Provider, api_key: "", application_password: "", username: "", base_url: "", default_model: "", environment_id: "" });
  const [errors, setErrors] = useState<FormErrors>(noErrors);
  const [busy, setBusy] = useState(false);
  const set = (k: keyof typeof f) => (v: string) => setF({ ...f, [k]: v });
  const wp = f.provider === "wordpress";
  async function submit(e: Event) {
    e.preventDefault();
    setBusy(true);
    setErrors(noErrors);
    try {
      const body: Schemas["credentialCreateRequest"] = { name: f.name, provider: f.provider };
      if (wp) {
        body.username = f.username;
        body.application_password = f.application_password;
      } else body.api_key = f.api_key;
      if (f.base_url) body.base_url = f.base_url;
      if (f.default_model && !wp) body.default_model = f.default_model;
      if (f.environment_id) body.environment_id = Number(f.environment_id);
      const r = await api.post("/api/configurations", { body });
      setF({ ...f, name: "", api_key: "", application_password: "", username: "", base_url: "", default_model: "" });
      onAdded(r.data);
    } catch (err) {
      setErrors(formErrors(err, fields));
    } finally {
      setBusy(false);
    }
  }
  return (
    <form noValidate onSubmit={submit} aria-labelledby="add-cred-h">
      <h2 id="add-cred-h">Add a credential</h2>
      <Field label="Name" name="name" value={f.name} onValue={set("name")} error={errors.fields.name} required />
      <Select label="Provider" name="provider" value={f.provider} onValue={set("provider")} error={errors.fields.provider} options={Object.entries(providerWords) as [Provider, string][]} />
      {wp ? (
        <>
          <Field label="WordPress user name" name="username" value={f.username} onValue={set("username")} error={errors.fields.username} autoComplete="off" />
          <Field label="Application password" type="password" name="application_password" value={f.application_password} onValue={set("application_password")} error={errors.fields.application_password} autoComplete="new-password" />
        </>
      ) : (
        <Field label="API key" type="password" name="api_key" value={f.api_key} onValue={set("api_key")} error={errors.fields.api_key} autoComplete="new-password" />
      )}
      <Field label={wp ? "Site address" : "Base URL"} type="url" name="base_url" value={f.base_url} onValue={set("base_url")} error={errors.fields.base_url}
        hint={wp ? "The WordPress site, e.g. https://example.com." : "Leave empty for the provider's own; an OpenAI-compatible server needs its address."} />
      {!wp && <Field label="Default model" name="default_model" value={f.default_model} onValue={set("default_model")} error={errors.fields.default_model} />}
      <Select label="Usable in" name="environment_id" value={f.environment_id} onValue={set("environment_id")} error={errors.fields.environment_id}
        options={[["", "Every environment"], ...envs.map((e) => [String(e.id), e.name] as const)]} />
      {errors.form && <Alert>{errors.form}</Alert>}
      <button type="submit" disabled={busy}>Save the credential</button>
    </form>
  );
}
