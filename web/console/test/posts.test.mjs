// Posts: an editor opens a WordPress post from the list with its sync
// state, edits its Markdown beside a live preview that runs none of its
// markup, files it under a category and a tag, publishes it on a local
// stand-in of the site, sees both versions side by side when a sync finds
// both sides changed (the site's HTML rendered inert) and keeps one, then
// the other, and unpublishes it; a viewer reads it with no action.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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
