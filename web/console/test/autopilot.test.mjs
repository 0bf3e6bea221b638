// The autopilot: an editor's configuration with the server's 422 shown at
// the field it names, start, pause, resume and stop, and a run started
// with "Run now" whose steps appear as they happen (local stand-ins of the
// provider and the WordPress site); a viewer sees it all with no action.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { axeCheck, grantAll, launch, openAs, startCopydesk, startProvider, startWordPress, TEAM, useProvider, useWordPress, waitFor } from "./harness.mjs";

let srv;
let browser;
let provider;
let site;
let env;
let admin;
before(async () => {
  srv = await startCopydesk({ users: TEAM });
  provider = await startProvider({ reply: () => "TITLE: Balcony tomatoes\nDESCRIPTION: Grow them high.\n---\nPick a pot. Water it. " + "Sun. ".repeat(30), every: 20 });
  site = await startWordPress();
  browser = await launch();
  admin = (await srv.login("ann@example.com")).access_token;
  await useProvider(srv, admin, provider);
  env = (await srv.api("POST", "/api/environments", admin, { name: "Garden blog" })).body.data;
  await grantAll(srv, admin, env.id);
  await useWordPress(srv, admin, env.id, site);
  const ok = (r, status = 201) => {
    assert.equal(r.status, status, JSON.stringify(r.body));
    return r.body.data;
  };
  const agent = ok(await srv.api("POST", "/api/agents", admin, { kind: "writer", name: "Writer", environment_id: env.id }));
  const kw = ok(await srv.api("POST", "/api/seo/keywords", admin, { environment_id: env.id, keyword: "balcony tomatoes" }));
  const howTo = ok(await srv.api("GET", `/api/cie/archetypes?environment_id=${env.id}`, admin), 200).items.find((a) => a.builtin === "how-to");
  ok(await srv.api("POST", "/api/seo/campaigns", admin, { environment_id: env.id, name: "Tomatoes", target: "wordpress", agent_id: agent.id, archetype_id: howTo.id,
    keyword_ids: [kw.id], status: "active", post_status: "draft" }));
});
after(async () => {
  await browser?.close();
  await srv?.stop();
  await provider?.close();
  await site?.close();
});

test("an editor configures the autopilot, drives it, and watches a run's steps", async () => {
  const { page, close } = await openAs(browser, srv, "ed@example.com", `/e/${env.id}/autopilot`);
  await page.getByRole("heading", { name: "Autopilot", level: 1 }).waitFor();
  const state = page.getByRole("region", { name: "State" });
  await state.getByText("Stopped", { exact: true }).waitFor();

  // The server's detail beside the field it names.
  const start = page.getByRole("textbox", { name: "Window start" });
  await start.fill("25:00");
  await page.getByRole("button", { name: "Save the configuration" }).click();
  await waitFor(async () => (await start.getAttribute("aria-invalid")) === "true");
  const detail = await start.evaluate((el) => el.getAttribute("aria-describedby").split(" ").map((id) => document.getElementById(id).textContent).join(" "));
  assert.match(detail, /HH:MM/);
  assert.deepEqual(await axeCheck(page), [], "autopilot with an error");
  await start.fill("00:00");
  await page.getByRole("spinbutton", { name: "Daily budget" }).fill("5");
  await page.getByRole("textbox", { name: "Value of audience" }).fill("city gardeners");
  await page.getByRole("checkbox", { name: /Tomatoes/ }).check();
  await page.getByRole("button", { name: "Save the configuration" }).click();
  await page.getByText("Configuration saved.").waitFor();
  const cfg = (await srv.api("GET", `/api/autopilot/config?environment_id=${env.id}`, admin)).body.data;
  assert.equal(cfg.daily_budget_usd, 5);
  assert.deepEqual(cfg.variables, { audience: "city gardeners" });
  assert.equal(cfg.campaign_ids.length, 1);
  await state.getByText("$0.00 of $5.00").waitFor();

  // A run now: its steps change on screen as the run goes.
  await state.getByRole("button", { name: "Run now" }).click();
  const steps = page.getByRole("table", { name: "Steps of the current run" });
  await steps.getByRole("row", { name: /Generate the article/ }).getByText(/Under way|Done/).waitFor();
  for (const step of ["Pick a keyword", "Generate the article", "Create the post"]) {
    await steps.getByRole("row", { name: new RegExp(step) }).getByText("Done", { exact: true }).waitFor({ timeout: 20_000 });
  }
  await page.getByText(/“balcony tomatoes”: Succeeded/).waitFor({ timeout: 20_000 });
  assert.deepEqual([...site.posts.values()].map((p) => [p.title, p.status]), [["Balcony tomatoes", "draft"]], "a draft on the site");

  // Start, pause, resume, stop.
  await state.getByRole("button", { name: "Start" }).click();
  await state.getByText("Running", { exact: true }).waitFor();
  await state.getByRole("button", { name: "Pause" }).click();
  await state.getByText("Paused (by hand)", { exact: true }).waitFor();
  await state.getByRole("button", { name: "Resume" }).click();
  await state.getByText("Running", { exact: true }).waitFor();
  await state.getByRole("button", { name: "Stop" }).click();
  await state.getByText("Stopped", { exact: true }).waitFor();
  assert.deepEqual(await axeCheck(page), [], "autopilot after a run");
  await close();
});

