// The environment chooser: the environments this user can see (GET
// /api/environments), each a link to its overview; admins can add one.
import { useState } from "preact/hooks";
import { api, type Schemas } from "./api/client";
import { envPath, navigate } from "./router";
import { session, sentence } from "./session";
import { Alert, Field, formErrors, Heading, Link, noErrors, useResource, type FormErrors } from "./ui";

type Env = Schemas["environmentResponse"];
const PER_PAGE = 50;

export function Environments() {
  const [shown, setShown] = useState(PER_PAGE);
  const list = useResource((signal) => api.get("/api/environments", { query: { per_page: Math.min(shown, 200) }, signal }), [shown]);
  const user = session.user;
  const isAdmin = user?.role === "admin" || user?.role === "super_admin";
  const items = list.data?.data.items ?? [];
  const total = list.data?.data.total ?? 0;
  return (
    <>
      <Heading>Environments</Heading>
      <p class="muted">Choose the environment to work in. Its address can be bookmarked or opened in another tab.</p>
      {list.error && <Alert>{list.error}</Alert>}
      {list.loading && !list.data ? (
        <p role="status">Loading environments…</p>
      ) : items.length === 0 ? (
        <p>{isAdmin ? "There is no environment yet: add the first one below." : "You have no environment yet: ask an administrator to give you access to one."}</p>
      ) : (
        <ul class="env-list">
          {items.map((e) => (
            <li key={e.id}>
              <Link href={envPath(e.id)}>{e.name}</Link>
              {e.description && <span class="muted"> — {e.description}</span>}
            </li>
          ))}
        </ul>
      )}
      {items.length < total && shown < 200 && (
        <button type="button" onClick={() => setShown(200)}>
          Show more ({total - items.length} more)
        </button>
      )}
      {items.length < total && shown >= 200 && <p class="muted">Showing the first 200 of {total} environments.</p>}
      {isAdmin && <NewEnvironment onCreated={(e) => navigate(envPath(e.id))} />}
    </>
  );
}

function NewEnvironment({ onCreated }: { onCreated: (e: Env) => void }) {
  const [name, setName] = useState("");
  const [description, setDescription] = useState("");
  const [errors, setErrors] = useState<FormErrors>(noErrors);
  const [busy, setBusy] = useState(false);
  async function submit(ev: Event) {
    ev.preventDefault();
    setBusy(true);
    setErrors(noErrors);
    try {
      const r = await api.post("/api/environments", { body: { name, description } });
      onCreated(r.data);
    } catch (e) {
      setErrors(formErrors(e, ["name", "description", "slug"]));
    } finally {
      setBusy(false);
    }
  }
  return (
    <form class="card" onSubmit={submit} aria-labelledby="new-env" noValidate>
      <h2 id="new-env">New environment</h2>
      <Field label="Name" name="name" value={name} onValue={setName} error={errors.fields.name} />
      <Field label="Description" name="description" value={description} onValue={setDescription} error={errors.fields.description} />
      {errors.form && <Alert>{sentence(errors.form)}</Alert>}
      <div class="actions">
        <button type="submit" class="primary" disabled={busy}>
          Create environment
        </button>
      </div>
    </form>
  );
}
