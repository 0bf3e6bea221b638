// Webhooks (admins): the signed receivers of each environment's events
// (docs/webhooks.md). The list says each one's URL, events, whether it is
// on and how its last delivery went; a new one's signing secret is shown
// once, when it is made; each can be edited, pinged, its deliveries read
// (asked again every 2 s while one is on its way) and one sent again, and
// deleted after a confirmation naming its URL. Rotating a secret is left to
// the API (POST /api/webhooks/{id}/rotate-secret).
import { useEffect, useState } from "preact/hooks";
import { api, type Schemas } from "../api/client";
import { Confirm } from "../confirm";
import { adminPath } from "../router";
import { Alert, Checks, Field, Heading, Link, Select, Table, useAction, useResource, useSubmit, When } from "../ui";

type Webhook = Schemas["webhookResponse"];
type Delivery = Schemas["webhookDeliveryResponse"];
type Event = Schemas["webhookRequest"]["events"][number];
type Env = Schemas["environmentResponse"];

// The events a webhook may want (web/openapi.json's list), with what each
// says happened.
const events: readonly (readonly [Event, string])[] = [
  ["post.published", "a post was published"],
  ["post.failed", "a publish failed"],
  ["run.succeeded", "a run ended well"],
  ["run.failed", "a run failed"],
  ["autopilot.paused", "the autopilot paused"],
  ["budget.reached", "80 % or 100 % of the monthly budget was spent"],
  ["keywords.imported", "keywords were imported"],
];

type Open = { id: number; what: "edit" | "deliveries" | "delete" } | null;

