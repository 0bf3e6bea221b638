// Posts: an editor opens a WordPress post from the list with its sync
// state, edits its Markdown beside a live preview that runs none of its
// markup, files it under a category and a tag, publishes it on a local
// stand-in of the site, sees both versions side by side when a sync finds
// both sides changed (the site's HTML rendered inert) and keeps one, then
// the other, and unpublishes it; a viewer reads it with no action.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { axeCheck, grantAll, launch, openAs, startCopydesk, startWordPress, TEAM, useWordPress } from "./harness.mjs";

let srv;
let browser;
let site;
let env;
let admin;
let post;
let roots;
let astroEnv;
let astroPost;
before(async () => {
  // An Astro project under the folder the server may write in.
  roots = mkdtempSync(join(tmpdir(), "copydesk-astro-"));
  mkdirSync(join(roots, "site", "src", "content", "blog"), { recursive: true });
  writeFileSync(join(roots, "site", "astro.config.mjs"), "export default {};\n");
  srv = await startCopydesk({ users: TEAM, args: ["--astro-roots", roots] });
  site = await startWordPress();
  browser = await launch();
  admin = (await srv.login("ann@example.com")).access_token;
  env = (await srv.api("POST", "/api/environments", admin, { name: "Garden blog" })).body.data;
  astroEnv = (await srv.api("POST", "/api/environments", admin, { name: "Astro blog" })).body.data;
  await grantAll(srv, admin, env.id, astroEnv.id);
  await useWordPress(srv, admin, env.id, site);
  for (const [path, name] of [["/api/cms/categories", "Gardening"], ["/api/cms/tags", "tomatoes"]]) {
    const r = await srv.api("POST", path, admin, { environment_id: env.id, name });
    assert.equal(r.status, 201, JSON.stringify(r.body));
  }
  const r = await srv.api("POST", "/api/wordpress-posts", admin, { environment_id: env.id, title: "Tomato diary", content: "First notes." });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  post = r.body.data;
  let a = await srv.api("PUT", `/api/environments/${astroEnv.id}/configuration`, admin, { astro: { project_path: join(roots, "site"), content_dir: "src/content/blog" } });
  assert.equal(a.status, 200, JSON.stringify(a.body));
  a = await srv.api("POST", "/api/astro-posts", admin, { environment_id: astroEnv.id, title: "Basil at home", description: "Sow it warm.", body: "Basil likes **warmth**.", draft: true });
  assert.equal(a.status, 201, JSON.stringify(a.body));
  astroPost = a.body.data;
});
after(async () => {
  await browser?.close();
  await srv?.stop();
  await site?.close();
  if (roots) rmSync(roots, { recursive: true, force: true });
});

// Links written to run script however the browser would read them (a
// tab or newline inside the scheme, a C0 control before it, entities,
// mixed case), and one good link: only the good one may be a link, and
// every link on the page must resolve to http(s) or mailto.
const badLinks = ["tab link", "newline link", "control link", "encoded link", "mixed case link", "mixed link", "image: a bad image"];
const badHtml =
  '<a href="java&#9;script:window.__pwned=5">tab link</a> <a href="java&#10;script:window.__pwned=6">newline link</a> ' +
  '<a href="&#1;javascript:window.__pwned=7">control link</a> <a href="&#x6A;avascript&#58;window.__pwned=8">encoded link</a> ' +
  '<a href="JaVaScRiPt:window.__pwned=9">mixed case link</a> <a href=" &#13;java&#x09;SCRIPT&colon;window.__pwned=10">mixed link</a> ' +
  '<img src="java&#9;script:window.__pwned=11" alt="a bad image"> <a href="https://example.com/ok">good link</a>';
const badMarkdown =
  "[control link](\x01javascript:window.__pwned=5) [mixed case link](JaVaScRiPt:window.__pwned=6) " +
  "[mixed link](\x1fjAvAsCrIpT:window.__pwned=7) ![a bad image](\x01javascript:window.__pwned=8) [good link](https://example.com/ok)";
