// Web sources and search phrases, with local stand-ins of a site (an RSS
// feed and an address that fails) and of the AI provider: following a
// feed, fetching it now, its items, a source that fails (its failures and
// the site's words), sending the items' titles to the keyword scout and
// adding what it proposes as keywords, deleting a source after a
// confirmation that names it; a phrase added, run (its progress, held
// while the model answers), its ideas and the ideas sent to the scout; a
// viewer sees without the actions.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, test } from "node:test";
import { axeCheck, grantAll, launch, openAs, startCopydesk, startProvider, TEAM, useProvider } from "./harness.mjs";

let srv;
let browser;
let site;
let siteURL;
let provider;
let env;
let admin;
let held = Promise.resolve();
// hold makes the model stand-in wait until the function it returns is called.
function hold() {
  let release;
  held = new Promise((r) => (release = r));
  return () => { release(); held = Promise.resolve(); };
}

const rss = `<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0"><channel><title>Garden news</title><link>http://example.com/</link><description>News</description>
<item><title>Growing basil indoors</title><link>http://example.com/basil</link><guid>basil</guid><pubDate>Mon, 02 Nov 2026 10:00:00 GMT</pubDate><description>Light and water.</description></item>
<item><title>Pruning tomato plants</title><link>http://example.com/tomato</link><guid>tomato</guid><pubDate>Sun, 01 Nov 2026 10:00:00 GMT</pubDate><description>When to cut.</description></item>
</channel></rss>`;

before(async () => {
  site = createServer((req, res) => {
    if (req.url === "/feed.xml") {
      res.writeHead(200, { "Content-Type": "application/rss+xml" });
      res.end(rss);
      return;
    }
    res.writeHead(503, { "Content-Type": "text/plain" });
    res.end("down for maintenance");
  });
  await new Promise((r) => site.listen(0, "127.0.0.1", r));
  siteURL = `http://127.0.0.1:${site.address().port}`;
  srv = await startCopydesk({ users: TEAM, args: ["--web-sources-private"] }); // the stand-in site is on loopback
  // The model answers at once, or, while a test holds it, when released.
  provider = await startProvider({ reply: () => held.then(() => "1. basil growing tips\n2. how often to water basil\n3. basil indoors winter\n") });
  browser = await launch();
  admin = (await srv.login("ann@example.com")).access_token;
  await useProvider(srv, admin, provider);
  env = (await srv.api("POST", "/api/environments", admin, { name: "Garden blog" })).body.data;
  await grantAll(srv, admin, env.id);
});
after(async () => {
  await browser?.close();
  await srv?.stop();
  await provider?.close();
  site?.closeAllConnections();
  await new Promise((r) => (site ? site.close(r) : r()));
});