export function Webhooks() {
  const list = useResource((signal) => api.get("/api/webhooks", { query: { per_page: 100 }, signal }), []);
  const envs = useResource((signal) => api.get("/api/environments", { query: { per_page: 100 }, signal }), []);
  const [open, setOpen] = useState<Open>(null);
  const [made, setMade] = useState<Schemas["webhookCreatedResponse"] | null>(null);
  const [said, setSaid] = useState<string | null>(null);
  const { busy, error, run } = useAction<string>();
  const items = list.data?.data.items ?? [];
  const envList = envs.data?.data.items ?? [];
  const envName = (id: number) => envList.find((e) => e.id === id)?.name ?? `Environment ${id}`;
  const toggle = (id: number, what: "edit" | "deliveries" | "delete") => setOpen(open?.id === id && open.what === what ? null : { id, what });
  const opened = open && items.find((w) => w.id === open.id);

  function ping(w: Webhook) {
    setSaid(null);
    void run(`ping-${w.id}`, async () => {
      await api.post("/api/webhooks/{id}/ping", { path: { id: w.id } });
      setSaid(`A ping is on its way to ${w.url}.`);
      setOpen({ id: w.id, what: "deliveries" });
    });
  }
  function remove(w: Webhook) {
    void run(`delete-${w.id}`, async () => {
      await api.del("/api/webhooks/{id}", { path: { id: w.id } });
      setOpen(null);
      setSaid(`The webhook to ${w.url} is deleted.`);
      list.reload();
    });
  }

  return (
    <>
      <Heading>Webhooks</Heading>
      <p class="muted">
        A webhook receives the events it chooses of one environment, each POSTed to its URL and signed with its secret (Standard Webhooks); a receiver that refuses is
        tried again for about a day.
      </p>
      {list.error && <Alert>{list.error}</Alert>}
      {list.data && items.length === 0 && <p>No webhooks yet. Add one below to tell another system (n8n, Zapier, your own service) what happens in an environment.</p>}
      {items.length > 0 && (
        <div class="table-wrap">
          <Table aria-label="Webhooks" cols={["URL", "Environment", "Events", "Enabled", "Last delivery", ""]}>
            {items.map((w) => (
              <tr key={w.id}>
                <th scope="row">
                  {w.url}
                  {w.description && <div class="muted small">{w.description}</div>}
                </th>
                <td>{envName(w.environment_id)}</td>
                <td>{w.events.join(", ")}</td>
                <td>{w.enabled ? "On" : <>Off{w.disabled_reason && <div class="muted small">{w.disabled_reason}</div>}</>}</td>
                <td><LastDelivery w={w} /></td>
                <td>
                  <div class="row">
                    <button type="button" aria-expanded={open?.id === w.id && open.what === "edit"} onClick={() => toggle(w.id, "edit")}>
                      Edit<span class="visually-hidden"> {w.url}</span>
                    </button>
                    <button type="button" disabled={busy !== null || !w.enabled} onClick={() => ping(w)}>
                      Send a ping<span class="visually-hidden"> to {w.url}</span>
                    </button>
                    <button type="button" aria-expanded={open?.id === w.id && open.what === "deliveries"} onClick={() => toggle(w.id, "deliveries")}>
                      Deliveries<span class="visually-hidden"> of {w.url}</span>
                    </button>
                    <button type="button" aria-expanded={open?.id === w.id && open.what === "delete"} onClick={() => toggle(w.id, "delete")}>
                      Delete…<span class="visually-hidden"> {w.url}</span>
                    </button>
                  </div>
                  {open?.id === w.id && open.what === "delete" && (
                    <Confirm label={`Confirm deleting the webhook to ${w.url}`}
                      question={`Delete the webhook to ${w.url} and its deliveries? It receives no more events, and its secret signs nothing more.`}
                      action="Delete the webhook" busy={busy !== null} onConfirm={() => remove(w)} onCancel={() => setOpen(null)} />
                  )}
                </td>
              </tr>
            ))}
          </Table>
        </div>
      )}
      {error && <Alert>{error}</Alert>}
      {said && <p role="status">{said}</p>}
      {opened && open.what === "edit" && (
        <WebhookForm key={opened.id} webhook={opened} envs={envList} onSaved={(w) => {
          setSaid(`The webhook to ${w.url} is saved.`);
          setOpen(null);
          list.reload();
        }} />
      )}
      {opened && open.what === "deliveries" && <Deliveries key={opened.id} w={opened} onSettled={list.reload} />}
      {made && (
        <section class="panel-box" aria-labelledby="secret-h">
          <h2 id="secret-h">The signing secret of {made.url}</h2>
          <p>Copy it into the receiver now: it is shown this once only (a new one can be made with the API's rotate-secret).</p>
          <p>
            <code aria-label="Signing secret">{made.secret}</code>
          </p>
          <button type="button" onClick={() => setMade(null)}>I have copied it</button>
        </section>
      )}
      {!opened || open.what !== "edit" ? (
        <WebhookForm envs={envList} onSaved={(w) => {
          setMade(w as Schemas["webhookCreatedResponse"]);
          setSaid(null);
          list.reload();
        }} />
      ) : null}
    </>
  );
}

// LastDelivery says how the newest attempt went.
function LastDelivery({ w }: { w: Webhook }) {
  const ok = w.last_success_at ? Date.parse(w.last_success_at) : 0;
  const bad = w.last_failure_at ? Date.parse(w.last_failure_at) : 0;
  if (!ok && !bad) return <>Nothing sent yet</>;
  if (ok >= bad) return <>Delivered <When at={w.last_success_at} /></>;
  return (
    <>
      Failed <When at={w.last_failure_at} />
      <div class="muted small">{w.consecutive_failures} in a row{w.failing_since && <>, since <When at={w.failing_since} /></>}</div>
    </>
  );
}

const formFields = ["environment_id", "url", "events", "description", "enabled"] as const;

// WebhookForm makes a webhook (no webhook given) or changes one.
function WebhookForm({ webhook, envs, onSaved }: { webhook?: Webhook; envs: Env[]; onSaved: (w: Webhook | Schemas["webhookCreatedResponse"]) => void }) {
  const [env, setEnv] = useState(webhook ? String(webhook.environment_id) : "");
  const [url, setUrl] = useState(webhook?.url ?? "");
  const [chosen, setChosen] = useState<Set<string>>(new Set(webhook?.events ?? ["post.published", "post.failed"]));
  const [description, setDescription] = useState(webhook?.description ?? "");
  const [enabled, setEnabled] = useState(webhook?.enabled ?? true);
  const envValue = env || (envs[0] ? String(envs[0].id) : "");
  const picked = events.map(([e]) => e).filter((e) => chosen.has(e));
  const { errors, busy, submit } = useSubmit(formFields, async () => {
    if (webhook) {
      const r = await api.put("/api/webhooks/{id}", { path: { id: webhook.id }, body: { url, events: picked, description, enabled } });
      onSaved(r.data);
      return;
    }
    const r = await api.post("/api/webhooks", { body: { environment_id: Number(envValue), url, events: picked, description, enabled } });
    setUrl("");
    setDescription("");
    onSaved(r.data);
  });
  const title = webhook ? `Edit the webhook to ${webhook.url}` : "Add a webhook";
  const h = webhook ? "wh-edit-h" : "wh-add-h";
  return (
    <form noValidate onSubmit={submit} aria-labelledby={h} class={webhook ? "panel-box" : undefined}>
      <h2 id={h}>{title}</h2>
      {!webhook && envs.length === 0 && <p>No environments yet: a webhook belongs to one, so <Link href={adminPath("environments")}>create one under Environments</Link> first.</p>}
      {!webhook && envs.length > 0 && (
        <Select label="Environment" name="environment_id" value={envValue} onValue={setEnv} error={errors.fields.environment_id} options={envs.map((e) => [String(e.id), e.name] as const)} />
      )}
      <Field label="URL" type="url" name="url" value={url} onValue={setUrl} error={errors.fields.url} hint="http or https; the receiver's address, e.g. https://n8n.example/webhook/copydesk." required />
      <Checks legend="Events" options={events.map(([e, words]) => [e, <>{e} <span class="muted">({words})</span></>] as const)} chosen={chosen} onChosen={setChosen}
        error={errors.fields.events} />
      <Field label="Description (optional)" name="description" value={description} onValue={setDescription} error={errors.fields.description} />
      <label class="check-label block">
        <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} /> Enabled
      </label>
      {errors.form && <Alert>{errors.form}</Alert>}
      <button type="submit" disabled={busy || (!webhook && envs.length === 0)}>
        {webhook ? "Save the webhook" : "Add the webhook"}
      </button>
    </form>
  );
}