async function onlySafeLinks(region, what) {
  for (const name of badLinks) assert.equal(await region.getByRole("link", { name, exact: true }).count(), 0, `${what}: "${name}" is no link`);
  assert.equal(await region.getByRole("link", { name: "good link" }).getAttribute("href"), "https://example.com/ok", what);
  const hrefs = await region.getByRole("link").evaluateAll((as) => as.map((a) => [a.getAttribute("href"), new URL(a.href).protocol]));
  for (const [href, protocol] of hrefs) assert.ok(["http:", "https:", "mailto:"].includes(protocol), `${what}: ${JSON.stringify(href)}`);
}

const localPost = async () => (await srv.api("GET", `/api/wordpress-posts/${post.id}`, admin)).body.data;

test("an editor edits a post beside its preview, publishes, resolves a conflict and unpublishes", async () => {
  const { page, close } = await openAs(browser, srv, "ed@example.com", `/e/${env.id}/posts`);
  const table = page.getByRole("table", { name: "WordPress posts" });
  await table.getByRole("row").filter({ hasText: "Tomato diary" }).getByText("Not on the site yet").waitFor();
  assert.deepEqual(await axeCheck(page), [], "posts list");
  await table.getByRole("button", { name: "Tomato diary" }).click();

  // The preview follows the Markdown; markup in it stays text.
  const md = page.getByRole("textbox", { name: "Markdown" });
  const preview = page.getByRole("region", { name: "Preview" });
  // (The server refuses control characters in a post: this text is only previewed.)
  await md.fill(`# Unsafe links\n\n${badMarkdown}\n`);
  await preview.getByRole("heading", { name: "Unsafe links" }).waitFor();
  await onlySafeLinks(preview, "Markdown preview");
  await md.fill("# Ripe tomatoes\n\nRed and **ripe** <script>window.__pwned=1</script>\n\n- water\n- sun\n");
  await preview.getByRole("heading", { name: "Ripe tomatoes" }).waitFor();
  await preview.getByText("<script>window.__pwned=1</script>", { exact: false }).waitFor();
  assert.equal(await preview.getByRole("listitem").count(), 2);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  await page.getByRole("checkbox", { name: "Gardening" }).check();
  await page.getByRole("checkbox", { name: "tomatoes" }).check();
  assert.equal(await page.getByRole("button", { name: "Publish" }).isDisabled(), true, "publish waits for the save");
  await page.getByRole("button", { name: "Save" }).click();
  await page.getByText("Saved.", { exact: true }).waitFor();
  const saved = await localPost();
  assert.equal(saved.category_ids.length, 1);
  assert.equal(saved.tag_ids.length, 1);
  assert.match(saved.content, /^# Ripe tomatoes/);
  assert.deepEqual(await axeCheck(page), [], "post editor");

  await page.getByRole("button", { name: "Publish" }).click();
  await page.getByText("Published on the site.").waitFor();
  await page.getByText("Published · In sync").waitFor();
  const remote = (await localPost()).remote_id;
  assert.equal(site.posts.get(remote).status, "publish");

  // Both sides change; the sync says so and the user keeps this version.
  await md.fill("# Ripe tomatoes\n\nPicked today.\n");
  await page.getByRole("button", { name: "Save" }).click();
  await page.getByText("Published · Changed here").waitFor();
  // The site's version is HTML from elsewhere: shown as elements, its script and handlers inert.
  site.edit(remote, {
    title: "Tomatoes (site)",
    content: '<h2>From the site</h2><p>Changed on the <strong>site</strong>.</p><script>window.__pwned=2</script><img src="x" onerror="window.__pwned=3" alt="a tomato"><a href="javascript:window.__pwned=4">bad link</a>' + badHtml,
  });
  await page.getByRole("button", { name: "Sync" }).click();
  const conflict = page.getByRole("alertdialog", { name: "Both versions changed" });
  await conflict.getByText(/both sides changed since the last sync/i).waitFor();
  const mine = conflict.getByRole("region", { name: "This version's text" });
  const theirs = conflict.getByRole("region", { name: "The site's text" });
  await mine.getByText("Picked today.").waitFor();
  await theirs.getByRole("heading", { name: "From the site" }).waitFor();
  await conflict.getByText("Tomatoes (site)").waitFor();
  assert.equal(await theirs.getByText("Changed on the site.").count(), 1);
  assert.equal(await theirs.locator("strong").textContent(), "site");
  assert.equal(await theirs.getByRole("link", { name: "image: a tomato" }).count(), 1, "an image is a link to it, not loaded");
  assert.equal(await theirs.getByRole("link", { name: "bad link" }).count(), 0, "a javascript: link is no link");
  await onlySafeLinks(theirs, "the site's HTML");
  assert.equal(await theirs.getByText("window.__pwned").count(), 0, "a script's text is dropped");
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.deepEqual(await axeCheck(page), [], "conflict");
  await conflict.getByRole("button", { name: "Keep this version" }).click();
  await page.getByText("This version was kept and sent to the site.").waitFor();
  assert.match(site.posts.get(remote).content, /Picked today/);
  assert.equal(await page.getByRole("alertdialog").count(), 0);

  // Again, and this time the site's version is kept here.
  await md.fill("# Ripe tomatoes\n\nPicked yesterday.\n");
  await page.getByRole("button", { name: "Save" }).click();
  await page.getByText("Published · Changed here").waitFor();
  site.edit(remote, { title: "Tomato diary", content: "<p>The site wins.</p>" });
  await page.getByRole("button", { name: "Sync" }).click();
  await conflict.getByRole("region", { name: "The site's text" }).getByText("The site wins.").waitFor();
  await conflict.getByRole("button", { name: "Keep the site's version" }).click();
  await page.getByText("The site's version was kept.").waitFor();
  assert.equal((await localPost()).content, "<p>The site wins.</p>");
  assert.match(site.posts.get(remote).content, /The site wins/);

  await page.getByRole("button", { name: "Unpublish" }).click();
  await page.getByText("Turned back into a draft on the site.").waitFor();
  assert.equal(site.posts.get(remote).status, "draft");
  await page.getByRole("button", { name: "Back to the posts" }).click();
  await table.getByRole("row").filter({ hasText: "Tomato diary" }).getByText("In sync").waitFor();
  await close();
});

test("a viewer reads a post with no action", async () => {
  const { page, close } = await openAs(browser, srv, "vic@example.com", `/e/${env.id}/posts`);
  await page.getByRole("table", { name: "WordPress posts" }).getByRole("button").first().click();
  await page.getByRole("region", { name: "Preview" }).waitFor();
  assert.equal(await page.getByRole("textbox", { name: "Markdown" }).isEditable(), false);
  for (const name of ["Save", "Publish", "Publish again", "Sync", "Unpublish"]) assert.equal(await page.getByRole("button", { name, exact: true }).count(), 0, name);
  assert.deepEqual(await axeCheck(page), [], "post, viewer");
  await close();
});

test("an editor publishes and unpublishes an Astro post; its file follows", async () => {
  const file = () => readFileSync(join(roots, "site", "src", "content", "blog", astroPost.file), "utf8");
  assert.match(file(), /^draft: true$/m);
  const { page, close } = await openAs(browser, srv, "ed@example.com", `/e/${astroEnv.id}/posts`);
  await page.getByLabel("Target").selectOption("astro");
  const table = page.getByRole("table", { name: "Astro posts" });
  await table.getByRole("row").filter({ hasText: "Basil at home" }).getByText("Draft").waitFor();
  await table.getByRole("button", { name: "Basil at home" }).click();
  await page.getByRole("region", { name: "Preview" }).getByText("warmth").waitFor();
  await page.getByRole("textbox", { name: "Description" }).fill("Sow it warm, water it little.");
  await page.getByRole("button", { name: "Save" }).click();
  await page.getByText("Saved.", { exact: true }).waitFor();
  assert.match(file(), /Sow it warm, water it little\./);
  await page.getByRole("button", { name: "Publish" }).click();
  await page.getByText("Published.", { exact: true }).waitFor();
  assert.doesNotMatch(file(), /^draft: true$/m);
  await page.getByRole("button", { name: "Unpublish" }).click();
  await page.getByText("Turned back into a draft.").waitFor();
  assert.match(file(), /^draft: true$/m);
  assert.deepEqual(await axeCheck(page), [], "astro post");
  await page.getByRole("button", { name: "Back to the posts" }).click();
  await table.getByRole("row").filter({ hasText: "Basil at home" }).getByText("Draft").waitFor();
  await close();
});

test("an editor imports the site's posts: progress, then the report, and the posts are listed", async () => {
  // A post written on the site, not here yet.
  const r = await fetch(`${site.url}/wp-json/wp/v2/posts`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: "Basic " + Buffer.from(`${site.user}:${site.password}`).toString("base64") },
    body: JSON.stringify({ title: "Pepper notes", content: "<p>Hot.</p>", status: "publish" }),
  });
  assert.equal(r.status, 201);
  const { page, close } = await openAs(browser, srv, "ed@example.com", `/e/${env.id}/posts`);
  const table = page.getByRole("table", { name: "WordPress posts" });
  await table.getByRole("button", { name: "Tomato diary" }).waitFor();
  assert.equal(await table.getByRole("button", { name: "Pepper notes" }).count(), 0);
  const release = site.hold();
  await page.getByRole("button", { name: "Import from the site" }).click();
  // While the server reads the site: a progress bar, and no second import.
  await page.getByRole("progressbar", { name: "Importing the site's posts…" }).waitFor();
  assert.equal(await page.getByRole("button", { name: "Import from the site" }).isDisabled(), true);
  release();
  // Tomato diary was published from here in the first test: it is skipped.
  await page.getByText(/Import done: 1 post imported, 1 already here skipped \(1 page of the site read\)\./).waitFor();
  await table.getByRole("row").filter({ hasText: "Pepper notes" }).getByText("In sync").waitFor();
  assert.deepEqual(await axeCheck(page), [], "wordpress import");
  await close();

  const viewer = await openAs(browser, srv, "vic@example.com", `/e/${env.id}/posts`);
  await viewer.page.getByRole("table", { name: "WordPress posts" }).waitFor();
  assert.equal(await viewer.page.getByRole("button", { name: "Import from the site" }).count(), 0, "a viewer imports nothing");
  await viewer.close();
});

