// The overview's additions: drafts waiting for review (each opens its
// post), the last 30 days' spend against the budgets, and a notification
// that opens the screen it is about (a strategy's build, ended); and all
// of it live: a run, a draft and spend made through the API appear without
// a reload.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { axeCheck, grantAll, launch, openAs, startCopydesk, startProvider, startWordPress, TEAM, useProvider, useWordPress, waitFor } from "./harness.mjs";

let srv;
let browser;
let env;
before(async () => {
  srv = await startCopydesk({ users: TEAM });
  browser = await launch();
  const admin = (await srv.login("ann@example.com")).access_token;
  env = (await srv.api("POST", "/api/environments", admin, { name: "Garden blog" })).body.data;
  await grantAll(srv, admin, env.id);
  const ok = (r, status) => assert.equal(r.status, status, JSON.stringify(r.body));
  ok(await srv.api("PUT", "/api/autopilot/config", admin, { environment_id: env.id, daily_budget_usd: 1, monthly_budget_usd: 20 }), 200);
  ok(await srv.api("POST", "/api/wordpress-posts", admin, { environment_id: env.id, title: "Tomato diary", content: "Notes." }), 201);
  for (const keyword of ["tomato pot", "tomato pots balcony"]) ok(await srv.api("POST", "/api/seo/keywords", admin, { environment_id: env.id, keyword }), 201);
});
after(async () => {
  await browser?.close();
  await srv?.stop();
});

test("drafts to review, spend against the budgets, and a notification that opens its screen", async () => {
  const { page, close } = await openAs(browser, srv, "ed@example.com", `/e/${env.id}`);
  await page.getByRole("heading", { name: "Overview of Garden blog" }).waitFor();
  const drafts = page.getByRole("region", { name: "Drafts waiting for review" });
  await drafts.getByRole("link", { name: "Tomato diary" }).waitFor();
  await page.getByRole("img", { name: "Spend in the last 30 days: $0.00 over 30 days, daily budget $1.00, exceeded on 0 days" }).waitFor();
  await page.getByText("This month: $0.00 of the monthly budget of $20.00.").waitFor();
  assert.deepEqual(await axeCheck(page), [], "overview");

  await drafts.getByRole("link", { name: "Tomato diary" }).click();
  await page.getByRole("heading", { name: "Tomato diary", level: 2 }).waitFor();
  await page.getByRole("textbox", { name: "Markdown" }).waitFor();
  assert.match(page.url(), /\/posts\?post=\d+$/);

  // A strategy built by this user ends with a notification about it.
  const tok = (await srv.login("ed@example.com")).access_token;
  const r = await srv.api("POST", "/api/seo/strategies", tok, { environment_id: env.id, name: "Balcony plan", method: "lexical" });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  await page.getByRole("button", { name: "Notifications, 1 unread" }).click({ timeout: 15_000 });
  await page.getByRole("region", { name: "Notifications" }).getByRole("link").first().click();
  await page.getByRole("heading", { name: "Balcony plan", level: 3 }).waitFor();
  assert.equal(new URL(page.url()).pathname + new URL(page.url()).search, `/e/${env.id}/campaigns?strategy=${r.body.data.id}`);
  await page.getByRole("button", { name: "Notifications, 0 unread" }).waitFor();
  await waitFor(async () => (await page.getByRole("region", { name: "Notifications" }).isHidden()), 5000, "the panel to close");
  await close();
});

