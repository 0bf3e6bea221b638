// SaveDraft is the pair of buttons that save a generated text as a
// WordPress or an Astro draft (a CIE run's, a live session's), with the
// server's words when it cannot and a link to the posts when it did. An
// environment with no Astro project says so beside the buttons, with a link
// to where an administrator configures one (a WordPress draft is kept here
// until the site is configured and synced, so it needs none).
import { api, type Schemas } from "./api/client";
import { adminPath, envPath } from "./router";
import { Alert, isAdmin, Link, useAction, useResource } from "./ui";
import { useState } from "preact/hooks";

type Target = "wordpress" | "astro";

export function SaveDraft({ env, save, what = "", fallbackTitle = "" }: {
  env: number;
  save: (target: Target) => Promise<{ data: Schemas["savedPostResponse"] }>;
  what?: string; // "the last output " in "Save the last output as a WordPress draft"
  fallbackTitle?: string;
}) {
  const [saved, setSaved] = useState<string | null>(null);
  const { busy: running, error, act } = useAction();
  const busy = running !== null;
  const environment = useResource((signal) => api.get("/api/environments/{id}", { path: { id: env }, signal }), [env]);
  const noAstro = environment.data !== null && !environment.data.data.configuration?.astro?.project_path;
  const run = (target: Target) =>
    act(async () => {
      const r = await save(target);
      const title = r.data.wordpress?.title ?? r.data.astro?.title ?? fallbackTitle;
      setSaved(`Saved “${title}” as ${target === "wordpress" ? "a WordPress" : "an Astro"} draft.`);
    });
  const wp = what ? `Save ${what} as a WordPress draft` : "Save as WordPress draft";
  const astro = what ? `Save ${what} as an Astro draft` : "Save as Astro draft";
  return (
    <>
      <div class="actions">
        <button type="button" onClick={() => void run("wordpress")} disabled={busy}>
          {wp}
        </button>
        <button type="button" onClick={() => void run("astro")} disabled={busy}>
          {astro}
        </button>
      </div>
      {noAstro && (
        <p class="muted">
          This environment has no Astro project yet, so an Astro draft cannot be saved:{" "}
          {isAdmin() ? <Link href={adminPath("environments")}>configure one under Environments</Link> : "ask an administrator to configure one"}.
        </p>
      )}
      {error && <Alert>{error}</Alert>}
      {saved && (
        <p class="notice" role="status">
          {saved} <Link href={envPath(env, "posts")}>Open the posts</Link>
        </p>
      )}
    </>
  );
}