test("an editor imports an Astro folder's files and reconciles the posts with it", async () => {
  const blog = join(roots, "site", "src", "content", "blog");
  writeFileSync(join(blog, "chili-seeds.md"), "---\ntitle: Chili seeds\npubDate: 2026-03-01T00:00:00Z\ndraft: true\n---\n\nSow them in March.\n");
  writeFileSync(join(blog, "Bad Name.md"), "---\ntitle: Bad name\npubDate: 2026-03-01T00:00:00Z\n---\n\nx\n");
  const { page, close } = await openAs(browser, srv, "ed@example.com", `/e/${astroEnv.id}/posts`);
  await page.getByLabel("Target").selectOption("astro");
  const table = page.getByRole("table", { name: "Astro posts" });
  await table.getByRole("button", { name: "Basil at home" }).waitFor();
  await page.getByRole("button", { name: "Import from the folder" }).click();
  await page.getByText(/Import done from .*: 1 file imported, 1 skipped\./).waitFor();
  await page.getByRole("table", { name: "Files imported" }).getByRole("rowheader", { name: "chili-seeds.md" }).waitFor();
  await page.getByRole("table", { name: "Files skipped" }).getByRole("row").filter({ hasText: "Bad Name.md" }).getByText(/not a slug/).waitFor();
  await table.getByRole("row").filter({ hasText: "Chili seeds" }).getByText("Draft").waitFor();
  assert.deepEqual(await axeCheck(page), [], "astro import");

  // The basil file is edited by hand: the reconcile lists it and the orphan file, and changes nothing yet.
  const basil = join(blog, astroPost.file);
  writeFileSync(basil, readFileSync(basil, "utf8").replace("warmth", "heat"));
  await page.getByRole("button", { name: "Reconcile with the folder" }).click();
  const diffs = page.getByRole("table", { name: "Differences" });
  await diffs.getByRole("row").filter({ hasText: astroPost.file }).getByText(/File changed outside copydesk/).waitFor();
  await diffs.getByRole("row").filter({ hasText: "Bad Name.md" }).getByText(/File no post has/).waitFor();
  await page.getByText(/Compared with .*: 1 post in sync, 2 differences\./).waitFor();
  assert.match(readFileSync(basil, "utf8"), /heat/);
  assert.deepEqual(await axeCheck(page), [], "reconcile report");

  // Fixing with "Delete them" asks first, naming the file.
  await page.getByLabel("Files no post has").selectOption("delete");
  await page.getByRole("button", { name: "Fix the differences" }).click();
  const confirm = page.getByRole("alertdialog", { name: "Delete files no post has" });
  await confirm.getByText(/deletes Bad Name\.md from the content folder/).waitFor();
  await confirm.getByRole("button", { name: "Cancel" }).click();
  assert.equal(existsSync(join(blog, "Bad Name.md")), true);
  await page.getByRole("button", { name: "Fix the differences" }).click();
  await confirm.getByRole("button", { name: "Delete 1 file" }).click();
  await page.getByText(/Reconciled with .*: 1 post in sync, 2 differences handled\./).waitFor();
  const handled = page.getByRole("table", { name: "Differences handled" });
  await handled.getByRole("row").filter({ hasText: astroPost.file }).getByText(/written/).waitFor();
  await handled.getByRole("row").filter({ hasText: "Bad Name.md" }).getByText(/deleted/).waitFor();
  assert.equal(existsSync(join(blog, "Bad Name.md")), false);
  assert.match(readFileSync(basil, "utf8"), /warmth/);
  await close();
});

