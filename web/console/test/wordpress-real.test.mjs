// WordPress from end to end, through the console only: an admin creates an
// environment, adds the site's application password on the Credentials
// screen, points the environment at the site and tests the credential
// (success shown), writes an article on the write screen (from a local
// stand-in of the model provider), saves it as a WordPress draft, opens it
// on the posts screen and publishes it; the test then reads the post on the
// site through its REST API with the application password, and deletes it
// from the site at the end, also when a step failed.
//
// The same body runs twice: always against the local stand-in of the site
// (startWordPress, as the other tests), and, opt-in, against a real
// WordPress when COPYDESK_TEST_WORDPRESS_URL, COPYDESK_TEST_WORDPRESS_USER
// and COPYDESK_TEST_WORDPRESS_APP_PASSWORD are set (see docs/console.md).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { axeCheck, launch, openAs, startCopydesk, startProvider, startWordPress, waitFor } from "./harness.mjs";

// The site: COPYDESK_TEST_WORDPRESS_*, or the COPYDESK_WP_* that
// scripts/wordpress-up.sh prints (the Go test's names) when those are unset.
const VARS = ["COPYDESK_TEST_WORDPRESS_URL", "COPYDESK_TEST_WORDPRESS_USER", "COPYDESK_TEST_WORDPRESS_APP_PASSWORD"];
const site = (name) => process.env[`COPYDESK_TEST_WORDPRESS_${name}`] || process.env[`COPYDESK_WP_${name}`];
const real = ["URL", "USER", "APP_PASSWORD"].every((n) => site(n))
  ? { url: site("URL").replace(/\/+$/, ""), user: site("USER"), password: site("APP_PASSWORD") }
  : null;

// A run's own words, so a post left behind on a real site says where it came from.
const stamp = new Date().toISOString().replace(/\D/g, "").slice(0, 14);
let title = "";
const article = () =>
  `TITLE: ${title}\nDESCRIPTION: A post written by copydesk's console test; it deletes it afterwards.\n---\n# ${title}\n\n` +
  `Written by the browser test of copydesk (run ${stamp}).\n\n## Steps\n\n1. Pick a pot\n2. Water **daily**\n`;

let srv;
let browser;
let provider;
let admin;
before(async () => {
  srv = await startCopydesk();
  provider = await startProvider({ reply: () => article() });
  browser = await launch();
  admin = (await srv.login("ann@example.com")).access_token;
  const r = await srv.api("POST", "/api/configurations", admin, { name: "Model stand-in", provider: "openai", api_key: "sk-test-good-key-0001", base_url: provider.url, default_model: "gpt-4o-mini" });
  assert.equal(r.status, 201, JSON.stringify(r.body));
});
after(async () => {
  await browser?.close();
  await srv?.stop();
  await provider?.close();
});

// onSite calls the site's REST API as the application password's user.
async function onSite(site, method, path) {
  const r = await fetch(site.url + "/wp-json/wp/v2" + path, {
    method,
    headers: { Accept: "application/json", Authorization: "Basic " + Buffer.from(`${site.user}:${site.password}`).toString("base64") },
  });
  const text = await r.text();
  let body = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: kept as text for the message
  }
  return { status: r.status, body };
}

