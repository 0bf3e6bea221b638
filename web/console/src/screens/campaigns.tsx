// Campaigns and strategies: the campaigns with their progress, created and
// edited by editors (archetype, agent, target, cadence, status) with their
// keywords in order; strategies built on the server (polled until ready),
// their clusters (pillar first) renamed, and a cluster or a whole strategy
// turned into a campaign.
import { useEffect, useState } from "preact/hooks";
import { api, type Schemas } from "../api/client";
import type { ScreenProps } from "../lazy";
import { envPath } from "../router";
import { sentence } from "../session";
import { Alert, canEdit, errorText, Field, FormActions, Heading, Link, NewButton, Notice, num, Pager, Select, Table, useResource, useSubmit } from "../ui";

type Campaign = Schemas["campaignResponse"];
type Strategy = Schemas["strategyDetailResponse"];
type Cluster = Schemas["strategyClusterResponse"];
type Target = "wordpress" | "astro";
type CStatus = Campaign["status"];

const statusWords: Record<CStatus, string> = { draft: "Draft", active: "Active", paused: "Paused", completed: "Completed" };
const targets = [["wordpress", "WordPress"], ["astro", "Astro"]] as const;
// Lists page on the server: PER_PAGE campaigns or strategies a page, and a
// campaign's keywords KW_PAGE a page (all of them on one page can be
// reordered, as the order is sent whole).
const PER_PAGE = 50;
const KW_PAGE = 200;
const pageCount = (total: number, per: number) => Math.max(1, Math.ceil(total / per));
const count = (n: number, one: string, many: string) => `${num(n)} ${n === 1 ? one : many}`;