test("a post's tags are found on the server past the first 200, and the empty list links to Write", async () => {
  for (let i = 1; i <= 205; i++) {
    const r = await srv.api("POST", "/api/cms/tags", admin, { environment_id: astroEnv.id, name: `herb ${String(i).padStart(3, "0")}` });
    assert.equal(r.status, 201, JSON.stringify(r.body));
  }
  const { page, close } = await openAs(browser, srv, "ed@example.com", `/e/${astroEnv.id}/posts?target=astro&post=${astroPost.id}`);
  await page.getByRole("region", { name: "Preview" }).waitFor();
  await page.getByRole("searchbox", { name: "Find tags" }).fill("herb 204");
  await page.getByRole("checkbox", { name: "herb 204" }).check();
  await page.getByRole("group", { name: "Chosen tags" }).getByRole("checkbox", { name: "herb 204" }).waitFor();
  await page.getByRole("button", { name: "Save" }).click();
  await page.getByText("Saved.", { exact: true }).waitFor();
  const saved = (await srv.api("GET", `/api/astro-posts/${astroPost.id}`, admin)).body.data;
  assert.deepEqual(saved.tags.map((t) => t.name), ["herb 204"]);
  // Paged too: the unsearched list offers a next page.
  await page.getByRole("searchbox", { name: "Find tags" }).fill("");
  await page.getByRole("navigation", { name: "Pages of tags" }).getByRole("button", { name: "Next page" }).click();
  await page.getByRole("navigation", { name: "Pages of tags" }).getByText("Page 2 of").waitFor();
  assert.deepEqual(await axeCheck(page), [], "terms");
  await close();

  // An environment with no post: the empty state links to the Write screen.
  const bare = (await srv.api("POST", "/api/environments", admin, { name: "Empty blog" })).body.data;
  const empty = await openAs(browser, srv, "ann@example.com", `/e/${bare.id}/posts`);
  await empty.page.getByRole("link", { name: "Write one on the Write screen" }).click();
  await empty.page.waitForURL(`**/e/${bare.id}/write`);
  await empty.close();
});
