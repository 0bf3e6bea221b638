// Keywords: an editor imports a keyword tool's export by the file picker
// and by dropping it on the screen and reads the report (rejected rows with
// their line numbers and reasons); pages, sorts and filters the table on
// the server; sets the status of selected rows, makes a campaign of them
// and deletes them. A viewer sees the same table with no action.
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
});
after(async () => {
  await browser?.close();
  await srv?.stop();
});

// ahrefs writes an Ahrefs Keywords Explorer export (UTF-8 with its byte
// order mark, commas) of [keyword, volume, difficulty, cpc] rows.
function ahrefs(rows) {
  const header = ["#", "Keyword", "Country", "Difficulty", "Volume", "CPC", "CPS", "Parent Keyword", "Last Update", "SERP Features",
    "Global volume", "Traffic potential", "Global traffic potential", "First seen", "Intents"];
  const q = (v) => (/[",\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v);
  const lines = [header, ...rows.map(([kw, vol, kd, cpc], i) => [String(i + 1), kw, "us", kd, vol, cpc, "1.02", "", "2024-05-28 10:11:12",
    "Sitelinks", "1000", "100", "500", "2015-09-01", "Informational"])];
  return Buffer.from("\ufeff" + lines.map((l) => l.map(q).join(",")).join("\r\n") + "\r\n", "utf8");
}

const csv = (recs, sep = ",") =>
  recs.map((l) => l.map((v) => (v.includes(sep) || /["\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v)).join(sep)).join("\r\n") + "\r\n";

// semrush writes a Semrush Keyword Magic Tool export (UTF-8, no byte order
// mark, commas) of [keyword, intent, volume, difficulty, cpc] rows, as the
// Go import tests do (server/seo/seotest).
function semrush(rows) {
  const header = ["Keyword", "Intent", "Volume", "Trend", "Keyword Difficulty", "CPC (USD)", "Competitive Density", "SERP Features", "Number of Results"];
  return Buffer.from(csv([header, ...rows.map(([kw, intent, vol, kd, cpc]) => [kw, intent, vol, "0.81,0.81,1.00,0.66,0.54,0.54,0.44,0.44,0.54,0.66,0.81,1.00",
    kd, cpc, "0.98", "Sitelinks, Reviews, People also ask", "1230000000"])]), "utf8");
}

// keywordPlanner writes a Google Keyword Planner "Keyword Stats" export:
// UTF-16 little endian with its byte order mark, tabs, two title lines,
// of [keyword, volume (a number or a range), low bid, high bid] rows.
function keywordPlanner(rows) {
  const header = ["Keyword", "Currency", "Segmentation", "Avg. monthly searches", "Three month change", "YoY change", "Competition",
    "Competition (indexed value)", "Top of page bid (low range)", "Top of page bid (high range)", "Ad impression share",
    "Organic impression share", "Organic average position", "In account?", "In plan?", "Searches: Mar 2024", "Searches: Apr 2024", "Searches: May 2024"];
  const lines = ["Keyword Stats 2024-06-01 at 09_15_42", "June 1, 2023 - May 31, 2024", header.join("\t"),
    ...rows.map(([kw, vol, low, high]) => [kw, "USD", "", vol, "0%", "0%", "Low", "12", low, high, "", "", "", "", "", "1000", "1000", "1000"].join("\t"))];
  return Buffer.from("\ufeff" + lines.join("\r\n") + "\r\n", "utf16le");
}

const firstKeyword = (page) => page.getByRole("table", { name: "Keywords of this environment" }).getByRole("rowheader").first().textContent();

test("an editor imports exports, pages, sorts, filters and acts on selected keywords", async () => {
  const { page, close } = await openAs(browser, srv, "ed@example.com", `/e/${env.id}/keywords`);
  await page.getByRole("heading", { name: "Keywords", level: 1 }).waitFor();
  await page.getByText("This environment has no keywords yet.").waitFor();

  // 55 rows and one that cannot be read (line 4: the header is line 1).
  const rows = [];
  for (let i = 1; i <= 55; i++) rows.push([`garden tip ${String(i).padStart(2, "0")}`, String(i * 10), String(i % 100), "0.50"]);
  rows.splice(2, 0, ["broken volume", "lots", "3", "0.1"]);
  await page.getByLabel("Keyword export (CSV)").setInputFiles({ name: "ahrefs.csv", mimeType: "text/csv", buffer: ahrefs(rows) });
  const report = page.getByRole("status").filter({ has: page.getByRole("heading", { name: "Imported ahrefs.csv" }) });
  await report.getByText("Ahrefs export, 56 rows: 55 imported, 0 updated, 1 rejected.").waitFor();
  const left = report.getByRole("table", { name: "Rows left out" });
  const cells = await left.getByRole("row").nth(1).getByRole("cell").allTextContents();
  assert.equal(cells[0], "4");
  assert.equal(cells[1], "broken volume");
  assert.match(cells[2], /volume: "lots" is not a number/);
  await page.getByText("55 keywords", { exact: true }).waitFor();
  assert.deepEqual(await axeCheck(page), [], "keywords with a report");

  // Server-side paging: 50 a page.
  await page.getByText("Page 1 of 2").waitFor();
  await page.getByRole("button", { name: "Next page" }).click();
  await page.getByText("Page 2 of 2").waitFor();
  await waitText(page, "garden tip 51");
  assert.equal(await page.getByRole("button", { name: "Next page" }).isDisabled(), true);

  // Sorting by volume, descending first, goes back to page 1.
  await page.getByRole("button", { name: "Volume" }).click();
  await page.getByText("Page 1 of 2").waitFor();
  await page.getByRole("columnheader", { name: "Volume" }).and(page.locator("[aria-sort=descending]")).waitFor();
  await waitText(page, "garden tip 55");
  await page.getByRole("button", { name: "Volume" }).click();
  await page.getByRole("columnheader", { name: "Volume" }).and(page.locator("[aria-sort=ascending]")).waitFor();
  await waitText(page, "garden tip 01");

  // Dropping a Semrush export on the screen: one keyword updated, one new.
  const dt = await page.evaluateHandle((text) => {
    const d = new DataTransfer();
    d.items.add(new File([text], "semrush.csv", { type: "text/csv" }));
    return d;
  }, semrush([["garden tip 01", "Commercial", "9999", "7", "1.00"], ["compost bins", "Commercial, Transactional", "880", "20", "0.90"]]).toString("utf8"));
  const screen = page.getByRole("heading", { name: "Keywords", level: 1 }); // the drop bubbles to the screen
  await screen.dispatchEvent("dragover", { dataTransfer: dt });
  await screen.dispatchEvent("drop", { dataTransfer: dt });
  await page.getByText("Semrush export, 2 rows: 1 imported, 1 updated, 0 rejected.").waitFor();
  await page.getByText("56 keywords", { exact: true }).waitFor();

  // The intent filter, answered by the server: only the Semrush row says transactional.
  const asked = [];
  page.on("request", (r) => r.url().includes("/api/seo/keywords?") && asked.push(new URL(r.url()).searchParams.get("intent")));
  await page.getByLabel("Intent", { exact: true }).selectOption("transactional");
  await page.getByText("1 keyword", { exact: true }).waitFor();
  assert.equal(await firstKeyword(page), "compost bins");
  assert.ok(asked.includes("transactional"), "the server filters by intent");
  await page.getByRole("row").filter({ hasText: "compost bins" }).getByText("commercial, transactional").waitFor();
  await page.getByLabel("Intent", { exact: true }).selectOption("");
  await page.getByText("56 keywords", { exact: true }).waitFor();

  // Filters: text, then status.
  await page.getByRole("searchbox", { name: "Search" }).fill("tip 0");
  await page.getByText("9 keywords", { exact: true }).waitFor();
  assert.equal(await page.getByText("Page 1 of", { exact: false }).count(), 0, "one page, no pager");

  // Select two rows and plan them.
  await page.getByRole("checkbox", { name: "Select garden tip 02" }).check();
  await page.getByRole("checkbox", { name: "Select garden tip 03" }).check();
  const group = page.getByRole("group", { name: "Selected keywords" });
  await group.getByText("2 keywords selected").waitFor();
  await group.getByLabel("New status").selectOption("planned");
  await group.getByRole("button", { name: "Set status" }).click();
  await page.getByText("Planned: 2 keywords changed.").waitFor();
  await page.getByLabel("Status", { exact: true }).selectOption("planned");
  await page.getByText("2 keywords", { exact: true }).waitFor();

  // Make a campaign of them: its name is required (the server's detail beside the field).
  await page.getByRole("checkbox", { name: "Select all keywords on this page" }).check();
  await group.getByRole("button", { name: "Make a campaign…" }).click();
  await group.getByRole("button", { name: "Create campaign" }).click();
  const name = group.getByRole("textbox", { name: "Campaign name" });
  await waitFor(async () => (await name.getAttribute("aria-invalid")) === "true");
  assert.match(await name.evaluate((el) => document.getElementById(el.getAttribute("aria-describedby")).textContent), /required/i);
  await name.fill("Spring tips");
  await group.getByRole("button", { name: "Create campaign" }).click();
  await page.getByText("Campaign “Spring tips” created with 2 keywords.").waitFor();
  await page.getByRole("row").filter({ hasText: "garden tip 02" }).getByRole("link", { name: /^#\d+$/ }).waitFor();
  assert.deepEqual(await axeCheck(page), [], "keywords filtered");

  // Delete one, after confirming.
  await page.getByRole("checkbox", { name: "Select garden tip 03" }).check();
  await group.getByRole("button", { name: "Delete…" }).click();
  await page.getByRole("alertdialog", { name: "Confirm deletion" }).getByRole("button", { name: "Delete 1 keyword" }).click();
  await page.getByText("Deleted 1 keyword.").waitFor();
  await page.getByText("1 keyword", { exact: true }).waitFor();
  const left1 = (await srv.api("GET", `/api/seo/keywords?environment_id=${env.id}&status=planned`, admin)).body.data.items.map((k) => k.keyword);
  assert.deepEqual(left1, ["garden tip 02"]);
  await close();
});

test("an editor adds selected keywords to an existing campaign, found by its name", async () => {
  const byName = Object.fromEntries((await srv.api("GET", `/api/seo/keywords?environment_id=${env.id}&q=garden+tip+0&per_page=50`, admin)).body.data.items.map((k) => [k.keyword, k.id]));
  const made = await srv.api("POST", "/api/seo/campaigns", admin, { environment_id: env.id, name: "Autumn", target: "wordpress", keyword_ids: [byName["garden tip 05"]] });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  await srv.api("POST", "/api/seo/campaigns", admin, { environment_id: env.id, name: "Winter", target: "astro" });
  const autumn = made.body.data.id;
  const { page, close } = await openAs(browser, srv, "ed@example.com", `/e/${env.id}/keywords`);
  await page.getByRole("row").filter({ hasText: /garden tip [1-5]\d/ }).first().waitFor();
  await page.getByRole("searchbox", { name: "Search" }).fill("tip 0");
  // The search answers after a pause and a new list clears the selection:
  // select once the list is the search's (no "garden tip 1x" to "5x" left).
  await waitFor(async () => (await page.getByRole("row").filter({ hasText: /garden tip [1-5]\d/ }).count()) === 0, 10_000, "the search's list");
  await page.getByRole("checkbox", { name: "Select garden tip 06" }).check();
  await page.getByRole("checkbox", { name: "Select garden tip 07" }).check();
  const group = page.getByRole("group", { name: "Selected keywords" });
  await group.getByRole("button", { name: "Add to campaign…" }).click();
  const form = group.getByRole("form", { name: "Add the selected keywords to a campaign" });
  await form.getByText("3 campaigns.").waitFor();
  await form.getByRole("searchbox", { name: "Find a campaign" }).fill("autu");
  await form.getByText("1 campaign.").waitFor();
  assert.deepEqual(await form.getByRole("combobox", { name: "Campaign" }).getByRole("option").allTextContents(), ["Autumn"]);
  assert.deepEqual(await axeCheck(page), [], "adding to a campaign");
  await form.getByRole("button", { name: "Add 2 keywords" }).click();
  await page.getByText("2 keywords added to “Autumn”.").waitFor();
  const order = (await srv.api("GET", `/api/seo/campaigns/${autumn}/keywords`, admin)).body.data.items.map((k) => k.keyword);
  assert.deepEqual(order, ["garden tip 05", "garden tip 06", "garden tip 07"], "appended in order");
  await page.getByRole("row").filter({ hasText: "garden tip 06" }).getByRole("link", { name: `#${autumn}` }).waitFor();

  // A keyword in another campaign: the server's 409, and nothing added.
  await page.getByRole("checkbox", { name: "Select garden tip 02" }).check();
  await group.getByRole("button", { name: "Add to campaign…" }).click();
  await form.getByRole("searchbox", { name: "Find a campaign" }).fill("Autumn");
  await form.getByText("1 campaign.").waitFor();
  await form.getByRole("button", { name: "Add 1 keyword" }).click();
  await form.getByRole("alert").waitFor();
  assert.match(await form.getByRole("alert").textContent(), /campaign/i);
  assert.equal((await srv.api("GET", `/api/seo/campaigns/${autumn}/keywords`, admin)).body.data.total, 3);
  await close();
});

test("a Keyword Planner export by the file picker: ranges of volume, bids as the CPC", async () => {
  const { page, close } = await openAs(browser, srv, "ed@example.com", `/e/${env.id}/keywords`);
  await page.getByRole("table", { name: "Keywords of this environment" }).waitFor();
  const rows = [["seed trays", "1K – 10K", "0.40", "1.20"], ["Raised  Beds", "1000", "0.50", ""], ["worm farm", "lots", "", ""]];
  await page.getByLabel("Keyword export (CSV)").setInputFiles({ name: "Keyword Stats.csv", mimeType: "text/csv", buffer: keywordPlanner(rows) });
  const report = page.getByRole("status").filter({ has: page.getByRole("heading", { name: "Imported Keyword Stats.csv" }) });
  await report.getByText("Google Keyword Planner export, 3 rows: 2 imported, 0 updated, 1 rejected.").waitFor();
  // Line 6: two title lines and the header come first.
  const cells = await report.getByRole("table", { name: "Rows left out" }).getByRole("row").nth(1).getByRole("cell").allTextContents();
  assert.deepEqual(cells.slice(0, 2), ["6", "worm farm"]);
  await page.getByRole("searchbox", { name: "Search" }).fill("seed trays");
  const row = page.getByRole("row").filter({ hasText: "seed trays" });
  await row.getByText("1,000–10,000").waitFor();
  await row.getByText("0.80 USD").waitFor();
  await page.getByRole("searchbox", { name: "Search" }).fill("raised beds");
  await page.getByRole("row").filter({ hasText: "raised beds" }).getByText("1,000", { exact: true }).waitFor();
  await close();
});

test("an upload's progress moves while it is sent; an export the server cannot read: its detail beside the file field", async () => {
  const { page, close } = await openAs(browser, srv, "ed@example.com", `/e/${env.id}/keywords`);
  await page.getByRole("table", { name: "Keywords of this environment" }).waitFor();
  // A 1.3 MB export sent at 256 KB/s (the browser's own throttling): every
  // row is rejected, so the whole file is read and nothing is imported.
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("Network.enable");
  await cdp.send("Network.emulateNetworkConditions", { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: 256 * 1024 });
  const big = [];
  for (let i = 0; i < 10_000; i++) big.push([`slow upload keyword ${i}`, "lots", "1", "0.10"]);
  const file = page.getByLabel("Keyword export (CSV)");
  await file.setInputFiles({ name: "big.csv", mimeType: "text/csv", buffer: ahrefs(big) });
  const bar = page.getByRole("progressbar", { name: /^Uploading big\.csv: \d+%$/ });
  await bar.waitFor();
  assert.equal(await file.isDisabled(), true, "one upload at a time");
  const seen = new Set();
  const names = new Set();
  while ((await bar.count()) > 0) {
    try {
      seen.add(await bar.evaluate((el) => el.value, undefined, { timeout: 500 }));
      names.add(await bar.evaluate((el) => el.labels[0].textContent, undefined, { timeout: 500 }));
    } catch {
      // gone between the count and the read
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const between = [...seen].filter((v) => v > 0 && v < 1);
  console.log(`upload progress values seen: ${[...names].join(" | ")}`);
  assert.ok(between.length >= 2, `progress moved through values between 0 and 1, saw ${[...seen].join(", ")}`);
  assert.ok([...names].some((n) => /: [1-9]\d*%$/.test(n)), "a percentage above 0 was shown");
  await page.getByText("Ahrefs export, 10,000 rows: 0 imported, 0 updated, 10,000 rejected.").waitFor();
  await cdp.send("Network.emulateNetworkConditions", { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });

  await file.setInputFiles({ name: "notes.csv", mimeType: "text/csv", buffer: Buffer.from("hello,world\n1,2\n") });
  await waitFor(async () => (await file.getAttribute("aria-invalid")) === "true");
  assert.equal(await page.getByRole("progressbar").count(), 0);
  await page.getByText(/no header with a Keyword column/i).waitFor();
  await close();
});

test("a viewer sees the keywords with no action", async () => {
  const { page, close } = await openAs(browser, srv, "vic@example.com", `/e/${env.id}/keywords`);
  await page.getByRole("table", { name: "Keywords of this environment" }).waitFor();
  assert.equal(await page.getByRole("heading", { name: "Import an export" }).count(), 0);
  assert.equal(await page.getByRole("checkbox").count(), 0);
  assert.equal(await page.getByLabel("Keyword export (CSV)").count(), 0);
  assert.deepEqual(await axeCheck(page), [], "keywords, viewer");
  await close();
});

async function waitText(page, kw) {
  await waitFor(async () => (await firstKeyword(page)) === kw, 5000, `first row ${kw}`);
}

