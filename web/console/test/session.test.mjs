// A session the server ends (revoked from elsewhere) brings the sign-in
// back with the server's words, over the form that failed, which keeps what
// was typed; the server's detail for a field is shown beside that field.
// A server started with 20-second sessions shows the same when a session
// reaches its lifetime while a form is being filled.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { axeCheck, launch, newPage, PASSWORD, startCopydesk } from "./harness.mjs";

let srv;
let browser;
const problems = [];
before(async () => {
  srv = await startCopydesk();
  browser = await launch();
});
after(async () => {
  await browser?.close();
  await srv?.stop();
});

async function signIn(page) {
  await page.goto("/");
  await page.getByLabel("E-mail").fill("ann@example.com");
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Environments" }).waitFor();
}

test("the server's detail beside the field it names", async () => {
  const context = await browser.newContext({ baseURL: srv.base });
  const page = await newPage(context, problems);
  await signIn(page);
  const name = page.getByLabel("Name", { exact: true });
  await name.fill("x".repeat(201));
  await page.getByRole("button", { name: "Create environment" }).click();
  const expected = await srv.api("POST", "/api/environments", (await srv.login("ann@example.com")).access_token, { name: "x".repeat(201) });
  assert.equal(expected.status, 422);
  const [field, words] = expected.body.detail.split(/: (.*)/s);
  assert.equal(field, "name");
  await page.waitForFunction(() => document.querySelector("input[aria-invalid=true]"));
  assert.equal(await name.getAttribute("aria-invalid"), "true");
  const described = await name.getAttribute("aria-describedby");
  const text = await page.locator(`[id="${described}"]`).innerText();
  assert.ok(text.toLowerCase().startsWith(words.toLowerCase().replace(/\.$/, "")), `beside the field: ${text}`);
  assert.deepEqual(await axeCheck(page), [], "form with a field error");
  await context.close();
  assert.deepEqual(problems, []);
});

test("a revoked session asks to sign in again and keeps the form", async () => {
  const context = await browser.newContext({ baseURL: srv.base });
  const page = await newPage(context, problems);
  await signIn(page);
  await page.getByLabel("Name", { exact: true }).fill("Garden blog");
  await page.getByLabel("Description").fill("typed before the session ended");

  // Revoked from another device, through the API.
  const other = await srv.login("ann@example.com");
  const mine = JSON.parse(await page.evaluate(() => localStorage.getItem("copydesk.session")));
  const listed = await srv.api("GET", "/api/auth/sessions", mine.access_token);
  const sid = listed.body.data.items.find((s) => s.current).id;
  assert.equal((await srv.api("DELETE", `/api/auth/sessions/${sid}`, other.access_token)).status, 200);

  await page.getByRole("button", { name: "Create environment" }).click();
  const dialog = page.getByRole("dialog", { name: "Sign in to copydesk" });
  await dialog.waitFor();
  await dialog.getByText(/session was revoked/i).waitFor();
  assert.deepEqual(await axeCheck(page), [], "sign-in dialog");
  // The e-mail is filled in; the password is asked for.
  assert.equal(await dialog.getByLabel("E-mail").inputValue(), "ann@example.com");
  await dialog.getByLabel("Password").fill(PASSWORD);
  await dialog.getByRole("button", { name: "Sign in" }).click();
  await dialog.waitFor({ state: "hidden" });

  // What was typed is still there, and now it saves.
  assert.equal(await page.getByLabel("Name", { exact: true }).inputValue(), "Garden blog");
  assert.equal(await page.getByLabel("Description").inputValue(), "typed before the session ended");
  await page.getByRole("button", { name: "Create environment" }).click();
  await page.getByRole("heading", { name: "Overview of Garden blog" }).waitFor();
  await context.close();
  assert.deepEqual(problems, []);
});