test("follow a feed, its items and failures, and send the items to the scout", async () => {
  const { page, close } = await openAs(browser, srv, "ed@example.com", `/e/${env.id}`);
  await page.getByRole("navigation", { name: "Sections" }).getByRole("link", { name: "Web sources" }).click();
  await page.getByRole("heading", { name: "Web sources", level: 1 }).waitFor();
  await page.getByText(/No web sources yet\. Add the address of a feed/).waitFor();
  assert.deepEqual(await axeCheck(page), [], "web sources, empty");

  const add = page.getByRole("form", { name: "Add a web source" });
  await add.getByLabel("Address").fill("ftp://example.com/feed");
  await add.getByRole("button", { name: "Follow" }).click();
  await add.getByText("Must be an http or https address with a host and without credentials.").waitFor();
  const feed = siteURL + "/feed.xml";
  await add.getByLabel("Address").fill(feed);
  await add.getByRole("button", { name: "Follow" }).click();
  await page.getByRole("status").filter({ hasText: `Following ${feed}.` }).waitFor();
  const table = page.getByRole("table", { name: "Web sources" });
  const row = table.getByRole("row", { name: new RegExp(feed.replace(/[.?]/g, "\\$&")) });
  await row.getByRole("button", { name: `Fetch now: ${feed}` }).click();
  await page.getByRole("status").filter({ hasText: new RegExp(`${feed.replace(/[.?]/g, "\\$&")}(: [02] new items?\\.| has not changed since the last fetch\\.)`) }).waitFor();
  await row.getByText("(HTTP 200)").waitFor();
  await row.getByText("None", { exact: true }).waitFor();

  // A source that fails: the failures in a row and the site's words.
  const broken = siteURL + "/broken.xml";
  await add.getByLabel("Address").fill(broken);
  await add.getByRole("button", { name: "Follow" }).click();
  const bad = table.getByRole("row", { name: new RegExp(broken.replace(/[.?]/g, "\\$&")) });
  await bad.getByRole("button", { name: `Fetch now: ${broken}` }).click();
  await page.getByRole("status").filter({ hasText: `Fetching ${broken} failed:` }).waitFor();
  await bad.getByText(/^\d+ in a row$/).waitFor();
  await bad.getByText(/503/).first().waitFor();
  assert.deepEqual(await axeCheck(page), [], "web sources, listed");

  // The feed's items.
  await row.getByRole("link", { name: feed }).click();
  const items = page.getByRole("region", { name: `Items of ${feed}` });
  await items.getByRole("link", { name: "Growing basil indoors" }).waitFor();
  await items.getByRole("link", { name: "Pruning tomato plants" }).waitFor();
  assert.deepEqual(await axeCheck(page), [], "a source's items");

  // Their titles to the scout, and its proposals to the keywords.
  const scout = page.getByRole("region", { name: "Keyword scout" });
  // Its progress: the run as the start answered it (queued, or already
  // reading), with a progress bar and a way to cancel, while the test holds
  // the screen's next look at the run.
  const runAddress = /\/api\/seo\/scout\/runs\/\d+$/;
  let letGo;
  const gate = new Promise((r) => (letGo = r));
  await page.route(runAddress, async (route) => {
    await gate;
    await route.continue();
  });
  await scout.getByRole("button", { name: "Send the items' titles to the scout" }).click();
  const progress = scout.getByRole("status").filter({ hasText: /^Scout run \d+: (waiting to start|reading)…/ });
  await progress.waitFor();
  await progress.getByRole("progressbar", { name: /^Scout run \d+: (waiting to start|reading)…$/ }).waitFor();
  await progress.getByRole("button", { name: "Cancel the scout run" }).waitFor();
  assert.equal(await scout.getByRole("button", { name: "Send the items' titles to the scout" }).isDisabled(), true, "no second run while one goes");
  letGo(); // the looks at the run pass from now on
  await scout.getByText(/^Scout run \d+ succeeded: \d+ keywords? proposed/).waitFor({ timeout: 20_000 });
  await progress.waitFor({ state: "detached" });
  const proposed = scout.getByRole("table", { name: "Proposed keywords" });
  await proposed.getByRole("row", { name: /growing basil indoors/i }).waitFor();
  assert.deepEqual(await axeCheck(page), [], "the scout's proposed keywords");
  await proposed.getByRole("checkbox", { name: /Add pruning tomato plants/i }).uncheck();
  await scout.getByRole("button", { name: /^Add \d+ as keywords$/ }).click();
  await scout.getByText(/^\d+ keywords? added\./).waitFor();
  await proposed.getByRole("row", { name: /growing basil indoors .* Added/i }).waitFor();
  const kws = (await srv.api("GET", `/api/seo/keywords?environment_id=${env.id}&per_page=100`, admin)).body.data.items.map((k) => k.keyword.toLowerCase());
  assert.ok(kws.includes("growing basil indoors"), JSON.stringify(kws));
  assert.ok(!kws.includes("pruning tomato plants"), "an unchecked proposal stays out");

  // Delete the failing source after a confirmation that names it.
  await bad.getByRole("button", { name: `Delete… ${broken}` }).click();
  const ask = bad.getByRole("alertdialog", { name: `Delete ${broken}` });
  await ask.getByText(`Stop following ${broken} and delete the items found there? The keywords already made from them stay.`).waitFor();
  await ask.getByRole("button", { name: "Delete the source" }).click();
  await page.getByRole("status").filter({ hasText: `${broken} deleted, with its items.` }).waitFor();
  await bad.waitFor({ state: "detached" });
  await close();
});

