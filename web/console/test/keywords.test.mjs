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

  // Dropping an export on the screen: one keyword updated, one new.
  const dt = await page.evaluateHandle((text) => {
    const d = new DataTransfer();
    d.items.add(new File([text], "semrush-like.csv", { type: "text/csv" }));
    return d;
  }, ahrefs([["garden tip 01", "9999", "7", "1.00"], ["compost bins", "880", "20", "0.90"]]).toString("utf8"));
  const screen = page.getByRole("heading", { name: "Keywords", level: 1 }); // the drop bubbles to the screen
  await screen.dispatchEvent("dragover", { dataTransfer: dt });
  await screen.dispatchEvent("drop", { dataTransfer: dt });
  await page.getByText("Ahrefs export, 2 rows: 1 imported, 1 updated, 0 rejected.").waitFor();
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

test("an upload shows its progress; an export the server cannot read: its detail beside the file field", async () => {
  const { page, close } = await openAs(browser, srv, "ed@example.com", `/e/${env.id}/keywords`);
  // The upload is held back here, so its progress can be seen on screen.
  let release;
  const held = new Promise((r) => (release = r));
  await page.route("**/api/seo/keywords/import", async (route) => {
    await held;
    await route.continue();
  });
  const file = page.getByLabel("Keyword export (CSV)");
  await file.setInputFiles({ name: "notes.csv", mimeType: "text/csv", buffer: Buffer.from("hello,world\n1,2\n") });
  await page.getByRole("progressbar", { name: /^Uploading notes\.csv: \d+%$/ }).waitFor();
  assert.equal(await file.isDisabled(), true, "one upload at a time");
  release();
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

