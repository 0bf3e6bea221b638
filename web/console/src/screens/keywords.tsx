// Keywords: an environment's keywords as a table paged, sorted and
// filtered by the server (GET /api/seo/keywords), the import of a keyword
// tool's export (by file picker or by dropping it on the screen, with the
// upload's progress and the server's report), and for editors the
// selected rows' status, deletion, or a campaign made of them.
import { useRef, useState } from "preact/hooks";
import { api, type Schemas } from "../api/client";
import type { ScreenProps } from "../lazy";
import { envPath } from "../router";
import { Confirm } from "../confirm";
import { sentence } from "../session";
import { Alert, canEdit, errorText, Field, FormActions, Heading, Link, Notice, num, Pager, Select, Thead, useDebounced, useResource, useSubmit } from "../ui";
import { FileUpload, useUpload } from "../upload";

type Keyword = Schemas["keywordResponse"];
type Report = Schemas["keywordImportResponse"];
type Status = Keyword["status"];
type Intent = "informational" | "commercial" | "transactional" | "navigational";
type Sort = "keyword" | "search_volume" | "difficulty" | "cpc" | "updated_at";

export const statusWords: Record<Status, string> = {
  new: "New",
  planned: "Planned",
  in_progress: "In progress",
  published: "Published",
  ignored: "Ignored",
};
const statuses = Object.entries(statusWords) as [Status, string][];
const intents: [Intent, string][] = [
  ["informational", "Informational"],
  ["commercial", "Commercial"],
  ["transactional", "Transactional"],
  ["navigational", "Navigational"],
];
const formatWords: Record<Report["format"], string> = {
  google_keyword_planner: "Google Keyword Planner",
  ahrefs: "Ahrefs",
  semrush: "Semrush",
};

