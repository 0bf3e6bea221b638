// Web sources: the feeds and pages an environment follows, each with its
// last fetch (when, the answer's status, the failures in a row and why),
// fetched now on request; a source's items (?source=<id>); and the items'
// titles sent to the keyword scout. Editors add and delete sources.
import { useState } from "preact/hooks";
import { api, type Schemas } from "../api/client";
import { Confirm } from "../confirm";
import type { ScreenProps } from "../lazy";
import { envPath } from "../router";
import { SendToScout } from "../scout";
import { Alert, canEdit, Field, Heading, Link, num, Pager, Select, Thead, useAction, useResource, useSubmit, When } from "../ui";

type Source = Schemas["sourceResponse"];
const kinds = [["rss", "RSS feed"], ["atom", "Atom feed"], ["page", "Web page"]] as const;
const intervals = [["3600", "Every hour"], ["21600", "Every 6 hours"], ["86400", "Every day"], ["604800", "Every week"]] as const;
const kindWord = (k: string) => kinds.find((x) => x[0] === k)?.[1] ?? k;
const every = (s: number) => intervals.find((x) => Number(x[0]) === s)?.[1] ?? `Every ${Math.round(s / 60)} minutes`;

export function WebSources({ env }: ScreenProps) {
  const open = Number(new URLSearchParams(location.search).get("source")) || null;
  const [page, setPage] = useState(1);
  const list = useResource((signal) => api.get("/api/web-sources", { query: { environment_id: env, page, per_page: 50 }, signal }), [env, page]);
  const [note, setNote] = useState<string | null>(null);
  const items = list.data?.data.items ?? [];
  const total = list.data?.data.total ?? 0;
  return (
    <>
      <Heading>Web sources</Heading>
      <p class="muted">Feeds and pages this environment follows. Their new items feed the keyword scout.</p>
      {canEdit() && <AddSource env={env} onAdded={(s) => { setNote(`Following ${s.url}.`); list.reload(); }} />}
      {note && <p role="status">{note}</p>}
      {list.error && <Alert>{list.error}</Alert>}
      {list.data && total === 0 && (
        <p class="empty">
          No web sources yet. {canEdit() ? "Add the address of a feed (RSS or Atom) or a page above: it is fetched at once." : "An editor adds the feeds and pages to follow."}
        </p>
      )}
      {items.length > 0 && (
        <table aria-label="Web sources">
          <Thead cols={["Address", "Kind", "Last fetch", "Failures", "Next fetch", "Actions"]} />
          <tbody>
            {items.map((s) => (
              <SourceRow key={s.id} s={s} env={env} open={open === s.id} onChanged={(m) => { setNote(m); list.reload(); }} />
            ))}
          </tbody>
        </table>
      )}
      <Pager label="Pages of web sources" page={page} pages={Math.ceil(total / 50)} onPage={setPage} />
      {open !== null && <Items env={env} id={open} source={items.find((s) => s.id === open)} />}
      {total > 0 && canEdit() && <SendToScout env={env} source="web" what="the items' titles" />}
    </>
  );
}

function AddSource({ env, onAdded }: { env: number; onAdded: (s: Source) => void }) {
  const [address, setAddress] = useState("");
  const [kind, setKind] = useState("rss");
  const [interval, setInterval] = useState("3600");
  const { errors, busy, submit } = useSubmit(["url", "kind", "fetch_interval"], async () => {
    const r = await api.post("/api/web-sources", { body: { environment_id: env, url: address.trim(), kind: kind as Source["kind"], fetch_interval: Number(interval) } });
    setAddress("");
    onAdded(r.data);
  });
  return (
    <form class="row" onSubmit={submit} aria-label="Add a web source">
      <Field label="Address" name="url" type="url" value={address} onValue={setAddress} error={errors.fields.url} required />
      <Select label="Kind" name="kind" value={kind} onValue={setKind} options={kinds} error={errors.fields.kind} />
      <Select label="Fetch" name="fetch_interval" value={interval} onValue={setInterval} options={intervals} error={errors.fields.fetch_interval} />
      <button type="submit" disabled={busy}>
        Follow
      </button>
      {errors.form && <Alert>{errors.form}</Alert>}
    </form>
  );
}

