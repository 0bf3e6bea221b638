// Backups (super_admin): the empty state, taking one with its progress,
// verifying, the download (fetched with the Authorization header: the
// token in no address), deleting after a confirmation that names the
// backup, and a restore behind a typed confirmation: the database goes back
// to the backup's state, every session ends and the sign-in dialog asks
// again over the screen, which then lists the safety backup.
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { axeCheck, launch, openAs, PASSWORD, startCopydesk, TEAM, waitFor } from "./harness.mjs";

let srv;
let browser;
before(async () => {
  srv = await startCopydesk({ users: TEAM });
  browser = await launch();
});
after(async () => {
  await browser?.close();
  await srv?.stop();
});

const envNames = async () => {
  const t = (await srv.login("ann@example.com")).access_token;
  return (await srv.api("GET", "/api/environments", t)).body.data.items.map((e) => e.name).sort();
};

test("take, verify, download, delete and restore a backup", async () => {
  const admin = (await srv.login("ann@example.com")).access_token;
  await srv.api("POST", "/api/environments", admin, { name: "Kept blog" });
  const { page, close } = await openAs(browser, srv, "ann@example.com", "/");
  const urls = [];
  page.on("request", (r) => urls.push(r.url()));
  await page.getByRole("link", { name: "Backups" }).click();
  await page.getByRole("heading", { name: "Backups", level: 1 }).waitFor();
  await page.getByText(/No backups yet\. Take the first one/).waitFor();
  assert.deepEqual(await axeCheck(page), [], "backups, empty");

  // Take one: progress while the server copies and checks it (the request
  // is held back here, so that the progress can be seen), then the row.
  let release;
  const held = new Promise((r) => (release = r));
  await page.route("**/api/backup", async (route) => {
    if (route.request().method() === "POST") await held;
    await route.continue();
  });
  await page.getByRole("button", { name: "Take a backup" }).click();
  await page.getByRole("status").filter({ hasText: "Taking a backup: copying the database and checking it…" }).waitFor();
  await page.getByRole("progressbar", { name: "Taking a backup: copying the database and checking it…" }).waitFor();
  assert.equal(await page.getByRole("button", { name: "Take a backup" }).isDisabled(), true, "one at a time");
  release();
  await page.getByRole("status").filter({ hasText: /Backup copydesk-\d{8}-\d{6}-manual\.db taken \(\d+(\.\d)? [KMG]?B\) and checked\./ }).waitFor();
  const table = page.getByRole("table", { name: "Backups" });
  const row = table.getByRole("row", { name: /copydesk-\d{8}-\d{6}-manual\.db/ });
  assert.equal(await page.getByRole("progressbar").count(), 0);
  await page.unroute("**/api/backup");
  await row.getByText("Checked when taken; not verified since").waitFor();
  const name = (await row.getByRole("rowheader").innerText()).split("\n")[0].trim();
  assert.match(name, /^copydesk-\d{8}-\d{6}-manual\.db$/);
  await row.getByRole("button", { name: `Verify ${name}` }).click();
  await row.getByText(/^Verified .+: intact$/).waitFor();
  assert.deepEqual(await axeCheck(page), [], "backups, listed");
  // The verification is kept: it is still there when the page is loaded again.
  await page.reload();
  await row.getByText(/^Verified .+: intact$/).waitFor();

  const [file] = await Promise.all([page.waitForEvent("download"), row.getByRole("button", { name: `Download ${name}` }).click()]);
  assert.equal(file.suggestedFilename(), name);
  const bytes = await readFile(await file.path());
  assert.equal(bytes.subarray(0, 15).toString("latin1"), "SQLite format 3");
  const token = await page.evaluate(() => JSON.parse(localStorage.getItem("copydesk.session")).access_token);
  assert.ok(urls.some((u) => u.endsWith(`/api/backup/${name}/download`)), "the download was fetched");
  assert.deepEqual(urls.filter((u) => u.includes(token)), [], "the token is in no address");

  // Made after the backup: the restore takes it away.
  await srv.api("POST", "/api/environments", admin, { name: "Lost blog" });
  assert.deepEqual(await envNames(), ["Kept blog", "Lost blog"]);

  // The restore asks for the backup's name, and says what it replaces.
  await row.getByRole("button", { name: `Restore… ${name}` }).click();
  const ask = row.getByRole("alertdialog", { name: `Restore ${name}` });
  await ask.getByText(/This replaces the whole database/).waitFor();
  await ask.getByText(/Every session ends, yours included/).waitFor();
  const go = ask.getByRole("button", { name: "Restore this backup" });
  assert.equal(await go.isDisabled(), true, "not before the name is typed");
  await ask.getByLabel(`Type ${name} to confirm`).fill(name.slice(0, -1));
  assert.equal(await go.isDisabled(), true, "not with another name");
  assert.deepEqual(await axeCheck(page), [], "restore confirmation");
  await ask.getByLabel(`Type ${name} to confirm`).fill(name);
  // While it runs: the stage of the moment, a progress bar and the stages
  // in order (the request is held back here until they have been seen).
  let go2;
  const restoreHeld = new Promise((r) => (go2 = r));
  await page.route(`**/api/backup/${name}/restore`, async (route) => {
    await restoreHeld;
    await route.continue();
  });
  await go.click();
  await page.getByRole("status").filter({ hasText: `Restoring ${name}: checking the file…` }).waitFor();
  await page.getByRole("progressbar", { name: `Restoring ${name}` }).waitFor();
  assert.equal(await page.getByRole("list", { name: "Stages of the restore" }).getByRole("listitem").first().innerText(), "Checking the file — now");
  assert.deepEqual(await axeCheck(page), [], "a restore under way");
  go2();

  // Every session ended: the dialog asks again over the screen, which says
  // what was restored and where the previous state is kept.
  const dialog = page.getByRole("dialog", { name: "Sign in to copydesk" });
  await dialog.getByText(new RegExp(`restored from ${name.replace(/\./g, "\\.")}`)).waitFor();
  assert.equal(await page.getByText(new RegExp(`Restored ${name.replace(/\./g, "\\.")}\\. The database as it was just before is kept as copydesk-\\d{8}-\\d{6}-pre-restore\\.db`)).count(), 1);
  assert.deepEqual(await envNames(), ["Kept blog"]);
  // Each stage the server told is marked done, in order.
  const told = page.getByRole("list", { name: "Stages of the restore" }).getByRole("listitem");
  assert.deepEqual(await told.allInnerTexts(), [
    "Checking the file — done",
    "Waiting for requests in flight — done",
    "Keeping a safety copy of the current database — done",
    "Putting the backup in place — done",
    "Checking and listing the safety copy — done",
  ]);
  await dialog.getByLabel("Password").fill(PASSWORD);
  await dialog.getByRole("button", { name: "Sign in" }).click();
  await dialog.waitFor({ state: "hidden" });
  const safety = table.getByRole("row", { name: /pre-restore\.db/ });
  await safety.getByText("Before a restore").waitFor();

  // Delete the safety backup after a confirmation that names it.
  const safetyName = (await safety.getByRole("rowheader").innerText()).split("\n")[0].trim();
  await safety.getByRole("button", { name: `Delete… ${safetyName}` }).click();
  const del = safety.getByRole("alertdialog", { name: `Delete ${safetyName}` });
  await del.getByText(new RegExp(`Delete the backup ${safetyName.replace(/\./g, "\\.")} \\(`)).waitFor();
  await del.getByRole("button", { name: "Delete the backup" }).click();
  await page.getByRole("status").filter({ hasText: `Backup ${safetyName} deleted.` }).waitFor();
  await table.getByRole("row", { name: /pre-restore\.db/ }).waitFor({ state: "detached" });
  await table.getByRole("row", { name: new RegExp(name.replace(/\./g, "\\.")) }).waitFor();
  await close();
});

