// Posts: for each target (WordPress, Astro) a list with each post's state;
// opening one edits its Markdown beside a live preview (the preview builds
// elements, never HTML), its categories and tags, and publishes,
// unpublishes or syncs it. When a sync finds that both sides changed, the
// server's words and both versions are shown side by side, and the user
// keeps one.
import { useEffect, useState } from "preact/hooks";
import { api, ApiError, type Schemas } from "../api/client";
import type { ScreenProps } from "../lazy";
import { Html, Markdown } from "../markdown";
import { envPath } from "../router";
import { sentence } from "../session";
import {
  Alert, canEdit, Field, formErrors, Heading, Link, noErrors, Pager, Select, TextArea, Thead, useDebounced, useResource, When, type FormErrors,
} from "../ui";
import { AstroImport, WordPressImport } from "./posts-import";

type WP = Schemas["wpPostResponse"];
type Astro = Schemas["astroPostResponse"];
type Kind = "wordpress" | "astro";
type Term = { id: number; name: string };
type TermKind = "categories" | "tags";

const syncWords: Record<string, string> = { local: "Not on the site yet", synced: "In sync", dirty: "Changed here", failed: "Failed" };
const wpStatusWords: Record<string, string> = { draft: "Draft", pending: "Pending review", private: "Private", future: "Scheduled", publish: "Published" };

// The fields both kinds share, as the editor holds them.
type Draft = { title: string; slug: string; body: string; summary: string; categories: number[]; tags: number[] };

function draftOf(kind: Kind, p: NonNullable<WP> | NonNullable<Astro>): Draft {
  if (kind === "wordpress") {
    const w = p as NonNullable<WP>;
    return { title: w.title, slug: w.slug, body: w.content, summary: w.excerpt, categories: w.category_ids, tags: w.tag_ids };
  }
  const a = p as NonNullable<Astro>;
  return { title: a.title, slug: a.slug, body: a.body, summary: a.description, categories: a.categories.map((c) => c.id), tags: a.tags.map((t) => t.id) };
}

export function Posts({ env }: ScreenProps) {
  const params = new URLSearchParams(location.search);
  const [kind, setKind] = useState<Kind>(params.get("target") === "astro" ? "astro" : "wordpress");
  const [open, setOpen] = useState<number | null>(Number(params.get("post")) || null);
  return (
    <>
      <Heading>Posts</Heading>
      {open ? (
        <Editor key={`${kind}/${open}`} env={env} kind={kind} id={open} onClose={() => setOpen(null)} />
      ) : (
        <>
          <div class="row">
            <Select label="Target" name="target" value={kind} onValue={(v) => setKind(v as Kind)} options={[["wordpress", "WordPress"], ["astro", "Astro"]]} />
          </div>
          <PostList key={kind} env={env} kind={kind} onOpen={setOpen} />
        </>
      )}
    </>
  );
}

