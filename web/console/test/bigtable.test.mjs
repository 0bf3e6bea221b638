// 10,000 keywords: the Keywords table holds one page of rows in the
// document, and each page, the last page, an order and a filter is one
// request to the server; the screen keeps answering input while they run.
// Timings are reported (console.log), not asserted: the machine is shared.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { axeCheck, grantAll, importKeywords, launch, openAs, startCopydesk, TEAM, waitFor } from "./harness.mjs";

const N = 10_000;
let srv;
let browser;
let env;
before(async () => {
  srv = await startCopydesk({ users: TEAM });
  browser = await launch();
  const admin = (await srv.login("ann@example.com")).access_token;
  env = (await srv.api("POST", "/api/environments", admin, { name: "Big shop" })).body.data;
  await grantAll(srv, admin, env.id);
  // One import of a 10,000-row export (keyword i has volume i * 10).
  const lines = ["Keyword,Volume,Difficulty,CPC"];
  for (let i = 1; i <= N; i++) lines.push(`shoe keyword ${String(i).padStart(5, "0")},${i * 10},${i % 101},0.${String(i % 100).padStart(2, "0")}`);
  const t0 = Date.now();
  const r = await importKeywords(srv, admin, env.id, "big.csv", Buffer.from(lines.join("\n") + "\n"));
  assert.equal(r.imported, N, JSON.stringify(r));
  console.log(`import of ${N} keywords: ${Date.now() - t0} ms`);
});
after(async () => {
  await browser?.close();
  await srv?.stop();
});

test("10,000 keywords page, sort and filter on the server, one page in the document", async () => {
  const { page, close } = await openAs(browser, srv, "ed@example.com", `/e/${env.id}/keywords`);
  const asked = [];
  page.on("request", (r) => {
    const u = new URL(r.url());
    if (u.pathname === "/api/seo/keywords") asked.push(Object.fromEntries(u.searchParams));
  });
  // Long tasks on the page's main thread, reported at the end.
  await page.evaluate(() => {
    window.__long = [];
    new PerformanceObserver((l) => window.__long.push(...l.getEntries().map((e) => e.duration))).observe({ type: "longtask", buffered: true });
  });
  const table = page.getByRole("table", { name: "Keywords of this environment" });
  const first = () => table.getByRole("rowheader").first().textContent();
  await page.getByText("10,000 keywords", { exact: true }).waitFor({ timeout: 30_000 });
  await page.getByText("Page 1 of 200").waitFor();
  const rows = async () => table.getByRole("row").count();
  assert.equal(await rows(), 51, "one page of 50 rows and the header row");
  assert.equal(await page.locator("tr").count(), 51, "no other row anywhere in the document");

  // step does something, waits for the first row to be want, and says
  // how long it took and which request answered it.
  async function step(what, act, want, check, n = 51) {
    const before = asked.length;
    const t0 = Date.now();
    await act();
    await waitFor(async () => (await first()) === want, 20_000, `${what}: first row ${want}`);
    const ms = Date.now() - t0;
    const sent = asked.slice(before);
    assert.ok(sent.length >= 1, `${what}: a request to the server`);
    check(sent.at(-1));
    assert.equal(await rows(), n, `${what}: one page in the document`);
    console.log(`${what}: ${ms} ms, ${sent.length} request(s), last ${JSON.stringify(sent.at(-1))}`);
  }

  await step("next page", () => page.getByRole("button", { name: "Next page" }).click(), "shoe keyword 00051", (q) => assert.equal(q.page, "2"));
  await page.getByText("Page 2 of 200").waitFor();
  await step("last page", () => page.getByRole("button", { name: "Last page" }).click(), "shoe keyword 09951", (q) => assert.equal(q.page, "200"));
  await page.getByText("Page 200 of 200").waitFor();
  assert.equal(await page.getByRole("button", { name: "Next page" }).isDisabled(), true);
  await step("first page", () => page.getByRole("button", { name: "First page" }).click(), "shoe keyword 00001", (q) => assert.equal(q.page, "1"));

  await step("sort by volume", () => page.getByRole("button", { name: "Volume" }).click(), "shoe keyword 10000", (q) => {
    assert.equal(q.sort, "-search_volume");
    assert.equal(q.page, "1");
  });
  await step("last page by volume", () => page.getByRole("button", { name: "Last page" }).click(), "shoe keyword 00050", (q) => {
    assert.equal(q.sort, "-search_volume");
    assert.equal(q.page, "200");
  });

  // Typing stays immediate while the filter's requests run.
  const search = page.getByRole("searchbox", { name: "Search" });
  const t0 = Date.now();
  await search.pressSequentially("keyword 0999", { delay: 20 });
  assert.equal(await search.inputValue(), "keyword 0999");
  console.log(`typing 12 characters: ${Date.now() - t0} ms`);
  await step("text filter", async () => {}, "shoe keyword 09999", (q) => {
    assert.equal(q.q, "keyword 0999");
    assert.equal(q.page, "1");
  }, 11);
  await page.getByText("10 keywords", { exact: true }).waitFor();
  assert.equal(await rows(), 11);
  assert.equal(await page.getByRole("navigation", { name: "Pages of keywords" }).count(), 0);

  await search.fill("");
  await page.getByText("10,000 keywords", { exact: true }).waitFor();
  await page.getByLabel("Rows per page").selectOption("200");
  await page.getByText("Page 1 of 50").waitFor();
  await waitFor(async () => (await rows()) === 201, 20_000, "200 rows");
  assert.equal(asked.at(-1).per_page, "200");

  // The page still answers at once: a round trip through its main thread.
  const t1 = Date.now();
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r())));
  console.log(`a frame after 200 rows: ${Date.now() - t1} ms`);
  const long = await page.evaluate(() => window.__long);
  console.log(`long tasks: ${long.length}, longest ${Math.round(Math.max(0, ...long))} ms; requests to /api/seo/keywords: ${asked.length}`);
  assert.deepEqual(await axeCheck(page), [], "10,000 keywords");
  await close();
});