// Live without reloading: a run started elsewhere (autopilot events), a
// draft made and spend recorded elsewhere (no event the console follows:
// the refresh every 30 s while the tab is visible, its clock run forward).
test("the overview follows runs, drafts and spend made elsewhere without a reload", async () => {
  const provider = await startProvider({ reply: () => "TITLE: Balcony tomatoes\nDESCRIPTION: Grow them high.\n---\nPick a pot. " + "Sun. ".repeat(20) });
  const site = await startWordPress();
  try {
    const admin = (await srv.login("ann@example.com")).access_token;
    const ok = (r, status = 201) => {
      assert.equal(r.status, status, JSON.stringify(r.body));
      return r.body.data;
    };
    await useProvider(srv, admin, provider);
    const live = ok(await srv.api("POST", "/api/environments", admin, { name: "Herb blog" }));
    await grantAll(srv, admin, live.id);
    await useWordPress(srv, admin, live.id, site);
    const agent = ok(await srv.api("POST", "/api/agents", admin, { kind: "writer", name: "Writer", environment_id: live.id }));
    const kw = ok(await srv.api("POST", "/api/seo/keywords", admin, { environment_id: live.id, keyword: "balcony tomatoes" }));
    const howTo = ok(await srv.api("GET", `/api/cie/archetypes?environment_id=${live.id}`, admin), 200).items.find((a) => a.builtin === "how-to");
    ok(await srv.api("POST", "/api/seo/campaigns", admin, { environment_id: live.id, name: "Tomatoes", target: "wordpress", agent_id: agent.id, archetype_id: howTo.id,
      keyword_ids: [kw.id], status: "active", post_status: "draft" }));
    ok(await srv.api("PUT", "/api/autopilot/config", admin, { environment_id: live.id, daily_budget_usd: 100, variables: { audience: "city gardeners" } }), 200);

    const { page, close } = await openAs(browser, srv, "ed@example.com", `/e/${live.id}`);
    await page.clock.install();
    await page.goto(`/e/${live.id}`); // the fake clock's timers from the start; the session is kept
    await page.getByRole("heading", { name: "Overview of Herb blog" }).waitFor();
    const runs = page.getByRole("region", { name: "Last runs" });
    const drafts = page.getByRole("region", { name: "Drafts waiting for review" });
    const spend = page.getByRole("region", { name: "Spend, last 30 days" });
    const autopilot = page.getByRole("region", { name: "Autopilot" });
    await runs.getByText("The autopilot has not run yet.").waitFor();
    await drafts.getByText("No draft is waiting.").waitFor();
    await spend.getByText("Today: $0.00 of the daily budget of $100.00.", { exact: false }).waitFor();

    // A run started through the API: its outcome, its draft and its spend appear.
    ok(await srv.api("POST", "/api/autopilot/run-now", admin, { environment_id: live.id }), 202);
    await runs.getByRole("row", { name: /balcony tomatoes.*succeeded/ }).waitFor({ timeout: 20_000 });
    await drafts.getByRole("link", { name: "Balcony tomatoes" }).waitFor();
    const today = async () => /Today: (\S+) of/.exec(await spend.textContent())[1];
    await waitFor(async () => (await today()) !== "$0.00", 10_000, "spend today to change");
    const afterRun = await today();

    // The next run is shown once the autopilot runs.
    ok(await srv.api("POST", "/api/autopilot/start", admin, { environment_id: live.id }), 200);
    await autopilot.getByText("Running", { exact: true }).waitFor();
    const next = (await srv.api("GET", `/api/autopilot/status?environment_id=${live.id}`, admin)).body.data.next_run_at;
    assert.ok(next, "a next run");
    await waitFor(async () => (await autopilot.locator("time").first().getAttribute("datetime")) === next, 10_000, "the next run");
    ok(await srv.api("POST", "/api/autopilot/stop", admin, { environment_id: live.id }), 200);

    // A draft and a generation made elsewhere raise no event: the next refresh shows them.
    ok(await srv.api("POST", "/api/wordpress-posts", admin, { environment_id: live.id, title: "Basil diary", content: "Notes." }));
    const gen = await srv.api("POST", `/api/cie/archetypes/${howTo.id}/generate`, admin, { environment_id: live.id, variables: { keyword: "basil", audience: "cooks" } });
    assert.equal(gen.status, 202, JSON.stringify(gen.body));
    await waitFor(async () => (await srv.api("GET", `/api/cie/runs/${gen.body.data.id}`, admin)).body.data.status === "succeeded", 15_000, "the generation");
    await page.clock.fastForward(30_000);
    await drafts.getByRole("link", { name: "Basil diary" }).waitFor();
    await waitFor(async () => (await today()) !== afterRun, 10_000, "spend today to grow");
    assert.deepEqual(await axeCheck(page), [], "a live overview");
    await close();
  } finally {
    await provider.close();
    await site.close();
  }
});
