// Costs: after a generation (a local stand-in of the provider), the spend
// per day chart names the total and the day over the daily budget, the
// breakdowns name the model and the source, and the CSV export is a
// download fetched with the Authorization header (the token in no address);
// the breakdown by source is one request (group_by=source).
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, test } from "node:test";
import { axeCheck, grantAll, launch, openAs, startCopydesk, startProvider, TEAM, useProvider, waitFor } from "./harness.mjs";

let srv;
let browser;
let provider;
let env;
before(async () => {
  srv = await startCopydesk({ users: TEAM });
  provider = await startProvider({ reply: () => "TITLE: Basil\nDESCRIPTION: Basil at home.\n---\nSow it warm." });
  browser = await launch();
  const admin = (await srv.login("ann@example.com")).access_token;
  await useProvider(srv, admin, provider);
  env = (await srv.api("POST", "/api/environments", admin, { name: "Garden blog" })).body.data;
  await grantAll(srv, admin, env.id);
  let r = await srv.api("PUT", "/api/autopilot/config", admin, { environment_id: env.id, daily_budget_usd: 0.0001 });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const howTo = (await srv.api("GET", `/api/cie/archetypes?environment_id=${env.id}`, admin)).body.data.items.find((a) => a.builtin === "how-to");
  r = await srv.api("POST", `/api/cie/archetypes/${howTo.id}/generate`, admin, { environment_id: env.id, variables: { keyword: "basil", audience: "cooks" } });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  const id = r.body.data.id;
  await waitFor(async () => (await srv.api("GET", `/api/cie/runs/${id}`, admin)).body.data.status === "succeeded", 10_000, "the generation");
});
after(async () => {
  await browser?.close();
  await srv?.stop();
  await provider?.close();
});

test("spend per day against the budget, the breakdowns, and the CSV as a download", async () => {
  const { page, close } = await openAs(browser, srv, "ed@example.com", `/e/${env.id}/costs`);
  const urls = [];
  page.on("request", (r) => urls.push(r.url()));
  await page.getByRole("heading", { name: "Costs", level: 1 }).waitFor();
  await page.getByRole("img", { name: /^Spend per day: \$0\.\d+ over 30 days, daily budget \$0\.0001, exceeded on 1 day$/ }).waitFor();
  await page.getByRole("table", { name: "By model" }).getByRole("row", { name: /gpt-4o-mini 1 / }).waitFor();
  await page.getByRole("table", { name: "By source" }).getByRole("row", { name: /Write \(archetypes\) 1 / }).waitFor();
  await page.getByRole("table", { name: "By agent" }).getByRole("row", { name: /No agent 1 / }).waitFor();
  await page.getByRole("region", { name: "Budgets" }).getByText(/of \$0\.0001/).waitFor();
  assert.deepEqual(await axeCheck(page), [], "costs");

  const [file] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download the usage as CSV" }).click()]);
  assert.match(file.suggestedFilename(), /^usage-Garden-blog-\d{4}-\d\d-\d\d-to-\d{4}-\d\d-\d\d\.csv$/);
  const csv = await readFile(await file.path(), "utf8");
  assert.match(csv.split("\n")[0], /model/);
  assert.match(csv, /gpt-4o-mini/);
  const token = await page.evaluate(() => JSON.parse(localStorage.getItem("copydesk.session")).access_token);
  assert.ok(urls.some((u) => u.includes("/api/token-analytics/export.csv")), "the export was fetched");
  assert.deepEqual(urls.filter((u) => u.includes(token)), [], "the token is in no address");

  // Seven days: the same spend, in four requests (the series by day,
  // model, agent and source: one for the sources, not one per source).
  urls.length = 0;
  await page.getByLabel("Period").selectOption("7");
  await page.getByRole("img", { name: /over 7 days/ }).waitFor();
  await page.getByRole("table", { name: "By source" }).getByRole("row", { name: /Write \(archetypes\) 1 / }).waitFor();
  const analytics = urls.filter((u) => u.includes("/api/token-analytics/")).map((u) => new URL(u));
  assert.deepEqual(analytics.map((u) => `${u.pathname} ${u.searchParams.get("group_by")}`).sort(),
    ["agent", "day", "model", "source"].map((g) => `/api/token-analytics/series ${g}`));
  await close();
});

test("a viewer sees the costs without the link to change budgets", async () => {
  const { page, close } = await openAs(browser, srv, "vic@example.com", `/e/${env.id}/costs`);
  await page.getByRole("img", { name: /^Spend per day/ }).waitFor();
  assert.equal(await page.getByRole("link", { name: /Change them/ }).count(), 0);
  await close();
});

test("the days are the environment's: its time zone's today, in every request and in the chart", async () => {
  const admin = (await srv.login("ann@example.com")).access_token;
  const tz = "Pacific/Kiritimati"; // UTC+14: its day is not UTC's for 14 hours of each
  const r = await srv.api("PUT", `/api/environments/${env.id}/configuration`, admin, { timezone: tz });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const today = new Intl.DateTimeFormat("en-CA", { timeZone: tz }).format(new Date()); // YYYY-MM-DD
  const { page, close } = await openAs(browser, srv, "ed@example.com", `/e/${env.id}/costs`);
  await page.getByText(`Bars: spend per day (days of ${tz})`).waitFor(); // the first load's requests are done
  const urls = [];
  page.on("request", (q) => urls.push(q.url()));
  await page.reload();
  await page.getByRole("img", { name: /^Spend per day: \$0\.\d+ over 30 days/ }).waitFor();
  await page.getByText(`Bars: spend per day (days of ${tz})`).waitFor();
  const series = urls.filter((u) => u.includes("/api/token-analytics/series")).map((u) => new URL(u).searchParams);
  assert.equal(series.length, 4);
  for (const q of series) {
    assert.equal(q.get("tz"), tz);
    assert.equal(q.get("to"), today);
  }
  // The generation of a moment ago is on the zone's today.
  await page.getByText("The numbers").click();
  await page.getByRole("row", { name: new RegExp(`^${today} \\$0\\.\\d*[1-9]`) }).waitFor();
  await close();
});
