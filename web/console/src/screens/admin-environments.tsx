// Environments (admins): create one, and for each its configuration (the
// WordPress site and the credential that signs in to it, the Astro
// project and content folder, the defaults), with a test of the WordPress
// credential that shows what the server found, and a delete that names
// everything it takes with it.
import { useState } from "preact/hooks";
import { api, type Schemas } from "../api/client";
import { adminPath } from "../router";
import { Alert, errorText, Field, formErrors, type FormErrors, Heading, Link, noErrors, Select, useResource } from "../ui";
import { TestOutcome } from "./admin-credentials";
import { AstroFolderTest } from "./astro-test";
import { Confirm } from "../confirm";

type Env = Schemas["environmentResponse"];

export function AdminEnvironments() {
  const list = useResource((signal) => api.get("/api/environments", { query: { per_page: 100 }, signal }), []);
  const [open, setOpen] = useState<number | null>(null);
  const items = list.data?.data.items ?? [];
  const current = items.find((e) => e.id === open);
  return (
    <>
      <Heading>Environments</Heading>
      {list.error && <Alert>{list.error}</Alert>}
      {list.data && items.length === 0 && <p>No environments yet. Create the first one below: it is the site or workspace that keywords, posts and campaigns belong to.</p>}
      {items.length > 0 && (
        <ul class="plain">
          {items.map((e) => (
            <li key={e.id}>
              <button type="button" class="link" aria-expanded={open === e.id} onClick={() => setOpen(open === e.id ? null : e.id)}>
                Configure {e.name}
              </button>
              <span class="muted small"> {e.configuration?.wordpress?.base_url || "no WordPress site"} · {e.configuration?.astro?.project_path || "no Astro project"}</span>
            </li>
          ))}
        </ul>
      )}
      {current && <Configure key={current.id} env={current} onSaved={list.reload} onDeleted={() => { setOpen(null); list.reload(); }} />}
      <Create onCreated={(e) => { list.reload(); setOpen(e.id); }} />
    </>
  );
}

function Create({ onCreated }: { onCreated: (e: Env) => void }) {
  const [name, setName] = useState("");
  const [errors, setErrors] = useState<FormErrors>(noErrors);
  async function submit(e: Event) {
    e.preventDefault();
    setErrors(noErrors);
    try {
      const r = await api.post("/api/environments", { body: { name } });
      setName("");
      onCreated(r.data);
    } catch (err) {
      setErrors(formErrors(err, ["name"]));
    }
  }
  return (
    <form noValidate onSubmit={submit} aria-labelledby="new-env-h" class="panel-box">
      <h2 id="new-env-h">New environment</h2>
      <Field label="Environment name" name="name" value={name} onValue={setName} error={errors.fields.name} required />
      {errors.form && <Alert>{errors.form}</Alert>}
      <button type="submit">Create the environment</button>
    </form>
  );
}

const cfgFields = ["wordpress.base_url", "wordpress.credential_id", "wordpress.default_status", "astro.project_path", "astro.content_dir", "language", "timezone"].map((f) => "configuration." + f);

