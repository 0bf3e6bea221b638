// Campaigns and strategies: an editor creates a campaign (its name's detail
// beside the field), edits it, builds a strategy, moves a keyword between
// clusters, renames a cluster and makes a campaign of it, its pillar
// first; a viewer sees no action.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { axeCheck, grantAll, launch, openAs, startCopydesk, TEAM, waitFor } from "./harness.mjs";

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
