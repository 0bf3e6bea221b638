// Write an article: an editor chooses an archetype, fills in the form made
// of its variables (a missing one is named beside its field), generates
// and watches the text arrive from a local stand-in of the provider, reads
// the article in a preview that runs none of the model's markup, and saves
// it as a WordPress draft (and, where the environment has an Astro project,
// as an Astro draft: a post and its file); a cut stream is joined again;
// stopping cancels the generation; a viewer sees no action.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { axeCheck, grantAll, launch, openAs, startCopydesk, TEAM, startProvider, useProvider, waitFor } from "./harness.mjs";

let srv;
let browser;
let provider;
let env;
let roots;
let astroEnv;
const article = (title, words = 20) =>
  `TITLE: ${title}\nDESCRIPTION: How to grow them in little space.\n---\n# ${title}\n\n` +
  `Intro with <script>window.__pwned=1</script> and <img src=x onerror="window.__pwned=2"> as text.\n\n## Steps\n\n1. Pick a pot\n2. Water **daily**\n\n` +
  `[click me](javascript:window.__pwned=3) and [the guide](https://example.com/guide).\n\n` +
  Array.from({ length: words }, (_, i) => `word${i}`).join(" ") + "\n";

before(async () => {
  // An Astro project under the folder the server may write in.
  roots = mkdtempSync(join(tmpdir(), "copydesk-astro-"));
  mkdirSync(join(roots, "site", "src", "content", "blog"), { recursive: true });
  writeFileSync(join(roots, "site", "astro.config.mjs"), "export default {};\n");
  srv = await startCopydesk({ users: TEAM, args: ["--astro-roots", roots] });
  provider = await startProvider({ reply: () => article("Growing tomatoes on a balcony"), every: 15 });
  browser = await launch();
  const admin = (await srv.login("ann@example.com")).access_token;
  await useProvider(srv, admin, provider);
  env = (await srv.api("POST", "/api/environments", admin, { name: "Garden blog" })).body.data;
  astroEnv = (await srv.api("POST", "/api/environments", admin, { name: "Astro garden" })).body.data;
  await grantAll(srv, admin, env.id, astroEnv.id);
  const a = await srv.api("PUT", `/api/environments/${astroEnv.id}/configuration`, admin, { astro: { project_path: join(roots, "site"), content_dir: "src/content/blog" } });
  assert.equal(a.status, 200, JSON.stringify(a.body));
});
after(async () => {
  await browser?.close();
  await srv?.stop();
  await provider?.close();
  if (roots) rmSync(roots, { recursive: true, force: true });
});

test("an editor generates an article, watches it stream, and saves it as a WordPress draft", async () => {
  const { page, close } = await openAs(browser, srv, "ed@example.com", `/e/${env.id}/write`);
  await page.getByRole("heading", { name: "Write an article", level: 1 }).waitFor();
  await page.getByLabel("Archetype").selectOption({ label: "How-to guide (global)" });
  await page.getByRole("textbox", { name: "Keyword" }).waitFor();
  await page.getByRole("textbox", { name: "Notes (optional)" }).waitFor();
  assert.deepEqual(await axeCheck(page), [], "write form");

  // The server names the missing variables; each is marked at its field.
  await page.getByRole("button", { name: "Generate" }).click();
  const keyword = page.getByRole("textbox", { name: "Keyword" });
  await waitFor(async () => (await keyword.getAttribute("aria-invalid")) === "true");
  assert.equal(await page.getByRole("textbox", { name: "Audience" }).getAttribute("aria-invalid"), "true");
  assert.equal(await page.getByRole("textbox", { name: "Notes (optional)" }).getAttribute("aria-invalid"), null);

  await keyword.fill("balcony tomatoes");
  await page.getByRole("textbox", { name: "Audience" }).fill("city gardeners");
  await page.getByRole("button", { name: "Generate" }).click();
  // The text arrives piece by piece, before the run is done.
  const so = page.getByRole("region", { name: "Text so far" });
  await so.getByText(/TITLE: Growing/).waitFor();
  await page.getByRole("button", { name: "Stop" }).waitFor();
  await page.getByText(/^Done: 500 tokens from gpt-4o-mini/).waitFor();

  // The preview: the article's headings and lists; its markup stays text.
  const preview = page.getByRole("region", { name: "Article preview" });
  await preview.getByRole("heading", { name: "Growing tomatoes on a balcony" }).waitFor();
  await preview.getByRole("listitem").filter({ hasText: "Water daily" }).waitFor();
  await preview.getByText(/<script>window.__pwned=1<\/script>/).waitFor();
  assert.equal(await preview.getByRole("link", { name: "click me" }).count(), 0, "a javascript: link is no link");
  assert.equal(await preview.getByRole("link", { name: "the guide" }).getAttribute("href"), "https://example.com/guide");
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.equal(await preview.locator("script, img").count(), 0);
  assert.deepEqual(await axeCheck(page), [], "article");

  await page.getByRole("button", { name: "Save as WordPress draft" }).click();
  await page.getByText("Saved “Growing tomatoes on a balcony” as a WordPress draft.").waitFor();
  // No Astro folder in this environment: the server's words, at the article.
  await page.getByRole("button", { name: "Save as Astro draft" }).click();
  await page.getByRole("alert").filter({ hasText: /astro/i }).waitFor();
  const admin = (await srv.login("ann@example.com")).access_token;
  const posts = (await srv.api("GET", `/api/wordpress-posts?environment_id=${env.id}`, admin)).body.data.items;
  assert.deepEqual(posts.map((p) => [p.title, p.status]), [["Growing tomatoes on a balcony", "draft"]]);
  await close();
});

