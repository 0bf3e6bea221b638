// The bell's unread count follows the notifications stream live: a direct
// message raises a notification, and the count and the list change with no
// reload. Tokens here live 15 s: the console refreshes its token before it
// expires, the stream (which ends with its token) comes back on the new
// one, and a stream cut while notifications are raised resumes from the
// last id it saw, so the list gets them too.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { axeCheck, launch, newPage, PASSWORD, startCopydesk } from "./harness.mjs";

let srv;
let browser;
let bob;
let annId;
const problems = [];
before(async () => {
  srv = await startCopydesk({
    users: [
      { email: "ann@example.com", username: "ann", role: "super_admin" },
      { email: "bob@example.com", username: "bob", role: "admin" },
    ],
    args: ["--token-ttl", "15s"],
  });
  browser = await launch();
  const ann = await srv.login("ann@example.com");
  annId = ann.user.id;
});
after(async () => {
  await browser?.close();
  await srv?.stop();
});

async function message(subject) {
  bob = (await srv.login("bob@example.com")).access_token; // tokens are short here
  const r = await srv.api("POST", "/api/messages", bob, { recipient_id: annId, subject, body: "Please look at the draft <b>today</b>." });
  assert.equal(r.status, 201, JSON.stringify(r.body));
}

const stored = (page) => page.evaluate(() => JSON.parse(localStorage.getItem("copydesk.session") ?? "null"));

test("the bell counts notifications live, across token refreshes and a cut stream", async () => {
  const context = await browser.newContext({ baseURL: srv.base });
  const page = await newPage(context, problems);
  const streamOpened = page.waitForRequest("**/api/notifications/stream");
  await page.goto("/");
  await page.getByLabel("E-mail").fill("ann@example.com");
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("button", { name: "Notifications, 0 unread" }).waitFor();
  await streamOpened;
  const first = await stored(page);

  await message("Draft ready");
  const bell = page.getByRole("button", { name: "Notifications, 1 unread" });
  await bell.waitFor({ timeout: 5000 });
  await bell.click();
  const panel = page.getByRole("region", { name: "Notifications" });
  // Server text is shown as text: the markup in the body stays characters.
  await panel.getByText("New message from bob: Draft ready", { exact: true }).waitFor();
  await panel.getByText("Please look at the draft <b>today</b>.", { exact: true }).waitFor();
  assert.equal(await panel.locator("b").count(), 0);
  assert.deepEqual(await axeCheck(page), [], "notifications panel");
  await panel.getByRole("button", { name: "Mark all as read" }).click();
  await page.getByRole("button", { name: "Notifications, 0 unread" }).waitFor();
  await page.keyboard.press("Escape");
  assert.equal(await panel.isVisible(), false);

  // The stream ends when its token expires; the next connection is refused
  // here until two notifications have been raised.
  let cut;
  const wasCut = new Promise((resolve) => (cut = resolve));
  await page.route("**/api/notifications/stream", (route) => {
    cut();
    return route.abort();
  });
  await wasCut;
  await message("One");
  await message("Two");
  const resumed = page.waitForRequest((r) => r.url().endsWith("/api/notifications/stream") && r.headers()["last-event-id"] !== undefined, { timeout: 20_000 });
  await page.unroute("**/api/notifications/stream");
  const req = await resumed;
  assert.ok(Number(req.headers()["last-event-id"]) > 0);
  await page.getByRole("button", { name: "Notifications, 2 unread" }).waitFor({ timeout: 20_000 });
  await page.getByRole("button", { name: /^Notifications/ }).click();
  await panel.getByText("New message from bob: One", { exact: true }).waitFor();
  await panel.getByText("New message from bob: Two", { exact: true }).waitFor();

  // By now the first token has expired: the console refreshed it in time,
  // and it is still signed in with the new one.
  const now = await stored(page);
  assert.notEqual(now.access_token, first.access_token);
  assert.ok(Date.parse(first.expires_at) < Date.now(), "the first token has expired");
  assert.equal((await srv.api("GET", "/api/auth/me", now.access_token)).status, 200);
  assert.equal(await page.getByRole("dialog").count(), 0);
  await context.close();
  assert.deepEqual(problems.filter((p) => !/ERR_FAILED|Failed to fetch/.test(p)), []);
});