export function Campaigns({ env }: ScreenProps) {
  const editor = canEdit();
  const [page, setPage] = useState(1);
  const list = useResource(
    (signal) => api.get("/api/seo/campaigns", { query: { environment_id: env, page, per_page: PER_PAGE, sort: "-created_at" }, signal }),
    [env, page],
  );
  const [open, setOpen] = useState<number | null>(Number(new URLSearchParams(location.search).get("id")) || null);
  const [creating, setCreating] = useState(false);
  const [notice, setNotice] = useState<string | null>(null);
  const items = list.data?.data.items ?? [];
  const total = list.data?.data.total ?? 0;
  // The open campaign is read on its own when it is not on this page (a
  // link from the Keywords screen names any of them).
  const onPage = items.find((c) => c.id === open);
  const elsewhere = !!list.data && !!open && !onPage;
  const single = useResource(
    (signal) => (elsewhere && open ? api.get("/api/seo/campaigns/{id}", { path: { id: open }, signal }).then((r) => r.data) : Promise.resolve(null)),
    [elsewhere, open, list.data],
  );
  const chosen = onPage ?? (elsewhere ? single.data ?? undefined : undefined);
  function made(message: string) {
    setNotice(message);
    list.reload();
  }
  return (
    <>
      <Heading>Campaigns</Heading>
      <Notice text={notice} />
      <section aria-labelledby="cmp-list">
        <h2 id="cmp-list">Campaigns of this environment</h2>
        {list.error && <Alert>{list.error}</Alert>}
        {list.data && total === 0 && <p>No campaign yet. Make one here, from selected keywords, or from a strategy's cluster.</p>}
        {total > 0 && (
          <p class="muted small" role="status">
            {count(total, "campaign", "campaigns")}
            {list.loading ? " · updating…" : ""}
          </p>
        )}
        {items.length > 0 && (
          <Table aria-labelledby="cmp-list" cols={["Name", "Status", "Target", "Posts a day", "Progress"]}>
            {items.map((c) => (
              <tr key={c.id}>
                <th scope="row">
                  <button type="button" class="link" onClick={() => setOpen(c.id)} aria-expanded={open === c.id}>
                    {c.name}
                  </button>
                </th>
                <td>{statusWords[c.status]}</td>
                <td>{c.target === "astro" ? "Astro" : "WordPress"}</td>
                <td class="num">{c.cadence}</td>
                <td>
                  <Progress c={c} />
                </td>
              </tr>
            ))}
          </Table>
        )}
        <Pager label="Pages of campaigns" page={page} pages={pageCount(total, PER_PAGE)} onPage={setPage} />
        <NewButton shown={editor && !creating} onClick={() => setCreating(true)}>New campaign</NewButton>
        {creating && (
          <CampaignForm env={env} onDone={(c) => { setCreating(false); if (c) { made(`Campaign “${c.name}” created.`); setOpen(c.id); } }} />
        )}
        {chosen && <CampaignDetail key={chosen.id} env={env} c={chosen} editor={editor} onChanged={made} onClose={() => setOpen(null)} />}
      </section>
      <Strategies env={env} editor={editor} onCampaign={made} />
    </>
  );
}

function Progress({ c }: { c: Campaign }) {
  const p = c.progress;
  return (
    <span class="progress-cell">
      <progress max={Math.max(1, p.total ?? 0)} value={p.done ?? 0} aria-label={`Progress of ${c.name}`} />{" "}
      <span class="small">
        {num(p.done ?? 0)} of {num(p.total ?? 0)} published
      </span>
    </span>
  );
}

// CampaignForm creates a campaign, or with c edits it.
function CampaignForm({ env, c, onDone }: { env: number; c?: Campaign; onDone: (c: Campaign | null) => void }) {
  const archetypes = useResource((signal) => api.get("/api/cie/archetypes", { query: { environment_id: env, per_page: 200 }, signal }), [env]);
  const agents = useResource((signal) => api.get("/api/agents", { query: { environment_id: env, per_page: 200 }, signal }), [env]);
  const [f, setF] = useState({
    name: c?.name ?? "",
    description: c?.description ?? "",
    target: (c?.target ?? "wordpress") as Target,
    archetype: c?.archetype_id ? String(c.archetype_id) : "",
    agent: c?.agent_id ? String(c.agent_id) : "",
    cadence: String(c?.cadence ?? 1),
    post_status: (c?.post_status ?? "draft") as "draft" | "publish",
    status: (c?.status ?? "draft") as CStatus,
  });
  const set = (patch: Partial<typeof f>) => setF({ ...f, ...patch });
  const { errors, busy, submit } = useSubmit(["name", "description", "target", "archetype_id", "agent_id", "cadence", "post_status", "status"], async () => {
    const common = { name: f.name, description: f.description, target: f.target, cadence: Number(f.cadence), post_status: f.post_status, status: f.status };
    const r = c
      ? await api.put("/api/seo/campaigns/{id}", { path: { id: c.id }, body: { ...common, archetype_id: Number(f.archetype || 0), agent_id: Number(f.agent || 0) } })
      : await api.post("/api/seo/campaigns", {
          body: { ...common, environment_id: env, archetype_id: f.archetype ? Number(f.archetype) : null, agent_id: f.agent ? Number(f.agent) : null },
        });
    onDone(r.data);
  });
  const fe = errors.fields;
  return (
    <form class="card" onSubmit={submit} aria-label={c ? `Edit ${c.name}` : "New campaign"} noValidate>
      <fieldset disabled={busy}>
        <legend>{c ? "Edit the campaign" : "New campaign"}</legend>
        <Field label="Name" name="name" value={f.name} onValue={(name) => set({ name })} error={fe.name} />
        <Field label="Description" name="description" value={f.description} onValue={(description) => set({ description })} error={fe.description} />
        <div class="row">
          <Select label="Posts go to" name="target" value={f.target} onValue={(v) => set({ target: v as Target })} options={targets} error={fe.target} />
          <Select label="Archetype" name="archetype_id" value={f.archetype} onValue={(archetype) => set({ archetype })} error={fe.archetype_id}
            options={[["", "The environment's default"], ...(archetypes.data?.data.items ?? []).map((a) => [String(a.id), a.name] as const)]} />
          <Select label="Agent" name="agent_id" value={f.agent} onValue={(agent) => set({ agent })} error={fe.agent_id}
            options={[["", "The environment's default"], ...(agents.data?.data.items ?? []).map((a) => [String(a.id), a.name] as const)]} />
        </div>
        <div class="row">
          <Field type="number" label="Posts a day" name="cadence" value={f.cadence} onValue={(cadence) => set({ cadence })} error={fe.cadence} />
          <Select label="New posts are" name="post_status" value={f.post_status} onValue={(v) => set({ post_status: v as "draft" | "publish" })} error={fe.post_status}
            options={[["draft", "Drafts"], ["publish", "Published"]]} />
          <Select label="Status" name="status" value={f.status} onValue={(v) => set({ status: v as CStatus })} error={fe.status} options={Object.entries(statusWords)} />
        </div>
      </fieldset>
      <FormActions error={errors.form} disabled={busy} onCancel={() => onDone(null)}>
        {c ? "Save the campaign" : "Create campaign"}
      </FormActions>
    </form>
  );
}

function CampaignDetail({ env, c, editor, onChanged, onClose }: { env: number; c: Campaign; editor: boolean; onChanged: (m: string) => void; onClose: () => void }) {
  const [page, setPage] = useState(1);
  const kws = useResource(
    (signal) => api.get("/api/seo/campaigns/{id}/keywords", { path: { id: c.id }, query: { page, per_page: KW_PAGE }, signal }),
    [c.id, c.updated_at, page],
  );
  const total = kws.data?.data.total ?? 0;
  const pages = pageCount(total, KW_PAGE);
  // Taking out the last keywords of the last page goes back a page.
  useEffect(() => {
    if (kws.data && page > pages) setPage(pages);
  }, [kws.data, page, pages]);
  const [editing, setEditing] = useState(false);
  const [error, setError] = useState<string | null>(null);
  async function remove(id: number, keyword: string) {
    setError(null);
    try {
      await api.post("/api/seo/campaigns/{id}/keywords/remove", { path: { id: c.id }, body: { ids: [id] } });
      kws.reload();
      onChanged(`“${keyword}” taken out of ${c.name}.`);
    } catch (e) {
      setError(errorText(e));
    }
  }
  const all = kws.data?.data.items ?? [];
  // The order as last moved here, shown at once while the server saves it.
  const [order, setOrder] = useState<number[] | null>(null);
  const [focus, setFocus] = useState<string | null>(null);
  useEffect(() => setOrder(null), [kws.data]);
  useEffect(() => {
    if (focus) document.getElementById(focus)?.focus();
  }, [focus, order]);
  const items = order ? order.map((id) => all.find((k) => k.id === id)).filter((k): k is (typeof all)[number] => !!k) : all;
  const movable = editor && !!kws.data && total === all.length && all.length > 1;
  async function move(at: number, by: -1 | 1) {
    const ids = items.map((k) => k.id);
    const [k] = items.slice(at, at + 1);
    if (!k || at + by < 0 || at + by >= ids.length) return;
    ids.splice(at, 1);
    ids.splice(at + by, 0, k.id);
    setError(null);
    setOrder(ids);
    // Keep the focus on the moved keyword's button (the other one when it reached an end).
    const to = at + by;
    const dir = to === 0 ? "down" : to === ids.length - 1 ? "up" : by < 0 ? "up" : "down";
    setFocus(`kw-${dir}-${k.id}`);
    try {
      await api.put("/api/seo/campaigns/{id}/keywords", { path: { id: c.id }, body: { ids } });
      onChanged(`“${k.keyword}” moved ${by < 0 ? "up" : "down"} to place ${at + by + 1}.`);
    } catch (e) {
      setOrder(null);
      setError(errorText(e));
    }
  }
  return (
    <section class="card detail" aria-labelledby="cmp-detail">
      <h3 id="cmp-detail">{c.name}</h3>
      {c.description && <p>{c.description}</p>}
      <Progress c={c} />
      {editing ? (
        <CampaignForm env={env} c={c} onDone={(x) => { setEditing(false); if (x) onChanged(`Campaign “${x.name}” saved.`); }} />
      ) : (
        editor && (
          <div class="actions">
            <button type="button" onClick={() => setEditing(true)}>
              Edit {c.name}
            </button>
            <button type="button" onClick={onClose}>
              Close
            </button>
          </div>
        )
      )}
      <h4>Keywords, in the order they are written</h4>
      {error && <Alert>{error}</Alert>}
      {kws.data && total === 0 && (
        <p class="muted">
          No keyword yet: select some on the <Link href={envPath(env, "keywords")}>Keywords screen</Link> and add them to {c.name}.
        </p>
      )}
      {total > 0 && (
        <p class="muted small" role="status">
          {pages > 1
            ? `Keywords ${num((page - 1) * KW_PAGE + 1)} to ${num((page - 1) * KW_PAGE + all.length)} of ${num(total)}` +
              (editor ? `; the order can be changed when the campaign has at most ${num(KW_PAGE)}.` : ".")
            : count(total, "keyword", "keywords")}
        </p>
      )}
      <ol class="kw-order" start={(page - 1) * KW_PAGE + 1}>
        {items.map((k, i) => (
          <li key={k.id}>
            {k.keyword} <span class="muted small">({k.status.replace("_", " ")})</span>
            {editor && (
              <>
                {movable && (
                  <>
                    {" "}
                    <button type="button" class="link" id={`kw-up-${k.id}`} disabled={i === 0} onClick={() => void move(i, -1)}>
                      Move up<span class="visually-hidden"> {k.keyword}</span>
                    </button>{" "}
                    <button type="button" class="link" id={`kw-down-${k.id}`} disabled={i === items.length - 1} onClick={() => void move(i, 1)}>
                      Move down<span class="visually-hidden"> {k.keyword}</span>
                    </button>
                  </>
                )}
                {" "}
                <button type="button" class="link" onClick={() => void remove(k.id, k.keyword)}>
                  Take out<span class="visually-hidden"> {k.keyword}</span>
                </button>
              </>
            )}
          </li>
        ))}
      </ol>
      <Pager label={`Pages of the keywords of ${c.name}`} page={Math.min(page, pages)} pages={pages} onPage={setPage} />
    </section>
  );
}

const strategyWords: Record<string, string> = { queued: "Queued", running: "Being built", ready: "Ready", failed: "Failed", cancelled: "Cancelled" };

function Strategies({ env, editor, onCampaign }: { env: number; editor: boolean; onCampaign: (m: string) => void }) {
  const [page, setPage] = useState(1);
  const list = useResource(
    (signal) => api.get("/api/seo/strategies", { query: { environment_id: env, page, per_page: PER_PAGE, sort: "-created_at" }, signal }),
    [env, page],
  );
  const total = list.data?.data.total ?? 0;
  const [open, setOpen] = useState<number | null>(Number(new URLSearchParams(location.search).get("strategy")) || null);
  const items = list.data?.data.items ?? [];
  const building = items.some((s) => s.status === "queued" || s.status === "running");
  // A build runs on the server: ask again every 2 s while one is under way.
  const { reload } = list;
  useEffect(() => {
    if (!building) return;
    const t = window.setInterval(reload, 2000);
    return () => window.clearInterval(t);
  }, [building, reload]);
  return (
    <section aria-labelledby="str-list">
      <h2 id="str-list">Strategies</h2>
      {list.error && <Alert>{list.error}</Alert>}
      {list.data && items.length === 0 && <p>No strategy yet. A strategy groups the environment's keywords into clusters, each around a pillar.</p>}
      {items.length > 0 && (
        <Table aria-labelledby="str-list" cols={["Name", "State", "Clusters", "Keywords"]}>
          {items.map((s) => (
            <tr key={s.id}>
              <th scope="row">
                {s.status === "ready" ? (
                  <button type="button" class="link" onClick={() => setOpen(s.id)} aria-expanded={open === s.id}>
                    {s.name}
                  </button>
                ) : (
                  s.name
                )}
              </th>
              <td>
                {strategyWords[s.status] ?? s.status}
                {s.error && <span class="muted small"> — {s.error}</span>}
              </td>
              <td class="num">{num(s.cluster_count)}</td>
              <td class="num">{num(s.keyword_count)}</td>
            </tr>
          ))}
        </Table>
      )}
      {total > PER_PAGE && (
        <p class="muted small" role="status">
          {count(total, "strategy", "strategies")}
        </p>
      )}
      <Pager label="Pages of strategies" page={page} pages={pageCount(total, PER_PAGE)} onPage={setPage} />
      {editor && <NewStrategy env={env} onBuilt={() => { setPage(1); list.reload(); }} />}
      {open && <StrategyDetail key={open} id={open} editor={editor} env={env} onCampaign={onCampaign} />}
    </section>
  );
}

function NewStrategy({ env, onBuilt }: { env: number; onBuilt: () => void }) {
  const [name, setName] = useState("");
  const [method, setMethod] = useState<"auto" | "serp" | "lexical">("auto");
  const { errors, busy, submit } = useSubmit(["name", "method"], async () => {
    await api.post("/api/seo/strategies", { body: { environment_id: env, name, method } });
    setName("");
    onBuilt();
  });
  return (
    <form class="card" onSubmit={submit} aria-label="Build a strategy" noValidate>
      <div class="row">
        <Field label="Strategy name" name="name" value={name} onValue={setName} error={errors.fields.name} />
        <Select label="Grouping" name="method" value={method} onValue={(v) => setMethod(v as typeof method)} error={errors.fields.method}
          options={[["auto", "Search results when available, else words"], ["serp", "Search results shared"], ["lexical", "Words in common"]]} />
        <button type="submit" disabled={busy}>
          Build a strategy
        </button>
      </div>
      {errors.form && <Alert>{sentence(errors.form)}</Alert>}
    </form>
  );
}

function StrategyDetail({ id, env, editor, onCampaign }: { id: number; env: number; editor: boolean; onCampaign: (m: string) => void }) {
  const s = useResource((signal) => api.get("/api/seo/strategies/{id}", { path: { id }, signal }), [id]);
  const [names, setNames] = useState<Record<number, string>>({});
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const st: Strategy | undefined = s.data?.data;
  if (s.error) return <Alert>{s.error}</Alert>;
  if (!st) return <p role="status">Loading the strategy…</p>;
  const renamed = st.clusters.some((c) => names[c.id] !== undefined && names[c.id] !== c.name);

  // put sends the clusters as they are on screen, with keyword kw moved
  // to cluster to when given (a cluster left empty goes; a moved pillar
  // leaves its cluster's pillar to the pillar rule).
  async function put(message: string, move?: { kw: number; to: number }) {
    if (!st) return;
    setBusy(true);
    setError(null);
    const moved = st.clusters.find((c) => c.keywords.some((k) => k.id === move?.kw))?.keywords.find((k) => k.id === move?.kw);
    const clusters = st.clusters
      .map((c) => {
        let ids = c.keywords.map((k) => k.id);
        if (move && moved) {
          ids = ids.filter((x) => x !== move.kw);
          if (c.id === move.to) ids.push(move.kw);
        }
        const pillar = c.pillar_keyword_id !== null && ids.includes(c.pillar_keyword_id) ? c.pillar_keyword_id : null;
        return { id: c.id, name: (names[c.id] ?? c.name).trim(), keyword_ids: ids, pillar_keyword_id: pillar };
      })
      .filter((c) => c.keyword_ids.length > 0);
    try {
      const r = await api.put("/api/seo/strategies/{id}", { path: { id }, body: { clusters } });
      s.set({ ...s.data!, data: r.data });
      setNames({});
      onCampaign(message);
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  }
  const saveNames = () => put("Cluster names saved.");
  return (
    <section class="card detail" aria-labelledby="str-detail">
      <h3 id="str-detail">{st.name}</h3>
      <p class="muted small">
        {st.used_method === "serp" ? "Grouped by shared search results" : "Grouped by words in common"}
        {st.notes && ` — ${st.notes}`}
      </p>
      {error && <Alert>{error}</Alert>}
      <div class="grid">
        {st.clusters.map((c) => (
          <ClusterCard key={c.id} c={c} env={env} editor={editor} name={names[c.id] ?? c.name} onName={(v) => setNames({ ...names, [c.id]: v })} onCampaign={onCampaign}
            others={st.clusters} busy={busy} onMove={(kw, to, word) => void put(`“${word}” moved.`, { kw, to })} />
        ))}
      </div>
      {editor && (
        <div class="actions">
          <button type="button" onClick={() => void saveNames()} disabled={busy || !renamed}>
            Save cluster names
          </button>
        </div>
      )}
    </section>
  );
}

function ClusterCard({ c, env, editor, name, onName, onCampaign, others, busy, onMove }: {
  c: Cluster;
  others: Cluster[];
  busy: boolean;
  onMove: (kw: number, to: number, word: string) => void;
  env: number;
  editor: boolean;
  name: string;
  onName: (v: string) => void;
  onCampaign: (m: string) => void;
}) {
  const [making, setMaking] = useState(false);
  const [target, setTarget] = useState<Target>("wordpress");
  const [error, setError] = useState<string | null>(null);
  const free = c.keywords.filter((k) => !k.campaign_id);
  async function make() {
    setError(null);
    try {
      const r = await api.post("/api/seo/campaigns", { body: { environment_id: env, name: c.name, target, keyword_ids: free.map((k) => k.id) } });
      setMaking(false);
      onCampaign(`Campaign “${r.data.name}” created with ${free.length} ${free.length === 1 ? "keyword" : "keywords"}, the pillar first.`);
    } catch (e) {
      setError(errorText(e));
    }
  }
  return (
    <article class="card cluster" aria-label={`Cluster ${c.name}`}>
      {editor ? <Field label={`Name of cluster ${c.position}`} name={`cluster-${c.id}`} value={name} onValue={onName} /> : <h4>{c.name}</h4>}
      <p class="muted small">{num(c.total_volume)} searches a month</p>
      <ul class="cluster-kws">
        {c.keywords.map((k) => (
          <li key={k.id}>
            {k.id === c.pillar_keyword_id ? <strong>{k.keyword} (pillar)</strong> : <span>{k.keyword}</span>}
            {k.campaign_id ? <span class="muted small"> · in a campaign</span> : null}
            {editor && others.length > 1 && (
              <select class="move" aria-label={`Cluster of ${k.keyword}`} value={String(c.id)} disabled={busy}
                onChange={(e) => onMove(k.id, Number(e.currentTarget.value), k.keyword)}>
                {others.map((o) => (
                  <option key={o.id} value={String(o.id)}>
                    {o.id === c.id ? `In ${o.name}` : `Move to ${o.name}`}
                  </option>
                ))}
              </select>
            )}
          </li>
        ))}
      </ul>
      {editor && free.length > 0 && !making && (
        <button type="button" onClick={() => setMaking(true)}>
          Make a campaign of {c.name}
        </button>
      )}
      {making && (
        <div class="row">
          <Select label="Posts go to" name="target" value={target} onValue={(v) => setTarget(v as Target)} options={targets} />
          <button type="button" class="primary" onClick={() => void make()}>
            Create campaign “{c.name}”
          </button>
          <button type="button" onClick={() => setMaking(false)}>
            Cancel
          </button>
        </div>
      )}
      {error && <Alert>{error}</Alert>}
    </article>
  );
}