test("a damaged backup's verification is kept and says so", async () => {
  const root = (await srv.login("ann@example.com")).access_token;
  const made = await srv.api("POST", "/api/backup", root);
  assert.equal(made.status, 201);
  const name = made.body.data.name;
  const path = join(srv.dataDir, "backups", name);
  const bytes = await readFile(path);
  bytes[bytes.length - 100] ^= 0xff;
  await writeFile(path, bytes);
  const { page, close } = await openAs(browser, srv, "ann@example.com", "/admin/backups");
  const row = page.getByRole("table", { name: "Backups" }).getByRole("row", { name: new RegExp(name.replace(/\./g, "\\.")) });
  await row.getByText("Checked when taken; not verified since").waitFor();
  await row.getByRole("button", { name: `Verify ${name}` }).click();
  await row.getByText(/^Damaged \(verified .+\): .+/).waitFor();
  await page.reload();
  await row.getByText(/^Damaged \(verified .+\)$/).waitFor();
  assert.deepEqual(await axeCheck(page), [], "backups, damaged");
  assert.equal((await srv.api("DELETE", `/api/backup/${name}`, root)).status, 200);
  await close();
});

test("upload a backup file with its progress; one that is not a backup is refused beside the field", async () => {
  const root = (await srv.login("ann@example.com")).access_token;
  const made = await srv.api("POST", "/api/backup", root);
  assert.equal(made.status, 201);
  const bytes = await readFile(join(srv.dataDir, "backups", made.body.data.name));
  const { page, close } = await openAs(browser, srv, "ann@example.com", "/admin/backups");
  const file = page.getByLabel("Backup file (.db)");
  await page.getByRole("heading", { name: "Upload a backup", level: 2 }).waitFor();
  assert.deepEqual(await axeCheck(page), [], "backups, upload and schedule");

  // Held back here so that the progress can be seen.
  let release;
  const held = new Promise((r) => (release = r));
  await page.route("**/api/backup/upload", async (route) => {
    await held;
    await route.continue();
  });
  await file.setInputFiles({ name: "from-elsewhere.db", mimeType: "application/vnd.sqlite3", buffer: bytes });
  await page.getByRole("progressbar", { name: /^Uploading from-elsewhere\.db: \d+%$/ }).waitFor();
  assert.equal(await file.isDisabled(), true, "one upload at a time");
  release();
  await page.getByRole("status").filter({ hasText: /^Backup copydesk-\d{8}-\d{6}-uploaded\.db uploaded \(.+\) and checked\.$/ }).waitFor();
  const row = page.getByRole("table", { name: "Backups" }).getByRole("row", { name: /-uploaded\.db/ });
  await row.getByRole("cell", { name: "Uploaded", exact: true }).waitFor();
  assert.equal(await page.getByRole("progressbar").count(), 0);

  await file.setInputFiles({ name: "notes.db", mimeType: "application/octet-stream", buffer: Buffer.from("not a database at all ".repeat(20)) });
  await waitFor(async () => (await file.getAttribute("aria-invalid")) === "true");
  assert.equal(await page.getByRole("table", { name: "Backups" }).getByRole("row", { name: /-uploaded\.db/ }).count(), 1, "nothing more listed");
  await close();
});