test("an editor saves a generated article as an Astro draft: a draft post and its file", async () => {
  const { page, close } = await openAs(browser, srv, "ed@example.com", `/e/${astroEnv.id}/write`);
  await page.getByLabel("Archetype").selectOption({ label: "How-to guide (global)" });
  await page.getByRole("textbox", { name: "Keyword" }).fill("chives");
  await page.getByRole("textbox", { name: "Audience" }).fill("window-sill gardeners");
  await page.getByRole("button", { name: "Generate" }).click();
  await page.getByText(/^Done: 500 tokens from gpt-4o-mini/).waitFor();
  await page.getByRole("button", { name: "Save as Astro draft" }).click();
  await page.getByText("Saved “Growing tomatoes on a balcony” as an Astro draft.").waitFor();
  const admin = (await srv.login("ann@example.com")).access_token;
  const posts = (await srv.api("GET", `/api/astro-posts?environment_id=${astroEnv.id}`, admin)).body.data.items;
  assert.deepEqual(posts.map((p) => [p.title, p.draft]), [["Growing tomatoes on a balcony", true]]);
  const file = join(roots, "site", "src", "content", "blog", posts[0].file);
  assert.ok(existsSync(file), "the post's file is in the project");
  assert.match(readFileSync(file, "utf8"), /draft: true[\s\S]*word19/);
  await close();
});

test("stop cancels the generation on the server and keeps its text so far on the screen", async () => {
  provider.every = 40;
  const { page, close } = await openAs(browser, srv, "ed@example.com", `/e/${env.id}/write`);
  await page.getByRole("textbox", { name: "Keyword" }).fill("basil");
  await page.getByRole("textbox", { name: "Audience" }).fill("cooks");
  await page.getByRole("button", { name: "Generate" }).click();
  const so = page.getByRole("region", { name: "Text so far" });
  await so.getByText(/TITLE:/).waitFor();
  await page.getByRole("button", { name: "Stop" }).click();
  await page.getByText(/^Stopped\. The generation was cancelled/).waitFor();
  const cut = await so.textContent();
  assert.ok(cut.includes("TITLE:") && !cut.includes("word19"), "stopped before the end, the text so far kept");
  assert.equal(await page.getByRole("button", { name: "Stop" }).count(), 0);
  // The server recorded it cancelled, by the editor.
  const admin = (await srv.login("ann@example.com")).access_token;
  const runs = (await srv.api("GET", `/api/cie/runs?environment_id=${env.id}&per_page=1`, admin)).body.data.items;
  assert.equal(runs[0].status, "cancelled");
  assert.match(runs[0].error, /^cancelled by /);
  provider.every = 15;
  await close();
});

test("a stream cut mid-generation joins the generation again with Last-Event-ID and the article completes", async () => {
  const { page, close } = await openAs(browser, srv, "ed@example.com", `/e/${env.id}/write`);
  // The generation's answer reaches the page cut after its third piece of
  // text: the connection drops, the run goes on on the server.
  let cutAt = "";
  await page.route("**/api/cie/archetypes/*/generate", async (route) => {
    const res = await route.fetch();
    const events = (await res.text()).split("\n\n");
    const third = events.findIndex((e, i) => e.includes("event: delta") && events.slice(0, i).filter((x) => x.includes("event: delta")).length === 2);
    cutAt = /^id: (\d+)$/m.exec(events[third])[1];
    await route.fulfill({ status: 200, headers: { "content-type": "text/event-stream" }, body: events.slice(0, third + 1).join("\n\n") + "\n\n" });
  });
  const joins = [];
  page.on("request", (r) => {
    if (r.url().includes("/events")) joins.push(r.headers()["last-event-id"]);
  });
  await page.getByRole("textbox", { name: "Keyword" }).fill("mint");
  await page.getByRole("textbox", { name: "Audience" }).fill("tea lovers");
  await page.getByRole("button", { name: "Generate" }).click();
  await page.getByText(/^Done: 500 tokens from gpt-4o-mini/).waitFor();
  const preview = page.getByRole("region", { name: "Article preview" });
  await preview.getByRole("heading", { name: "Growing tomatoes on a balcony" }).waitFor();
  await preview.getByText(/word19/).waitFor();
  assert.ok(cutAt !== "", "the stream was cut");
  assert.deepEqual(joins, [cutAt], "joined again once, from the last event read");
  assert.equal(await page.getByRole("button", { name: "Check the generation" }).count(), 0);
  await close();
});

test("a viewer sees the archetypes' forms with no action", async () => {
  const { page, close } = await openAs(browser, srv, "vic@example.com", `/e/${env.id}/write`);
  await page.getByText("Writing an article needs the editor role").waitFor();
  assert.equal(await page.getByRole("textbox", { name: "Keyword" }).isDisabled(), true);
  assert.equal(await page.getByRole("button", { name: "Generate" }).count(), 0);
  assert.deepEqual(await axeCheck(page), [], "write, viewer");
  await close();
});