// Deliveries lists a webhook's recent deliveries with their attempts; one
// can be sent again. It asks again every 2 s while one is on its way, and
// tells onSettled whenever it has read them with none on its way (the
// list's last delivery may have changed: a ping can be delivered before
// the first read).
function Deliveries({ w, onSettled }: { w: Webhook; onSettled: () => void }) {
  const list = useResource((signal) => api.get("/api/webhooks/{id}/deliveries", { path: { id: w.id }, query: { per_page: 20 }, signal }), [w.id]);
  const { busy, error, run } = useAction<string>();
  const items = list.data?.data.items ?? [];
  const moving = items.some((d) => d.status === "pending" || d.status === "sending");
  useEffect(() => {
    if (moving) {
      const t = window.setTimeout(list.reload, 2000);
      return () => window.clearTimeout(t);
    }
    if (list.data) onSettled();
    return undefined;
  }, [list.data]);
  function resend(d: Delivery) {
    void run(`resend-${d.id}`, async () => {
      await api.post("/api/webhooks/{id}/deliveries/{delivery_id}/resend", { path: { id: w.id, delivery_id: d.id } });
      list.reload();
    });
  }
  return (
    <section class="panel-box" aria-labelledby="wh-del-h">
      <h2 id="wh-del-h">Deliveries to {w.url}</h2>
      <button type="button" onClick={list.reload}>Refresh</button>
      {list.error && <Alert>{list.error}</Alert>}
      {list.data && items.length === 0 && <p>Nothing delivered yet: events it wants, and pings, show here.</p>}
      {items.length > 0 && (
        <div class="table-wrap">
          <Table aria-label="Deliveries" cols={["Made", "Event", "Status", "Attempts", "Last answer", ""]}>
            {items.map((d) => (
              <tr key={d.id}>
                <td><When at={d.created_at} /></td>
                <th scope="row">{d.type}<div class="muted small">{d.message_id}</div></th>
                <td>{statusWords[d.status]}{d.next_attempt_at && d.status === "pending" && <div class="muted small">next try <When at={d.next_attempt_at} /></div>}</td>
                <td>{d.attempts}</td>
                <td>{d.last_status !== null && d.last_status !== undefined ? `HTTP ${d.last_status}` : ""}{d.last_error && <div class="muted small">{d.last_error}</div>}</td>
                <td>
                  <button type="button" disabled={busy !== null || d.status === "sending"} onClick={() => resend(d)}>
                    Send again<span class="visually-hidden"> {d.type} {d.message_id}</span>
                  </button>
                </td>
              </tr>
            ))}
          </Table>
        </div>
      )}
      {error && <Alert>{error}</Alert>}
    </section>
  );
}

const statusWords: Record<Delivery["status"], string> = { pending: "Waiting", sending: "Sending", succeeded: "Delivered", failed: "Failed" };
