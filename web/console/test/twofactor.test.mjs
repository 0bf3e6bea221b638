// Sign-in with two-factor authentication on: the password step, then a
// second step for the code (a wrong code shows the server's words), then
// the console; a recovery code works in that step too.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { axeCheck, launch, newPage, PASSWORD, startCopydesk, totp } from "./harness.mjs";

let srv;
let browser;
let recovery;
let secret;
const problems = [];
before(async () => {
  srv = await startCopydesk();
  browser = await launch();
  // Turn 2FA on through the API, as the account screen will. The verify
  // code is the previous 30 s step's (the server allows one step of skew
  // and takes each step once), so the sign-in below can use the current one.
  const t = await srv.login("ann@example.com");
  const setup = await srv.api("POST", "/api/auth/2fa/setup", t.access_token);
  assert.equal(setup.status, 200, JSON.stringify(setup.body));
  secret = setup.body.data.secret;
  const v = await srv.api("POST", "/api/auth/2fa/verify", t.access_token, { code: totp(secret, Date.now() - 30_000), current_password: PASSWORD });
  assert.equal(v.status, 200, JSON.stringify(v.body));
  recovery = v.body.data.recovery_codes;
  assert.ok(recovery.length > 0);
});
after(async () => {
  await browser?.close();
  await srv?.stop();
});

async function passwordStep(page) {
  await page.goto("/");
  await page.getByLabel("E-mail").fill("ann@example.com");
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Two-factor authentication" }).waitFor();
}

test("a code from the authenticator app", async () => {
  const context = await browser.newContext({ baseURL: srv.base });
  const page = await newPage(context, problems);
  await passwordStep(page);
  assert.deepEqual(await axeCheck(page), [], "code step");
  const code = page.getByLabel("Authentication code or recovery code");
  // A code that is not the current one: the server's detail is shown.
  const wrong = String((Number(totp(secret)) + 500_000) % 1_000_000).padStart(6, "0");
  await code.fill(wrong);
  await page.getByRole("button", { name: "Verify" }).click();
  const alert = page.getByRole("alert");
  await alert.waitFor();
  assert.match(await alert.innerText(), /code/i);
  await code.fill(totp(secret));
  await page.getByRole("button", { name: "Verify" }).click();
  await page.getByRole("heading", { name: "Environments" }).waitFor();
  await context.close();
  assert.deepEqual(problems, []);
});

test("a recovery code", async () => {
  const context = await browser.newContext({ baseURL: srv.base });
  const page = await newPage(context, problems);
  await passwordStep(page);
  await page.getByLabel("Authentication code or recovery code").fill(recovery[0]);
  await page.getByRole("button", { name: "Verify" }).click();
  await page.getByRole("heading", { name: "Environments" }).waitFor();
  await context.close();
  assert.deepEqual(problems, []);
});