function PostList({ env, kind, onOpen }: { env: number; kind: Kind; onOpen: (id: number) => void }) {
  const [text, setText] = useState("");
  const q = useDebounced(text.trim()) || undefined;
  const [sync, setSync] = useState("");
  const [page, setPage] = useState(1);
  const [imports, setImports] = useState(0);
  useEffect(() => setPage(1), [q, sync]);
  type Page = { items: (NonNullable<WP> | NonNullable<Astro>)[]; total: number; per_page: number };
  const list = useResource<Page>(
    async (signal): Promise<Page> => {
      const r =
        kind === "wordpress"
          ? (await api.get("/api/wordpress-posts", { query: { environment_id: env, page, q, sync_status: (sync || undefined) as "local" | undefined }, signal })).data
          : (await api.get("/api/astro-posts", { query: { environment_id: env, page, q }, signal })).data;
      return { items: (r.items as (WP | Astro)[]).filter((p): p is NonNullable<WP> | NonNullable<Astro> => !!p), total: r.total, per_page: r.per_page };
    },
    [env, kind, page, q, sync, imports],
  );
  const d = list.data;
  const items = d?.items ?? [];
  const pages = d ? Math.max(1, Math.ceil(d.total / d.per_page)) : 1;
  const label = kind === "wordpress" ? "WordPress posts" : "Astro posts";
  return (
    <section aria-labelledby="posts-list">
      <h2 id="posts-list">{label}</h2>
      {canEdit() && (kind === "wordpress"
        ? <WordPressImport env={env} onDone={() => setImports((n) => n + 1)} />
        : <AstroImport env={env} onDone={() => setImports((n) => n + 1)} />)}
      <div class="filters" role="search" aria-label={`Filter ${label}`}>
        <Field type="search" label="Search titles" name="q" value={text} onValue={setText} />
        {kind === "wordpress" && (
          <Select label="Sync state" name="sync_status" value={sync} onValue={setSync} options={[["", "Any"], ...Object.entries(syncWords)]} />
        )}
      </div>
      {list.error && <Alert>{list.error}</Alert>}
      {d && items.length === 0 && (
        <p>
          {q || sync ? "No post matches." : <>No post here yet. <Link href={envPath(env, "write")}>Write one on the Write screen</Link>{canEdit() ? (kind === "wordpress" ? ", or import the site's posts" : ", or import the folder's files") : ""}; articles saved by the autopilot appear here too.</>}
        </p>
      )}
      {items.length > 0 && (
        <div class="table-wrap">
          <table aria-labelledby="posts-list">
            <Thead cols={kind === "wordpress" ? ["Title", "Status", "Sync", "Updated"] : ["Title", "State", "File", "Updated"]} />
            <tbody>
              {items.map((p) => (
                <tr key={p.id}>
                  <th scope="row">
                    <button type="button" class="link" onClick={() => onOpen(p.id)}>
                      {p.title || "(untitled)"}
                    </button>
                  </th>
                  {"sync_status" in p ? (
                    <>
                      <td>{wpStatusWords[p.status] ?? p.status}</td>
                      <td>
                        {syncWords[p.sync_status] ?? p.sync_status}
                        {p.last_error && <span class="muted small"> — {p.last_error}</span>}
                      </td>
                    </>
                  ) : (
                    <>
                      <td>{p.draft ? "Draft" : "Published"}</td>
                      <td>{p.file}</td>
                    </>
                  )}
                  <td>
                    <When at={p.updated_at} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <Pager label={`Pages of ${label}`} page={page} pages={pages} onPage={setPage} />
    </section>
  );
}

const same = (a: Draft, b: Draft) => JSON.stringify(a) === JSON.stringify(b);

function Editor({ env, kind, id, onClose }: { env: number; kind: Kind; id: number; onClose: () => void }) {
  const editor = canEdit();
  const post = useResource<NonNullable<WP> | NonNullable<Astro>>(
    async (signal) => {
      const r = kind === "wordpress" ? await api.get("/api/wordpress-posts/{id}", { path: { id }, signal }) : await api.get("/api/astro-posts/{id}", { path: { id }, signal });
      if (!r.data) throw new ApiError(404, "this post no longer exists");
      return r.data;
    },
    [kind, id],
  );
  const [draft, setDraft] = useState<Draft | null>(null);
  const [errors, setErrors] = useState<FormErrors>(noErrors);
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState<string | null>(null);
  const [conflict, setConflict] = useState<string | null>(null);
  const p = post.data;
  const saved = p ? draftOf(kind, p) : null;
  const d = draft ?? saved;
  const changed = !!(d && saved && !same(d, saved));
  const preview = useDebounced(d?.body ?? "", 150);

  const set = (patch: Partial<Draft>) => d && setDraft({ ...d, ...patch });

  // act runs an action that answers the post, then shows it as the server has it.
  async function act(what: string, fn: () => Promise<{ data: WP | Astro }>) {
    setBusy(true);
    setErrors(noErrors);
    setDone(null);
    try {
      const r = await fn();
      if (r.data) post.set(r.data);
      setDraft(null);
      setConflict(null);
      setDone(what);
    } catch (e) {
      if (e instanceof ApiError && e.status === 409 && /both sides changed/.test(e.detail)) setConflict(e.detail);
      else setErrors(formErrors(e, ["title", "slug", "content", "body", "excerpt", "description", "category_ids", "tag_ids"]));
    } finally {
      setBusy(false);
    }
  }

  function save() {
    if (!d) return;
    if (kind === "wordpress")
      void act("Saved.", () => api.put("/api/wordpress-posts/{id}", { path: { id }, body: { title: d.title, slug: d.slug, content: d.body, excerpt: d.summary, category_ids: d.categories, tag_ids: d.tags } }));
    else void act("Saved.", () => api.put("/api/astro-posts/{id}", { path: { id }, body: { title: d.title, slug: d.slug, body: d.body, description: d.summary, category_ids: d.categories, tag_ids: d.tags } }));
  }

  if (post.error) {
    return (
      <>
        <Alert>{post.error}</Alert>
        <button type="button" onClick={onClose}>
          Back to the posts
        </button>
      </>
    );
  }
  if (!p || !d) return <p role="status">Loading the post…</p>;
  const wp = kind === "wordpress" ? (p as NonNullable<WP>) : null;
  const astro = kind === "astro" ? (p as NonNullable<Astro>) : null;
  const fe = errors.fields;
  return (
    <section aria-labelledby="post-title">
      <p>
        <button type="button" class="link" onClick={onClose}>
          Back to the posts
        </button>
      </p>
      <h2 id="post-title">{saved?.title || "(untitled)"}</h2>
      <p class="muted" role="status">
        {wp && `${wpStatusWords[wp.status] ?? wp.status} · ${syncWords[wp.sync_status] ?? wp.sync_status}`}
        {wp?.last_error && ` — ${wp.last_error}`}
        {astro && `${astro.draft ? "Draft" : "Published"} · ${astro.file}`}
        {changed && " · unsaved changes"}
      </p>
      {wp?.remote_link && (
        <p>
          <a href={wp.remote_link} rel="noopener noreferrer" target="_blank">
            The post on the site
          </a>
        </p>
      )}
      {conflict && wp && <Conflict id={id} detail={conflict} mine={{ title: saved?.title ?? "", body: saved?.body ?? "" }} busy={busy}
        onKeep={(prefer) => void act(prefer === "local" ? "This version was kept and sent to the site." : "The site's version was kept.",
          () => api.post("/api/wordpress-posts/{id}/sync", { path: { id }, query: { prefer } }))}
        onCancel={() => setConflict(null)} />}
      <form onSubmit={(e) => { e.preventDefault(); save(); }} aria-label="Edit the post" noValidate>
        <fieldset disabled={!editor || busy}>
          <legend class="visually-hidden">The post</legend>
          <Field label="Title" name="title" value={d.title} onValue={(title) => set({ title })} error={fe.title} />
          <Field label="Slug" name="slug" value={d.slug} onValue={(slug) => set({ slug })} error={fe.slug} />
          <TextArea label={wp ? "Excerpt" : "Description"} name="summary" rows={2} value={d.summary} onValue={(summary) => set({ summary })}
            error={fe.excerpt ?? fe.description} />
          <div class="two">
            <TextArea label="Markdown" name="body" rows={18} value={d.body} onValue={(body) => set({ body })} error={fe.content ?? fe.body} readOnly={!editor} />
            <div>
              <p class="label" aria-hidden="true">
                Preview
              </p>
              <Markdown text={preview} label="Preview" />
            </div>
          </div>
          <Terms env={env} kind="categories" legend="Categories" known={astro?.categories ?? []} chosen={d.categories} onChange={(categories) => set({ categories })} error={fe.category_ids} />
          <Terms env={env} kind="tags" legend="Tags" known={astro?.tags ?? []} chosen={d.tags} onChange={(tags) => set({ tags })} error={fe.tag_ids} />
        </fieldset>
        {errors.form && <Alert>{sentence(errors.form)}</Alert>}
        {done && (
          <p class="notice" role="status">
            {done}
          </p>
        )}
        {editor && (
          <div class="actions">
            <button type="submit" class="primary" disabled={busy || !changed}>
              Save
            </button>
            {wp && (
              <>
                <button type="button" disabled={busy || changed} onClick={() => void act("Published on the site.", () => api.post("/api/wordpress-posts/{id}/publish", { path: { id }, body: { status: "publish" } }))}>
                  {wp.remote_id ? "Publish again" : "Publish"}
                </button>
                {wp.remote_id && wp.status !== "draft" && (
                  <button type="button" disabled={busy || changed} onClick={() => void act("Turned back into a draft on the site.", () => api.post("/api/wordpress-posts/{id}/unpublish", { path: { id } }))}>
                    Unpublish
                  </button>
                )}
                {wp.remote_id && (
                  <button type="button" disabled={busy || changed} onClick={() => void act("In sync with the site.", () => api.post("/api/wordpress-posts/{id}/sync", { path: { id } }))}>
                    Sync
                  </button>
                )}
              </>
            )}
            {astro && (
              <button type="button" disabled={busy || changed}
                onClick={() => void act(astro.draft ? "Published." : "Turned back into a draft.", () => api.put("/api/astro-posts/{id}", { path: { id }, body: { draft: !astro.draft } }))}>
                {astro.draft ? "Publish" : "Unpublish"}
              </button>
            )}
            {changed && <span class="muted small">Save the changes before publishing or syncing.</span>}
          </div>
        )}
      </form>
    </section>
  );
}

// Terms are a post's categories or tags: the chosen ones (their names from
// the post, or asked by id), and the environment's others searched and
// paged by the server (q, page), so an environment with thousands of tags
// offers every one.
function Terms({ env, kind, legend, known, chosen, onChange, error }: {
  env: number; kind: TermKind; legend: string; known: Term[]; chosen: number[]; onChange: (ids: number[]) => void; error?: string | undefined;
}) {
  const [names, setNames] = useState<Map<number, string>>(() => new Map(known.map((t) => [t.id, t.name])));
  const [text, setText] = useState("");
  const q = useDebounced(text.trim()) || undefined;
  const [page, setPage] = useState(1);
  useEffect(() => setPage(1), [q]);
  const perPage = 20;
  const found = useResource(
    async (signal) => (kind === "categories"
      ? await api.get("/api/cms/categories", { query: { environment_id: env, q, page, per_page: perPage }, signal })
      : await api.get("/api/cms/tags", { query: { environment_id: env, q, page, per_page: perPage }, signal })).data,
    [env, kind, q, page],
  );
  const missing = chosen.filter((id) => !names.has(id)).join(",");
  // A chosen term not named yet (a WordPress post has only ids) is asked by id.
  useEffect(() => {
    if (!missing) return;
    let live = true;
    void Promise.all(missing.split(",").map(Number).map(async (id) => {
      try {
        const t = kind === "categories" ? await api.get("/api/cms/categories/{id}", { path: { id } }) : await api.get("/api/cms/tags/{id}", { path: { id } });
        return [id, t.data.name] as const;
      } catch {
        return [id, `#${id}`] as const;
      }
    })).then((got) => live && setNames((m) => new Map([...m, ...got])));
    return () => void (live = false);
  }, [kind, missing]);
  const items = found.data?.items ?? [];
  useEffect(() => {
    if (items.length) setNames((m) => new Map([...m, ...items.map((t) => [t.id, t.name] as const)]));
  }, [found.data]);
  const others = items.filter((t) => !chosen.includes(t.id));
  const pages = found.data ? Math.max(1, Math.ceil(found.data.total / found.data.per_page)) : 1;
  const box = (t: Term, on: boolean) => (
    <label key={t.id} class="check-label">
      <input type="checkbox" checked={on} onChange={(e) => onChange(e.currentTarget.checked ? [...chosen, t.id] : chosen.filter((x) => x !== t.id))} />
      {t.name}
    </label>
  );
  return (
    <fieldset class="terms" aria-invalid={error ? "true" : undefined}>
      <legend>{legend}</legend>
      {chosen.length > 0 && <div role="group" aria-label={`Chosen ${kind}`}>{chosen.map((id) => box({ id, name: names.get(id) ?? "…" }, true))}</div>}
      <Field type="search" label={`Find ${kind}`} name={`${kind}-q`} value={text} onValue={setText} />
      {found.error && <Alert>{found.error}</Alert>}
      {found.data && found.data.total === 0 && <p class="muted small">{q ? `No ${kind} match.` : "None in this environment yet."}</p>}
      {others.length > 0 && <div role="group" aria-label={`Other ${kind}`}>{others.map((t) => box(t, false))}</div>}
      {pages > 1 && <Pager label={`Pages of ${kind}`} page={page} pages={pages} onPage={setPage} />}
      {error && <p class="field-error">{sentence(error)}</p>}
    </fieldset>
  );
}

// Conflict shows what the server said and both versions side by side:
// this side's Markdown through the preview, and the site's HTML (read with
// GET .../remote) through Html's allow-list; both build elements, never
// HTML strings. The user keeps one (sync with prefer).
function Conflict({ id, detail, mine, busy, onKeep, onCancel }: { id: number; detail: string; mine: { title: string; body: string }; busy: boolean; onKeep: (prefer: "local" | "remote") => void; onCancel: () => void }) {
  const theirs = useResource(async (signal) => (await api.get("/api/wordpress-posts/{id}/remote", { path: { id }, signal })).data, [id, detail]);
  const t = theirs.data;
  return (
    <div class="card conflict" role="alertdialog" aria-labelledby="conflict-h" aria-describedby="conflict-d">
      <h3 id="conflict-h">Both versions changed</h3>
      <p id="conflict-d">{sentence(detail)}</p>
      <div class="two">
        <section aria-labelledby="conflict-mine">
          <h4 id="conflict-mine">This version</h4>
          <p class="version-title">{mine.title || "(untitled)"}</p>
          <Markdown text={mine.body} label="This version's text" />
        </section>
        <section aria-labelledby="conflict-theirs">
          <h4 id="conflict-theirs">The site's version</h4>
          {theirs.error && <Alert>{theirs.error}</Alert>}
          {!t && !theirs.error && <p role="status">Reading the site's version…</p>}
          {t && (
            <>
              <p class="version-title">{t.title || "(untitled)"}</p>
              <p class="muted small">
                Changed on the site <When at={t.modified_at} />
              </p>
              <Html html={t.content} label="The site's text" />
            </>
          )}
        </section>
      </div>
      <div class="actions">
        <button type="button" disabled={busy} onClick={() => onKeep("local")}>
          Keep this version
        </button>
        <button type="button" disabled={busy} onClick={() => onKeep("remote")}>
          Keep the site's version
        </button>
        <button type="button" onClick={onCancel}>
          Decide later
        </button>
      </div>
    </div>
  );
}
