// The overview's additions: drafts waiting for review (each opens its
// post), the last 30 days' spend against the budgets, and a notification
// that opens the screen it is about (a strategy's build, ended).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { axeCheck, grantAll, launch, openAs, startCopydesk, TEAM, waitFor } from "./harness.mjs";

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