test("a viewer sees the autopilot with no action", async () => {
  const { page, close } = await openAs(browser, srv, "vic@example.com", `/e/${env.id}/autopilot`);
  await page.getByRole("region", { name: "State" }).waitFor();
  await page.getByRole("textbox", { name: "Window start" }).waitFor();
  assert.equal(await page.getByRole("textbox", { name: "Window start" }).isDisabled(), true);
  for (const name of ["Start", "Run now", "Save the configuration", "Add a variable"]) assert.equal(await page.getByRole("button", { name }).count(), 0, name);
  await close();
});

test("the form keeps the token budgets set through the API and sets them itself", async () => {
  const cfg = async () => (await srv.api("GET", `/api/autopilot/config?environment_id=${env.id}`, admin)).body.data;
  const before = await cfg();
  const put = await srv.api("PUT", "/api/autopilot/config", admin, { environment_id: env.id, campaign_ids: before.campaign_ids, variables: before.variables,
    daily_budget_usd: 5, daily_budget_tokens: 50000, monthly_budget_tokens: 900000 });
  assert.equal(put.status, 200, JSON.stringify(put.body));

  const { page, close } = await openAs(browser, srv, "ed@example.com", `/e/${env.id}/autopilot`);
  const state = page.getByRole("region", { name: "State" });
  await state.getByText(/ of 50,000$/).waitFor();
  await state.getByText(/ of 900,000$/).waitFor();
  assert.equal(await page.getByRole("spinbutton", { name: "Daily token budget" }).inputValue(), "50000");
  assert.equal(await page.getByRole("spinbutton", { name: "Monthly token budget" }).inputValue(), "900000");

  // Saving after changing something else keeps them.
  await page.getByRole("spinbutton", { name: "Posts per day" }).fill("2");
  await page.getByRole("button", { name: "Save the configuration" }).click();
  await page.getByText("Configuration saved.").waitFor();
  let c = await cfg();
  assert.deepEqual([c.max_posts_per_day, c.daily_budget_tokens, c.monthly_budget_tokens, c.daily_budget_usd], [2, 50000, 900000, 5]);

  // The server's 422 beside the token field it names, then a budget set in the form.
  const monthly = page.getByRole("spinbutton", { name: "Monthly token budget" });
  await monthly.fill("0");
  await page.getByRole("button", { name: "Save the configuration" }).click();
  await waitFor(async () => (await monthly.getAttribute("aria-invalid")) === "true");
  const detail = await monthly.evaluate((el) => el.getAttribute("aria-describedby").split(" ").map((id) => document.getElementById(id).textContent).join(" "));
  assert.match(detail, /greater than 0/);
  assert.deepEqual(await axeCheck(page), [], "autopilot with a token budget error");
  await monthly.fill("2000000");
  await page.getByRole("spinbutton", { name: "Daily token budget" }).fill("");
  await page.getByRole("button", { name: "Save the configuration" }).click();
  await page.getByText("Configuration saved.").waitFor();
  c = await cfg();
  assert.deepEqual([c.daily_budget_tokens, c.monthly_budget_tokens], [null, 2000000]);
  await state.getByText(/ of 2,000,000$/).waitFor();
  await close();
});

test("with no campaign the form links to the Campaigns screen", async () => {
  const other = (await srv.api("POST", "/api/environments", admin, { name: "Empty blog" })).body.data;
  await grantAll(srv, admin, other.id);
  const { page, close } = await openAs(browser, srv, "ed@example.com", `/e/${other.id}/autopilot`);
  await page.getByText(/No campaign in this environment yet/).waitFor();
  await page.getByRole("link", { name: "make one under Campaigns" }).click();
  await page.getByRole("heading", { name: "Campaigns", level: 1 }).waitFor();
  assert.equal(new URL(page.url()).pathname, `/e/${other.id}/campaigns`);
  await close();
});