test("change the backup schedule; the server's words beside the field", async () => {
  const { page, close } = await openAs(browser, srv, "ann@example.com", "/admin/backups");
  const form = page.getByRole("form", { name: "Schedule" });
  await form.getByLabel("Take backups on a schedule").waitFor();
  assert.equal(await form.getByLabel("Take backups on a schedule").isChecked(), false);
  await page.getByText("Scheduled backups are off.").waitFor();
  await form.getByLabel("Take backups on a schedule").check();
  const when = form.getByLabel("When (UTC)");
  await when.fill("* * * * *");
  await form.getByRole("button", { name: "Save the schedule" }).click();
  await waitFor(async () => (await when.getAttribute("aria-invalid")) === "true");
  await form.getByText(/runs every 1m0s; the shortest interval allowed is 5m0s/i).waitFor();
  assert.deepEqual(await axeCheck(page), [], "schedule, refused");

  await when.fill("@every 6h");
  await form.getByLabel("Scheduled backups kept").fill("3");
  await form.getByRole("button", { name: "Save the schedule" }).click();
  await page.getByRole("status").filter({ hasText: "The backup schedule is saved." }).waitFor();
  await page.getByText(/Scheduled backups: @every 6h \(UTC\), keeping the last 3; next /).waitFor();
  const root = (await srv.login("ann@example.com")).access_token;
  const saved = (await srv.api("GET", "/api/backup/schedule", root)).body.data;
  assert.deepEqual([saved.enabled, saved.spec, saved.retention], [true, "@every 6h", 3]);
  await close();
});

test("an editor has no backups", async () => {
  const { page, close } = await openAs(browser, srv, "ed@example.com", "/admin/backups");
  await page.getByRole("heading", { name: "Backups", level: 1 }).waitFor();
  await page.getByText(/Backups are kept by super administrators/).waitFor();
  assert.equal(await page.getByRole("link", { name: "Backups" }).count(), 0);
  assert.equal(await page.getByRole("button", { name: "Take a backup" }).count(), 0);
  assert.deepEqual(await axeCheck(page), [], "backups, editor");
  await close();
});