export function Keywords({ env }: ScreenProps) {
  const editor = canEdit();
  const [perPage, setPerPage] = useState(50);
  const [sort, setSort] = useState<{ by: Sort; desc: boolean }>({ by: "keyword", desc: false });
  const [status, setStatus] = useState<"" | Status>("");
  const [intent, setIntent] = useState<"" | Intent>("");
  const [text, setText] = useState("");
  const q = useDebounced(text.trim());
  // A new filter, order or page size starts again at page 1, and a new page
  // with no selection: rows out of sight are never acted on.
  const filters = JSON.stringify([env, perPage, sort, status, intent, q]);
  const [at, setAt] = useState({ filters, page: 1 });
  const page = at.filters === filters ? at.page : 1;
  const setPage = (p: number) => setAt({ filters, page: p });
  const [sel, setSel] = useState({ key: "", ids: new Set<number>() });
  const selected = sel.key === filters + page ? sel.ids : new Set<number>();
  const setSelected = (ids: Set<number>) => setSel({ key: filters + page, ids });
  const [done, setDone] = useState<string | null>(null);
  const [dragging, setDragging] = useState(false);
  const importer = useRef<(f: File) => void>(() => undefined);

  const list = useResource(
    (signal) =>
      api.get("/api/seo/keywords", {
        query: {
          environment_id: env,
          page,
          per_page: perPage,
          sort: ((sort.desc ? "-" : "") + sort.by) as `-${Sort}`,
          status: status || undefined,
          intent: intent || undefined,
          q: q || undefined,
        },
        signal,
      }),
    [env, page, perPage, sort.by, sort.desc, status, intent, q],
  );

  const items = list.data?.data.items ?? [];
  const total = list.data?.data.total ?? 0;
  const pages = Math.max(1, Math.ceil(total / perPage));
  const allOnPage = items.length > 0 && items.every((k) => selected.has(k.id));

  function toggle(id: number) {
    const next = new Set(selected);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    setSelected(next);
  }
  function sortBy(by: Sort) {
    setSort((s) => ({ by, desc: s.by === by ? !s.desc : by !== "keyword" }));
  }
  function changed(message: string) {
    setDone(message);
    setSelected(new Set());
    list.reload();
  }

  const drop = editor
    ? {
        onDragOver: (e: DragEvent) => {
          if (!e.dataTransfer?.types.includes("Files")) return;
          e.preventDefault();
          setDragging(true);
        },
        onDragLeave: (e: DragEvent) => {
          if (e.currentTarget === e.target) setDragging(false);
        },
        onDrop: (e: DragEvent) => {
          const f = e.dataTransfer?.files[0];
          if (!f) return;
          e.preventDefault();
          setDragging(false);
          importer.current(f);
        },
      }
    : {};

  return (
    <div class={dragging ? "screen dropping" : "screen"} {...drop}>
      <Heading>Keywords</Heading>
      {editor && <Import env={env} bind={importer} onImported={() => list.reload()} />}

      <section aria-labelledby="kw-list">
        <h2 id="kw-list">Keywords of this environment</h2>
        <div class="filters" role="search" aria-label="Filter keywords">
          <Field type="search" label="Search" name="q" value={text} onValue={setText} />
          <Select label="Status" name="status" value={status} onValue={(v) => setStatus(v as Status | "")} options={[["", "Any status"], ...statuses]} />
          <Select label="Intent" name="intent" value={intent} onValue={(v) => setIntent(v as Intent | "")} options={[["", "Any intent"], ...intents]} />
          <Select label="Rows per page" name="per_page" value={String(perPage)} onValue={(v) => setPerPage(Number(v))}
            options={[["25", "25"], ["50", "50"], ["100", "100"], ["200", "200"]]} />
        </div>
        <Notice text={done} />
        {editor && selected.size > 0 && (
          <Selection env={env} ids={[...selected]} onChanged={changed} onError={() => list.reload()} />
        )}
        {list.error && <Alert>{list.error}</Alert>}
        <p class="muted small" role="status" aria-live="polite">
          {list.loading && !list.data ? "Loading keywords…" : kws(total)}
          {list.loading && list.data ? " · updating…" : ""}
        </p>
        {items.length > 0 && (
          <div class="table-wrap">
            <table aria-labelledby="kw-list" aria-busy={list.loading}>
              <thead>
                <tr>
                  {editor && (
                    <th scope="col" class="check">
                      <input type="checkbox" aria-label="Select all keywords on this page" checked={allOnPage}
                        onChange={() => setSelected(allOnPage ? new Set() : new Set(items.map((k) => k.id)))} />
                    </th>
                  )}
                  <SortHeader label="Keyword" by="keyword" sort={sort} onSort={sortBy} />
                  <th scope="col">Status</th>
                  <th scope="col">Intent</th>
                  <SortHeader label="Volume" by="search_volume" sort={sort} onSort={sortBy} numeric />
                  <SortHeader label="Difficulty" by="difficulty" sort={sort} onSort={sortBy} numeric />
                  <SortHeader label="CPC" by="cpc" sort={sort} onSort={sortBy} numeric />
                  <th scope="col">Cluster</th>
                  <th scope="col">Campaign</th>
                </tr>
              </thead>
              <tbody>
                {items.map((k) => (
                  <tr key={k.id} aria-selected={editor ? selected.has(k.id) : undefined}>
                    {editor && (
                      <td class="check">
                        <input type="checkbox" aria-label={`Select ${k.keyword}`} checked={selected.has(k.id)} onChange={() => toggle(k.id)} />
                      </td>
                    )}
                    <th scope="row">{k.keyword}</th>
                    <td>{statusWords[k.status] ?? k.status}</td>
                    <td>{k.intent.join(", ") || "—"}</td>
                    <td class="num">{volume(k)}</td>
                    <td class="num">{num(k.difficulty)}</td>
                    <td class="num">{k.cpc == null ? "—" : `${k.cpc.toFixed(2)} ${k.currency}`}</td>
                    <td>{k.cluster || "—"}</td>
                    <td>{k.campaign_id ? <Link href={envPath(env, "campaigns") + `?id=${k.campaign_id}`}>#{k.campaign_id}</Link> : "—"}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        {list.data && items.length === 0 && (
          <p>{q || status || intent ? "No keyword matches these filters." : "This environment has no keywords yet." + (editor ? " Import an export above." : "")}</p>
        )}
        <Pager label="Pages of keywords" page={page} pages={pages} onPage={setPage} />
      </section>
    </div>
  );
}

const kws = (n: number) => `${num(n)} ${n === 1 ? "keyword" : "keywords"}`;

function volume(k: Keyword): string {
  if (k.search_volume == null) return "—";
  return k.search_volume_high != null ? `${num(k.search_volume)}–${num(k.search_volume_high)}` : num(k.search_volume);
}

function SortHeader({ label, by, sort, onSort, numeric }: {
  label: string;
  by: Sort;
  sort: { by: Sort; desc: boolean };
  onSort: (by: Sort) => void;
  numeric?: boolean;
}) {
  const active = sort.by === by;
  return (
    <th scope="col" class={numeric ? "num" : undefined} aria-sort={active ? (sort.desc ? "descending" : "ascending") : undefined}>
      <button type="button" class="sort" onClick={() => onSort(by)}>
        {label}
        <span aria-hidden="true">{active ? (sort.desc ? " ↓" : " ↑") : ""}</span>
      </button>
    </th>
  );
}

// Import uploads an export (chosen, or dropped anywhere on the screen) and
// shows the server's report.
function Import({ env, bind, onImported }: { env: number; bind: { current: (f: File) => void }; onImported: () => void }) {
  const u = useUpload("/api/seo/keywords/import", { fields: { environment_id: String(env) }, onSent: onImported });
  bind.current = u.send;

  const report = u.last;
  const r = report?.answer.data;
  return (
    <section aria-labelledby="kw-import" class="card import">
      <h2 id="kw-import">Import an export</h2>
      <FileUpload u={u} label="Keyword export (CSV)" accept=".csv,.tsv,.txt,text/csv,text/tab-separated-values"
        hint="A Google Keyword Planner, Ahrefs or Semrush export. Choose the file, or drop it anywhere on this screen. Keywords already here get the new metrics; their status and campaign stay." />
      {r && report && (
        <div role="status" aria-labelledby="kw-report" class="report">
          <h3 id="kw-report">Imported {report.name}</h3>
          <p>
            {formatWords[r.format]} export, {num(r.rows)} rows: {num(r.imported)} imported, {num(r.updated)} updated, {num(r.rejected)} rejected
            {r.duplicates ? `, ${num(r.duplicates)} repeated rows merged` : ""}.
          </p>
          {r.rejections.length > 0 && (
            <table>
              <caption>Rows left out</caption>
              <Thead cols={["Line", "Keyword", "Reason"]} />
              <tbody>
                {r.rejections.map((x, i) => (
                  <tr key={i}>
                    <td class="num">{x.line}</td>
                    <td>{x.keyword || "—"}</td>
                    <td>{x.reason}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          {r.more_rejections > 0 && <p class="muted">And {num(r.more_rejections)} more rows left out.</p>}
        </div>
      )}
    </section>
  );
}

type Pending = "delete" | "campaign" | "add" | null;

// Selection holds the actions on the selected rows.
function Selection({ env, ids, onChanged, onError }: { env: number; ids: number[]; onChanged: (message: string) => void; onError: () => void }) {
  const [status, setStatus] = useState<Status>("planned");
  const [pending, setPending] = useState<Pending>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const n = ids.length;
  const some = kws(n);

  async function run(p: Promise<string>) {
    setBusy(true);
    setError(null);
    try {
      onChanged(await p);
      setPending(null);
    } catch (e) {
      setError(errorText(e));
      onError();
    } finally {
      setBusy(false);
    }
  }
  const setAll = () =>
    run(api.post("/api/seo/keywords/bulk-update", { body: { ids, status } }).then((r) => `${statusWords[status]}: ${kws(r.data.changed)} changed.`));
  const remove = () => run(api.post("/api/seo/keywords/bulk-delete", { body: { ids } }).then((r) => `Deleted ${kws(r.data.changed)}.`));

  return (
    <div class="selection card" role="group" aria-label="Selected keywords">
      <p>
        <strong>{some} selected</strong>
      </p>
      <div class="row">
        <Select label="New status" name="new_status" value={status} onValue={(v) => setStatus(v as Status)} options={statuses} />
        <button type="button" onClick={setAll} disabled={busy}>
          Set status
        </button>
        <button type="button" onClick={() => setPending("delete")} disabled={busy} aria-expanded={pending === "delete"}>
          Delete…
        </button>
        <button type="button" onClick={() => setPending("campaign")} disabled={busy} aria-expanded={pending === "campaign"}>
          Make a campaign…
        </button>
        <button type="button" onClick={() => setPending("add")} disabled={busy} aria-expanded={pending === "add"}>
          Add to campaign…
        </button>
      </div>
      {error && <Alert>{error}</Alert>}
      {pending === "delete" && (
        <Confirm label="Confirm deletion" question={<p>Delete {some}? This cannot be undone.</p>} action={`Delete ${some}`} busy={busy}
          onConfirm={remove} onCancel={() => setPending(null)} />
      )}
      {pending === "campaign" && <NewCampaign env={env} ids={ids} onCreated={(m) => { setPending(null); onChanged(m); }} onCancel={() => setPending(null)} />}
      {pending === "add" && <AddToCampaign env={env} ids={ids} onAdded={(m) => { setPending(null); onChanged(m); }} onCancel={() => setPending(null)} />}
    </div>
  );
}

// AddToCampaign appends the selected keywords to an existing campaign,
// chosen among the campaigns whose name matches what is typed (the server
// filters; the first 50 by name are offered, and the count says so).
function AddToCampaign({ env, ids, onAdded, onCancel }: { env: number; ids: number[]; onAdded: (message: string) => void; onCancel: () => void }) {
  const [text, setText] = useState("");
  const q = useDebounced(text.trim());
  const found = useResource(
    (signal) => api.get("/api/seo/campaigns", { query: { environment_id: env, q: q || undefined, sort: "name", per_page: 50 }, signal }),
    [env, q],
  );
  const [chosen, setChosen] = useState("");
  const items = found.data?.data.items ?? [];
  const total = found.data?.data.total ?? 0;
  const id = items.some((c) => String(c.id) === chosen) ? chosen : String(items[0]?.id ?? "");
  const { errors, busy, submit } = useSubmit(["ids"], async () => {
    const c = items.find((x) => String(x.id) === id);
    if (!c) return;
    const r = await api.post("/api/seo/campaigns/{id}/keywords", { path: { id: c.id }, body: { ids } });
    const n = r.data.changed;
    onAdded(`${kws(n)} added to “${c.name}”${n < ids.length ? ` (${num(ids.length - n)} already in it)` : ""}.`);
  });
  return (
    <form onSubmit={submit} aria-label="Add the selected keywords to a campaign" noValidate>
      <div class="row">
        <Field type="search" label="Find a campaign" name="campaign_q" value={text} onValue={setText} />
        <Select label="Campaign" name="campaign_id" value={id} onValue={setChosen}
          options={items.map((c) => [String(c.id), c.name] as const)} />
      </div>
      <p class="muted small" role="status">
        {found.loading && !found.data
          ? "Loading campaigns…"
          : total === 0
            ? q ? "No campaign matches this name." : "This environment has no campaign yet: make one instead."
            : total > items.length
              ? `The first ${num(items.length)} of ${num(total)} campaigns by name: type to narrow.`
              : `${num(total)} ${total === 1 ? "campaign" : "campaigns"}.`}
      </p>
      {found.error && <Alert>{found.error}</Alert>}
      {errors.fields.ids && <Alert>{sentence(errors.fields.ids)}</Alert>}
      <FormActions error={errors.form} disabled={busy || !id} onCancel={onCancel}>
        Add {kws(ids.length)}
      </FormActions>
    </form>
  );
}

function NewCampaign({ env, ids, onCreated, onCancel }: { env: number; ids: number[]; onCreated: (message: string) => void; onCancel: () => void }) {
  const [name, setName] = useState("");
  const [target, setTarget] = useState<"wordpress" | "astro">("wordpress");
  const { errors, busy, submit } = useSubmit(["name", "target", "keyword_ids"], async () => {
    const r = await api.post("/api/seo/campaigns", { body: { environment_id: env, name, target, keyword_ids: ids } });
    onCreated(`Campaign “${r.data.name}” created with ${kws(ids.length)}.`);
  });
  return (
    <form onSubmit={submit} aria-label="New campaign of the selected keywords" noValidate>
      <Field label="Campaign name" name="name" value={name} onValue={setName} error={errors.fields.name} required />
      <Select label="Posts go to" name="target" value={target} onValue={(v) => setTarget(v as "wordpress" | "astro")}
        options={[["wordpress", "WordPress"], ["astro", "Astro"]]} error={errors.fields.target} />
      {errors.fields.keyword_ids && <Alert>{sentence(errors.fields.keyword_ids)}</Alert>}
      <FormActions error={errors.form} disabled={busy} onCancel={onCancel}>
        Create campaign
      </FormActions>
    </form>
  );
}