// publishThrough runs the whole flow against site ({url, user, password}),
// names its environment and credential after label, and deletes every post
// it put on the site before it returns or throws.
async function publishThrough(site, label, { timeout = 10_000 } = {}) {
  title = `copydesk console test ${label} ${stamp}`;
  const envName = `WordPress ${label}`;
  const credName = `${label} site`;
  const { page, close } = await openAs(browser, srv, "ann@example.com", "/admin/environments");
  page.setDefaultTimeout(timeout);
  let envId = null;
  const remoteIds = new Set();
  try {
    // An environment, made on the admin screen.
    await page.getByRole("heading", { name: "Environments", level: 1 }).waitFor();
    await page.getByLabel("Environment name").fill(envName);
    await page.getByRole("button", { name: "Create the environment" }).click();
    await page.getByRole("heading", { name: envName, level: 2 }).waitFor();
    envId = (await srv.api("GET", "/api/environments?per_page=100", admin)).body.data.items.find((e) => e.name === envName).id;

    // The site's application password, on the Credentials screen.
    await page.getByRole("navigation", { name: "Administration" }).getByRole("link", { name: "Credentials" }).click();
    await page.getByRole("heading", { name: "Credentials", level: 1 }).waitFor();
    await page.getByLabel("Name", { exact: true }).fill(credName);
    await page.getByLabel("Provider").selectOption("wordpress");
    await page.getByLabel("WordPress user name").fill(site.user);
    await page.getByLabel("Application password").fill(site.password);
    await page.getByLabel("Site address").fill(site.url);
    await page.getByLabel("Usable in").selectOption(String(envId));
    await page.getByRole("button", { name: "Save the credential" }).click();
    await page.getByRole("status").filter({ hasText: `${credName} is saved.` }).waitFor();
    assert.ok(!(await page.content()).includes(site.password), "the application password is nowhere in the page");
    const cred = (await srv.api("GET", "/api/configurations?per_page=100", admin)).body.data.items.find((c) => c.name === credName);

    // The environment points at the site with it; the test says it works.
    await page.getByRole("navigation", { name: "Administration" }).getByRole("link", { name: "Environments" }).click();
    await page.getByRole("button", { name: `Configure ${envName}` }).click();
    await page.getByLabel("Site address").fill(site.url);
    await page.getByLabel("WordPress credential").selectOption(String(cred.id));
    await page.getByRole("button", { name: "Save the configuration" }).click();
    await page.getByRole("status").filter({ hasText: `The configuration of ${envName} is saved.` }).waitFor();
    await page.getByRole("button", { name: "Test the WordPress credential" }).click();
    await page.getByRole("status").filter({ hasText: `${credName} works` }).waitFor();
    assert.deepEqual(await axeCheck(page), [], "environment configured");

    // An article, written and saved as a WordPress draft.
    await page.goto(`/e/${envId}/write`);
    await page.getByLabel("Archetype").selectOption({ label: "How-to guide (global)" });
    await page.getByRole("textbox", { name: "Keyword" }).fill("balcony tomatoes");
    await page.getByRole("textbox", { name: "Audience" }).fill("city gardeners");
    await page.getByRole("button", { name: "Generate" }).click();
    await page.getByText(/^Done: 500 tokens from gpt-4o-mini/).waitFor();
    await page.getByRole("button", { name: "Save as WordPress draft" }).click();
    await page.getByText(`Saved “${title}” as a WordPress draft.`).waitFor();

    // Published from the posts screen.
    await page.goto(`/e/${envId}/posts`);
    const table = page.getByRole("table", { name: "WordPress posts" });
    await table.getByRole("row").filter({ hasText: title }).getByText("Not on the site yet").waitFor();
    await table.getByRole("button", { name: title }).click();
    await page.getByRole("region", { name: "Preview" }).getByText("Pick a pot").waitFor();
    await page.getByRole("button", { name: "Publish" }).click();
    await page.getByText("Published on the site.").waitFor();
    await page.getByText("Published · In sync").waitFor();
    assert.deepEqual(await axeCheck(page), [], "post published");

    // On the site: published, with its title and text.
    const local = (await srv.api("GET", `/api/wordpress-posts?environment_id=${envId}`, admin)).body.data.items.find((p) => p.title === title);
    assert.ok(local?.remote_id, "the post has an id on the site: " + JSON.stringify(local));
    remoteIds.add(local.remote_id);
    const r = await onSite(site, "GET", `/posts/${local.remote_id}?context=edit`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.status, "publish");
    assert.equal(r.body.title.raw, title);
    assert.match(r.body.content.raw, /Pick a pot/);
    assert.match(r.body.content.raw, /Water <strong>daily<\/strong>/);
  } finally {
    // Every post this environment put on the site goes, whatever failed.
    if (envId !== null) {
      const items = (await srv.api("GET", `/api/wordpress-posts?environment_id=${envId}`, admin)).body?.data?.items ?? [];
      for (const p of items) if (p.remote_id) remoteIds.add(p.remote_id);
    }
    for (const id of remoteIds) {
      const d = await onSite(site, "DELETE", `/posts/${id}?force=true`);
      assert.equal(d.status, 200, `deleting post ${id} on the site: ${JSON.stringify(d.body)}`);
      // A real site forgets it (404); the stand-in keeps it in the trash.
      const g = await onSite(site, "GET", `/posts/${id}?context=edit`);
      assert.ok(g.status === 404 || g.body?.status === "trash", `post ${id} is still on the site: ${g.status} ${JSON.stringify(g.body)}`);
    }
    await close();
  }
  return remoteIds;
}

test("the console publishes a written article on the local stand-in of a WordPress site, which then deletes it", async () => {
  const site = await startWordPress({ user: "writer", password: "wxyz abcd efgh ijkl" });
  try {
    const ids = await publishThrough(site, "stand-in");
    assert.equal(ids.size, 1);
    for (const id of ids) await waitFor(() => site.posts.get(id)?.status === "trash", 2000, "the post in the trash");
  } finally {
    await site.close();
  }
});

test("the console publishes a written article on a real WordPress site, then deletes it (opt-in)", { skip: real ? false : `set ${VARS.join(", ")} to run it against a real WordPress (see docs/console.md)` }, async () => {
  const ids = await publishThrough(real, "real", { timeout: 60_000 });
  assert.equal(ids.size, 1);
});