function Configure({ env, onSaved, onDeleted }: { env: Env; onSaved: () => void; onDeleted: () => void }) {
  const creds = useResource((signal) => api.get("/api/configurations", { query: { per_page: 100, provider: "wordpress" }, signal }), []);
  const c = env.configuration ?? {};
  const [f, setF] = useState({
    base_url: c.wordpress?.base_url ?? "",
    credential_id: c.wordpress?.credential_id ? String(c.wordpress.credential_id) : "",
    default_status: c.wordpress?.default_status || "draft",
    project_path: c.astro?.project_path ?? "",
    content_dir: c.astro?.content_dir ?? "",
    language: c.language ?? "",
    timezone: c.timezone ?? "",
  });
  const [errors, setErrors] = useState<FormErrors>(noErrors);
  const [done, setDone] = useState<string | null>(null);
  const [test, setTest] = useState<Schemas["credentialTestResponse"] | null>(null);
  const [testError, setTestError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [confirm, setConfirm] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const set = (k: keyof typeof f) => (v: string) => setF({ ...f, [k]: v });
  const wpCreds = (creds.data?.data.items ?? []).filter((x) => x.environment_id === null || x.environment_id === env.id);
  const cred = wpCreds.find((x) => String(x.id) === f.credential_id);

  async function save(e: Event) {
    e.preventDefault();
    setErrors(noErrors);
    setDone(null);
    try {
      const body: Schemas["EnvironmentConfig"] = {
        ...c,
        // A part left empty is no site of that kind (the server would reject its empty address or folder).
        wordpress: f.base_url || f.credential_id
          ? { ...c.wordpress, base_url: f.base_url, credential_id: f.credential_id ? Number(f.credential_id) : null, default_status: f.default_status }
          : undefined,
        astro: f.project_path || f.content_dir ? { project_path: f.project_path, content_dir: f.content_dir } : undefined,
        language: f.language,
        timezone: f.timezone,
      };
      await api.put("/api/environments/{id}/configuration", { path: { id: env.id }, body });
      setDone(`The configuration of ${env.name} is saved.`);
      onSaved();
    } catch (err) {
      setErrors(formErrors(err, cfgFields));
    }
  }
  async function runTest() {
    if (!cred) return;
    setBusy(true);
    setTest(null);
    setTestError(null);
    try {
      setTest((await api.post("/api/configurations/{id}/test", { path: { id: cred.id } })).data);
    } catch (err) {
      setTestError(errorText(err));
    } finally {
      setBusy(false);
    }
  }
  async function remove() {
    setBusy(true);
    setError(null);
    try {
      await api.del("/api/environments/{id}", { path: { id: env.id } });
      onDeleted();
    } catch (err) {
      setError(errorText(err));
      setBusy(false);
    }
  }
  return (
    <section class="panel-box" aria-labelledby="cfg-h">
      <h2 id="cfg-h">{env.name}</h2>
      <form noValidate onSubmit={save}>
        <fieldset>
          <legend>WordPress</legend>
          <Field label="Site address" type="url" name="base_url" value={f.base_url} onValue={set("base_url")} error={errors.fields["configuration.wordpress.base_url"]} hint="e.g. https://example.com" />
          {creds.data && wpCreds.length === 0 ? (
            <p>No WordPress credential yet: <Link href={adminPath("credentials")}>add an application password under Credentials</Link>, then choose it here.</p>
          ) : (
            <Select label="WordPress credential" name="credential_id" value={f.credential_id} onValue={set("credential_id")} error={errors.fields["configuration.wordpress.credential_id"]}
              options={[["", "None"], ...wpCreds.map((x) => [String(x.id), `${x.name} (${x.secret_hint})`] as const)]} />
          )}
          <Select label="New posts on the site are" name="default_status" value={f.default_status} onValue={set("default_status")} error={errors.fields["configuration.wordpress.default_status"]}
            options={[["draft", "Drafts"], ["pending", "Pending review"], ["publish", "Published"]]} />
          <button type="button" onClick={runTest} disabled={busy || !cred}>
            Test the WordPress credential
          </button>
          {test && cred && <TestOutcome r={test} name={cred.name} />}
          {testError && <Alert>{testError}</Alert>}
        </fieldset>
        <fieldset>
          <legend>Astro</legend>
          <Field label="Project folder" name="project_path" value={f.project_path} onValue={set("project_path")} error={errors.fields["configuration.astro.project_path"]} hint="A folder on the server, e.g. /srv/site." />
          <Field label="Content folder" name="content_dir" value={f.content_dir} onValue={set("content_dir")} error={errors.fields["configuration.astro.content_dir"]} hint="Inside the project, e.g. src/content/blog." />
          <AstroFolderTest envId={env.id} saved={!!env.configuration?.astro?.project_path} />
        </fieldset>
        <fieldset>
          <legend>Defaults</legend>
          <Field label="Language" name="language" value={f.language} onValue={set("language")} error={errors.fields["configuration.language"]} hint="e.g. en or de-CH." />
          <Field label="Time zone" name="timezone" value={f.timezone} onValue={set("timezone")} error={errors.fields["configuration.timezone"]} hint="e.g. Europe/Paris; the autopilot's days follow it." />
        </fieldset>
        {errors.form && <Alert>{errors.form}</Alert>}
        {done && <p role="status">{done}</p>}
        <div class="actions">
          <button type="submit">Save the configuration</button>
          <button type="button" onClick={() => setConfirm(true)} aria-expanded={confirm}>
            Delete {env.name}…
          </button>
        </div>
      </form>
      {confirm && (
        <Confirm label={`Confirm deleting ${env.name}`} question={`Delete ${env.name} and everything in it: its keywords, campaigns, posts, autopilot and history? This cannot be undone (the WordPress site and the Astro files stay as they are).`}
          action={`Delete ${env.name}`} busy={busy} onConfirm={() => void remove()} onCancel={() => setConfirm(false)} />
      )}
      {error && <Alert>{error}</Alert>}
    </section>
  );
}