test("add a search phrase, run it, its ideas to the scout", async () => {
  const { page, close } = await openAs(browser, srv, "ed@example.com", `/e/${env.id}/phrases`);
  await page.getByRole("heading", { name: "Search phrases", level: 1 }).waitFor();
  await page.getByText(/No search phrases yet\. Add a phrase/).waitFor();
  assert.deepEqual(await axeCheck(page), [], "search phrases, empty");
  const add = page.getByRole("form", { name: "Add a search phrase" });
  await add.getByLabel("Phrase").fill("grow basil");
  await add.getByLabel("Language (optional)").fill("English");
  await add.getByRole("button", { name: "Add the phrase" }).click();
  await add.getByText("Must be a language tag like en, de or pt-BR").waitFor();
  await add.getByLabel("Language (optional)").fill("en");
  await add.getByRole("button", { name: "Add the phrase" }).click();
  await page.getByRole("status").filter({ hasText: "Added “grow basil”. Run it to find its ideas." }).waitFor();
  const row = page.getByRole("table", { name: "Search phrases" }).getByRole("row", { name: /grow basil/ });
  await row.getByText("Never run").waitFor();
  // Its progress: held while the model answers, the row says so with a
  // progress bar; released, it says when it was done and what it found.
  const release = hold();
  const asked = provider.requests.length;
  await row.getByRole("button", { name: "Run “grow basil”" }).click();
  const running = row.getByRole("status").filter({ hasText: /(Waiting to run|Running)…/ });
  await running.getByRole("progressbar", { name: "Run of grow basil" }).waitFor();
  for (let i = 0; provider.requests.length === asked; i++) {
    assert.ok(i < 200, "the run asks the model");
    await new Promise((r) => setTimeout(r, 100));
  }
  await row.getByRole("status").filter({ hasText: "Running…" }).waitFor({ timeout: 10_000 }); // the list is asked again every 2 s
  assert.equal(await row.getByText(/^Done /).count(), 0, "not done while the model is held");
  assert.deepEqual(await axeCheck(page), [], "search phrases, running");
  release();
  await row.getByText(/^Done /).waitFor({ timeout: 20_000 });
  await running.waitFor({ state: "detached" });
  await row.getByText(/\(3 new ideas\)/).waitFor();
  assert.deepEqual(await axeCheck(page), [], "search phrases, run");

  await row.getByRole("link", { name: "grow basil" }).click();
  const ideas = page.getByRole("table", { name: "Ideas for grow basil" });
  await ideas.getByRole("row", { name: /how often to water basil/ }).waitFor();
  assert.equal(await ideas.getByRole("row").count(), 4);

  const scout = page.getByRole("region", { name: "Keyword scout" });
  await scout.getByRole("button", { name: "Send the ideas to the scout" }).click();
  await scout.getByText(/^Scout run \d+ succeeded: \d+ keywords? proposed/).waitFor({ timeout: 20_000 });
  await scout.getByRole("table", { name: "Proposed keywords" }).getByRole("row", { name: /basil indoors winter/ }).waitFor();

  // Delete after a confirmation that names the phrase and its ideas.
  await row.getByRole("button", { name: "Delete… “grow basil”" }).click();
  const ask = row.getByRole("alertdialog", { name: "Delete “grow basil”" });
  await ask.getByText(/every idea found for it/).waitFor();
  await ask.getByRole("button", { name: "Delete the phrase" }).click();
  await page.getByRole("status").filter({ hasText: "Deleted “grow basil” and its ideas." }).waitFor();
  await page.getByText(/No search phrases yet/).waitFor();
  await close();
});

test("a viewer sees the sources without the actions", async () => {
  const { page, close } = await openAs(browser, srv, "vic@example.com", `/e/${env.id}/sources`);
  await page.getByRole("table", { name: "Web sources" }).waitFor();
  assert.equal(await page.getByRole("form", { name: "Add a web source" }).count(), 0);
  assert.equal(await page.getByRole("button", { name: /^Fetch now/ }).count(), 0);
  assert.equal(await page.getByRole("button", { name: "Send the items' titles to the scout" }).count(), 0);
  assert.deepEqual(await axeCheck(page), [], "web sources, viewer");
  await close();
});
