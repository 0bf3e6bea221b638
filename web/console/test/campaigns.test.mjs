// Campaigns and strategies: an editor creates a campaign (its name's detail
// beside the field), edits it, builds a strategy, moves a keyword between
// clusters, renames a cluster and makes a campaign of it, its pillar
// first, then reorders its keywords from the keyboard; a viewer sees no
// action.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { axeCheck, grantAll, importKeywords, launch, openAs, startCopydesk, TEAM, waitFor } from "./harness.mjs";

let srv;
let browser;
let env;
let admin;
before(async () => {
  srv = await startCopydesk({ users: TEAM });
  browser = await launch();
  admin = (await srv.login("ann@example.com")).access_token;
  env = (await srv.api("POST", "/api/environments", admin, { name: "Garden blog" })).body.data;
  await grantAll(srv, admin, env.id);
  for (const [keyword, search_volume] of [["tomato pot", 100], ["tomato pots balcony", 500], ["basil seeds", 300], ["basil seed indoor", 50]]) {
    const r = await srv.api("POST", "/api/seo/keywords", admin, { environment_id: env.id, keyword, search_volume });
    assert.equal(r.status, 201, JSON.stringify(r.body));
  }
});
after(async () => {
  await browser?.close();
  await srv?.stop();
});

test("an editor creates and edits a campaign, builds a strategy and makes a campaign of a cluster", async () => {
  const { page, close } = await openAs(browser, srv, "ed@example.com", `/e/${env.id}/campaigns`);
  await page.getByRole("heading", { name: "Campaigns", level: 1 }).waitFor();
  await page.getByText("No campaign yet.", { exact: false }).waitFor();

  await page.getByRole("button", { name: "New campaign" }).click();
  const form = page.getByRole("form", { name: "New campaign" });
  await form.getByRole("button", { name: "Create campaign" }).click();
  const name = form.getByRole("textbox", { name: "Name" });
  await waitFor(async () => (await name.getAttribute("aria-invalid")) === "true");
  await name.fill("Spring");
  await form.getByRole("spinbutton", { name: "Posts a day" }).fill("3");
  await form.getByRole("button", { name: "Create campaign" }).click();
  await page.getByText("Campaign “Spring” created.").waitFor();
  await page.getByRole("row", { name: /Spring/ }).getByText("0 of 0 published").waitFor();
  await page.getByRole("heading", { name: "Spring", level: 3 }).waitFor();
  await page.getByRole("button", { name: "Edit Spring" }).click();
  await page.getByRole("form", { name: "Edit Spring" }).getByRole("spinbutton", { name: "Posts a day" }).fill("2");
  await page.getByRole("button", { name: "Save the campaign" }).click();
  await page.getByText("Campaign “Spring” saved.").waitFor();
  const spring = (await srv.api("GET", `/api/seo/campaigns?environment_id=${env.id}`, admin)).body.data.items.find((c) => c.name === "Spring");
  assert.equal(spring.cadence, 2);
  assert.deepEqual(await axeCheck(page), [], "campaigns");

  // A strategy, built on the server; the screen follows it until it is ready.
  await page.getByRole("textbox", { name: "Strategy name" }).fill("Garden plan");
  await page.getByLabel("Grouping").selectOption("lexical");
  await page.getByRole("button", { name: "Build a strategy" }).click();
  const row = page.getByRole("table", { name: "Strategies" }).getByRole("row", { name: /Garden plan/ });
  await row.getByText("Ready").waitFor({ timeout: 15_000 });
  await row.getByRole("button", { name: "Garden plan" }).click();
  const tomatoes = page.getByRole("article", { name: "Cluster tomato pots balcony" });
  await tomatoes.getByText("tomato pots balcony (pillar)").waitFor();
  await tomatoes.getByText("tomato pot", { exact: true }).waitFor();
  await page.getByRole("article", { name: "Cluster basil seeds" }).waitFor();

  // Move a keyword to the other cluster, and back.
  await page.getByRole("combobox", { name: "Cluster of basil seed indoor" }).selectOption({ label: "Move to tomato pots balcony" });
  await page.getByText("“basil seed indoor” moved.").waitFor();
  await tomatoes.getByText("basil seed indoor", { exact: true }).waitFor();
  const strategyId = (await srv.api("GET", `/api/seo/strategies?environment_id=${env.id}`, admin)).body.data.items[0].id;
  const clusters = (await srv.api("GET", `/api/seo/strategies/${strategyId}`, admin)).body.data.clusters;
  assert.deepEqual(clusters.map((c) => c.keywords.map((k) => k.keyword)), [["tomato pots balcony", "tomato pot", "basil seed indoor"], ["basil seeds"]]);
  await page.getByRole("combobox", { name: "Cluster of basil seed indoor" }).selectOption({ label: "Move to basil seeds" });
  await page.getByRole("article", { name: "Cluster basil seeds" }).getByText("basil seed indoor", { exact: true }).waitFor();

  await tomatoes.getByRole("textbox", { name: /^Name of cluster/ }).fill("Tomatoes");
  await page.getByRole("button", { name: "Save cluster names" }).click();
  await page.getByText("Cluster names saved.").waitFor();
  const cluster = page.getByRole("article", { name: "Cluster Tomatoes" });
  await cluster.getByRole("button", { name: "Make a campaign of Tomatoes" }).click();
  await cluster.getByRole("button", { name: "Create campaign “Tomatoes”" }).click();
  await page.getByText("Campaign “Tomatoes” created with 2 keywords, the pillar first.").waitFor();
  await page.getByRole("table", { name: "Campaigns of this environment" }).getByRole("button", { name: "Tomatoes" }).click();
  await page.getByRole("heading", { name: "Tomatoes", level: 3 }).waitFor();
  const order = await page.getByRole("region", { name: "Tomatoes" }).getByRole("listitem").allTextContents();
  assert.match(order[0], /^tomato pots balcony/);
  assert.match(order[1], /^tomato pot \(/);
  assert.deepEqual(await axeCheck(page), [], "a strategy and a campaign");

  // The order changes from the keyboard: move a keyword up with Enter; the focus stays on it.
  const region = page.getByRole("region", { name: "Tomatoes" });
  assert.equal(await region.getByRole("button", { name: "Move up tomato pots balcony" }).isDisabled(), true, "the first cannot go up");
  await region.getByRole("button", { name: "Move up tomato pot", exact: true }).focus();
  await page.keyboard.press("Enter");
  await page.getByText("“tomato pot” moved up to place 1.").waitFor();
  assert.match((await region.getByRole("listitem").allTextContents())[0], /^tomato pot \(/);
  const tomatoesId = (await srv.api("GET", `/api/seo/campaigns?environment_id=${env.id}`, admin)).body.data.items.find((c) => c.name === "Tomatoes").id;
  const saved = (await srv.api("GET", `/api/seo/campaigns/${tomatoesId}/keywords`, admin)).body.data.items.map((k) => k.keyword);
  assert.deepEqual(saved, ["tomato pot", "tomato pots balcony"]);
  assert.equal(await page.evaluate(() => document.activeElement?.textContent), "Move down tomato pot", "the focus follows the keyword");
  await page.keyboard.press("Enter");
  await page.getByText("“tomato pot” moved down to place 2.").waitFor();
  assert.deepEqual((await srv.api("GET", `/api/seo/campaigns/${tomatoesId}/keywords`, admin)).body.data.items.map((k) => k.keyword), ["tomato pots balcony", "tomato pot"]);
  await close();
});

test("a viewer sees campaigns and strategies with no action", async () => {
  const { page, close } = await openAs(browser, srv, "vic@example.com", `/e/${env.id}/campaigns`);
  await page.getByRole("table", { name: "Campaigns of this environment" }).waitFor();
  for (const name of ["New campaign", "Build a strategy"]) assert.equal(await page.getByRole("button", { name }).count(), 0, name);
  await page.getByRole("button", { name: "Spring" }).click();
  await page.getByRole("heading", { name: "Spring", level: 3 }).waitFor();
  assert.equal(await page.getByRole("button", { name: "Edit Spring" }).count(), 0);
  await close();
});

test("campaigns, a campaign's keywords and strategies page on the server; an empty campaign links to the Keywords screen", async () => {
  const made = async (body) => {
    const r = await srv.api("POST", "/api/seo/campaigns", admin, { environment_id: env.id, target: "wordpress", ...body });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return r.body.data;
  };
  await made({ name: "Empty one" });
  for (let i = 1; i <= 50; i++) await made({ name: `Filler ${i}` });
  // 50 more strategies of the four keywords there are before the import.
  for (let i = 1; i <= 50; i++) {
    // Three builds may be queued at once: a 409 waits for one to end.
    let r;
    await waitFor(async () => {
      r = await srv.api("POST", "/api/seo/strategies", admin, { environment_id: env.id, name: `Plan ${i}`, method: "lexical" });
      return r.status !== 409;
    }, 30_000, `strategy ${i} queued`);
    assert.equal(r.status, 202, JSON.stringify(r.body));
  }
  const lines = ["Keyword,Volume,Difficulty,CPC"];
  for (let i = 1; i <= 201; i++) lines.push(`lawn care ${String(i).padStart(3, "0")},${i},5,0.10`);
  await importKeywords(srv, admin, env.id, "lawn.csv", Buffer.from(lines.join("\n") + "\n"));
  const all = (await srv.api("GET", `/api/seo/keywords?environment_id=${env.id}&q=lawn+care&per_page=200&sort=keyword`, admin)).body.data.items.map((k) => k.id);
  const last = (await srv.api("GET", `/api/seo/keywords?environment_id=${env.id}&q=lawn+care&per_page=200&page=2&sort=keyword`, admin)).body.data.items.map((k) => k.id);
  assert.equal(all.length + last.length, 201);
  const big = await made({ name: "Big lawn", keyword_ids: [...all, ...last] });

  const { page, close } = await openAs(browser, srv, "ed@example.com", `/e/${env.id}/campaigns`);
  const campaigns = page.getByRole("table", { name: "Campaigns of this environment" });
  await page.getByText("54 campaigns", { exact: true }).waitFor();
  const pager = page.getByRole("navigation", { name: "Pages of campaigns" });
  await pager.getByText("Page 1 of 2").waitFor();
  assert.equal(await campaigns.getByRole("row").count(), 51, "50 campaigns and the header");
  assert.equal(await campaigns.getByRole("rowheader").first().textContent(), "Big lawn", "the newest first");
  await pager.getByRole("button", { name: "Next page" }).click();
  await pager.getByText("Page 2 of 2").waitFor();
  await campaigns.getByRole("button", { name: "Empty one" }).click();
  const region = page.getByRole("region", { name: "Empty one" });
  await region.getByText("No keyword yet").waitFor();
  const strategies = page.getByRole("navigation", { name: "Pages of strategies" });
  await strategies.getByText("Page 1 of 2").waitFor();
  assert.equal(await page.getByRole("table", { name: "Strategies" }).getByRole("row").count(), 51);
  await page.getByText("51 strategies", { exact: true }).waitFor();
  assert.deepEqual(await axeCheck(page), [], "campaigns paged");
  await region.getByRole("link", { name: "Keywords screen" }).click();
  await page.getByRole("heading", { name: "Keywords", level: 1 }).waitFor();
  await close();

  // A campaign of 201 keywords, opened by its address: 200 a page, the count, no reordering.
  const { page: p2, close: close2 } = await openAs(browser, srv, "ed@example.com", `/e/${env.id}/campaigns?id=${big.id}`);
  const detail = p2.getByRole("region", { name: "Big lawn" });
  await detail.getByText("Keywords 1 to 200 of 201; the order can be changed when the campaign has at most 200.").waitFor();
  assert.equal(await detail.getByRole("listitem").count(), 200);
  assert.equal(await detail.getByRole("button", { name: /^Move up/ }).count(), 0);
  const kwPager = detail.getByRole("navigation", { name: "Pages of the keywords of Big lawn" });
  await kwPager.getByRole("button", { name: "Next page" }).click();
  await detail.getByText("Keywords 201 to 201 of 201; the order can be changed when the campaign has at most 200.").waitFor();
  assert.deepEqual(await detail.getByRole("listitem").allTextContents(), ["lawn care 201 (new) Take out lawn care 201"]);
  assert.equal(await detail.getByRole("list").getAttribute("start"), "201");
  // Taking out the one keyword of the last page goes back to the first; 200 fit a page and can be reordered.
  await detail.getByRole("button", { name: "Take out lawn care 201" }).click();
  await p2.getByText("“lawn care 201” taken out of Big lawn.").waitFor();
  await detail.getByText("200 keywords", { exact: true }).waitFor();
  assert.equal(await detail.getByRole("navigation").count(), 0);
  await detail.getByRole("button", { name: "Move down lawn care 001" }).waitFor();
  await close2();
});