test("a session that expired while the tab was closed", async () => {
  const context = await browser.newContext({ baseURL: srv.base });
  const page = await newPage(context, problems);
  await signIn(page);
  await page.evaluate(() => {
    const s = JSON.parse(localStorage.getItem("copydesk.session"));
    s.expires_at = new Date(Date.now() - 1000).toISOString();
    localStorage.setItem("copydesk.session", JSON.stringify(s));
  });
  await page.reload();
  await page.getByRole("heading", { name: "Sign in to copydesk" }).waitFor();
  await page.getByText("Your session expired: sign in again.").waitFor();
  await context.close();
  assert.deepEqual(problems, []);
});

test("tabs share the session: signing out in one asks in the other, signing in there serves both", async () => {
  const context = await browser.newContext({ baseURL: srv.base });
  const a = await newPage(context, problems);
  await signIn(a);
  const b = await newPage(context, problems);
  await b.goto("/");
  await b.getByRole("heading", { name: "Environments" }).waitFor();

  await a.getByRole("button", { name: "Sign out" }).click();
  await a.getByRole("heading", { name: "Sign in to copydesk" }).waitFor();
  const dialog = b.getByRole("dialog", { name: "Sign in to copydesk" });
  await dialog.getByText(/signed out in another tab/i).waitFor();

  await dialog.getByLabel("Password").fill(PASSWORD);
  await dialog.getByRole("button", { name: "Sign in" }).click();
  await dialog.waitFor({ state: "hidden" });
  await a.getByRole("heading", { name: "Environments" }).waitFor();
  await context.close();
  assert.deepEqual(problems, []);
});

test("a session that reaches its lifetime while a form is being filled: sign in again, the form kept", async () => {
  // A server of its own whose sessions last 20 seconds.
  const short = await startCopydesk({ args: ["--session-ttl", "20s", "--token-ttl", "20s"] });
  const context = await browser.newContext({ baseURL: short.base });
  try {
    const page = await newPage(context, problems);
    await signIn(page);
    const signedInAt = Date.now();
    await page.getByLabel("Name", { exact: true }).fill("Kept blog");
    await page.getByLabel("Description").fill("typed while the session ran out");
    // The laptop goes offline (the console's refreshes fail and wait) until
    // the session's lifetime is over; back online, the form is submitted.
    await context.setOffline(true);
    const mine = JSON.parse(await page.evaluate(() => localStorage.getItem("copydesk.session")));
    assert.ok(Date.parse(mine.expires_at) - signedInAt <= 21_000, "the token ends with the session");
    await new Promise((r) => setTimeout(r, Math.max(0, signedInAt + 21_000 - Date.now())));
    const over = await short.api("POST", "/api/auth/refresh", mine.access_token);
    assert.equal(over.status, 401, "the session is over on the server");
    await context.setOffline(false);
    assert.equal(await page.getByRole("dialog", { name: "Sign in to copydesk" }).count(), 0, "nothing asked yet");
    await page.getByRole("button", { name: "Create environment" }).click();

    const dialog = page.getByRole("dialog", { name: "Sign in to copydesk" });
    await dialog.waitFor();
    // The server's words, then that what was typed is kept.
    assert.match(await dialog.innerText(), new RegExp(over.body.detail.slice(0, 30).replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "i"));
    await dialog.getByText(/what you typed on this page is kept/).waitFor();
    assert.deepEqual(await axeCheck(page), [], "sign-in dialog after expiry");
    await dialog.getByLabel("Password").fill(PASSWORD);
    await dialog.getByRole("button", { name: "Sign in" }).click();
    await dialog.waitFor({ state: "hidden" });
    assert.equal(await page.getByLabel("Name", { exact: true }).inputValue(), "Kept blog");
    assert.equal(await page.getByLabel("Description").inputValue(), "typed while the session ran out");
    await page.getByRole("button", { name: "Create environment" }).click();
    await page.getByRole("heading", { name: "Overview of Kept blog" }).waitFor();
  } finally {
    await context.close();
    await short.stop();
  }
  assert.deepEqual(problems, []);
});