function SourceRow({ s, env, open, onChanged }: { s: Source; env: number; open: boolean; onChanged: (message: string) => void }) {
  const { busy, error, run } = useAction<"fetch" | "delete">();
  const [asking, setAsking] = useState(false);
  const fetchNow = () =>
    run("fetch", async () => {
      const d = (await api.post("/api/web-sources/{id}/fetch", { path: { id: s.id } })).data;
      onChanged(d.error ? `Fetching ${s.url} failed: ${d.error}` : d.not_modified ? `${s.url} has not changed since the last fetch.` : `${s.url}: ${num(d.new_items)} new item${d.new_items === 1 ? "" : "s"}.`);
    });
  const remove = () =>
    run("delete", async () => {
      await api.del("/api/web-sources/{id}", { path: { id: s.id } });
      setAsking(false);
      if (open) history.replaceState(null, "", envPath(env, "sources")); // the screen stays (with its note); the items close
      onChanged(`${s.url} deleted, with its items.`);
    });
  return (
    <tr>
      <th scope="row">
        <Link href={envPath(env, "sources") + `?source=${s.id}`} aria-current={open ? "true" : undefined}>
          {s.url}
        </Link>
        {!s.is_active && <span class="muted small"> (paused)</span>}
      </th>
      <td>
        {kindWord(s.kind)}
        <br />
        <span class="muted small">{every(s.fetch_interval)}</span>
      </td>
      <td>
        {s.last_fetched_at ? <When at={s.last_fetched_at} /> : "Not fetched yet"}
        {s.last_status !== null && <span class="muted small"> (HTTP {s.last_status})</span>}
      </td>
      <td>
        <span>{s.consecutive_failures === 0 ? "None" : `${num(s.consecutive_failures)} in a row`}</span>
        {s.last_error && <p class="field-error small">{s.last_error}</p>}
      </td>
      <td>
        <When at={s.next_fetch_at} />
      </td>
      <td>
        {busy === "fetch" && (
          <span role="status" class="small">
            Fetching…{" "}
          </span>
        )}
        {canEdit() && (
          <div class="actions">
            <button type="button" onClick={() => void fetchNow()} disabled={busy !== null} aria-label={`Fetch now: ${s.url}`}>
              Fetch now
            </button>
            <button type="button" onClick={() => setAsking(true)} disabled={busy !== null} aria-expanded={asking}>
              Delete…<span class="visually-hidden"> {s.url}</span>
            </button>
          </div>
        )}
        {error && <Alert>{error}</Alert>}
        {asking && (
          <Confirm label={`Delete ${s.url}`} action="Delete the source" busy={busy === "delete"} onConfirm={() => void remove()} onCancel={() => setAsking(false)}
            question={<p>Stop following {s.url} and delete the items found there? The keywords already made from them stay.</p>} />
        )}
      </td>
    </tr>
  );
}

function Items({ env, id, source }: { env: number; id: number; source: Source | undefined }) {
  const [page, setPage] = useState(1);
  const items = useResource((signal) => api.get("/api/web-sources/{id}/items", { path: { id }, query: { page, per_page: 20 }, signal }), [id, page, source?.last_fetched_at]);
  const total = items.data?.data.total ?? 0;
  return (
    <section aria-labelledby="source-items" class="card">
      <h2 id="source-items">Items of {source?.url ?? `source ${id}`}</h2>
      <p class="small">
        <Link href={envPath(env, "sources")}>Close the items</Link>
      </p>
      {items.error && <Alert>{items.error}</Alert>}
      {items.data && total === 0 && <p class="empty">No items yet: {source?.last_error ? "the last fetch failed (see above)." : "fetch the source, or wait for its next fetch."}</p>}
      {total > 0 && (
        <ul class="items">
          {items.data?.data.items.map((it) => (
            <li key={it.id}>
              <p>
                {/^https?:\/\//.test(it.link) ? (
                  <a href={it.link} rel="noopener noreferrer" target="_blank">
                    {it.title || it.link}
                  </a>
                ) : (
                  <strong>{it.title || "(no title)"}</strong>
                )}{" "}
                <span class="muted small">
                  <When at={it.published_at ?? it.created_at} />
                </span>
              </p>
              {it.summary && <p class="muted small">{it.summary.length > 300 ? it.summary.slice(0, 300) + "…" : it.summary}</p>}
            </li>
          ))}
        </ul>
      )}
      <Pager label="Pages of items" page={page} pages={Math.ceil(total / 20)} onPage={setPage} />
    </section>
  );
}
