// Registration from the sign-in page: while closed, the server's words;
// once an admin opens it, a field's refusal beside that field, then the new
// account signed in, with no environment yet (the empty state).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { axeCheck, launch, newPage, startCopydesk, waitFor } from "./harness.mjs";

let srv;
let browser;
before(async () => {
  srv = await startCopydesk();
  browser = await launch();
});
after(async () => {
  await browser?.close();
  await srv?.stop();
});

// described is the text a control's aria-describedby points at.
const described = (control) =>
  control.evaluate((e) => (e.getAttribute("aria-describedby") ?? "").split(" ").map((id) => document.getElementById(id)?.textContent ?? "").join(" "));

test("create an account: refused while closed, then made and signed in with no environment", async () => {
  const problems = [];
  const context = await browser.newContext({ baseURL: srv.base });
  const page = await newPage(context, problems);
  await page.goto("/");
  await page.getByRole("heading", { name: "Sign in to copydesk" }).waitFor();
  await page.getByRole("button", { name: "Create an account" }).click();
  const form = page.getByRole("form", { name: "Create an account" });
  await form.waitFor();
  assert.deepEqual(await axeCheck(page), [], "registration form");
  await form.getByRole("textbox", { name: "Full name" }).fill("Rita Reader");
  await form.getByRole("textbox", { name: "Username" }).fill("rita");
  await form.getByRole("textbox", { name: "E-mail" }).fill("rita@example.com");
  const password = form.getByLabel("Password");
  await password.fill("short");

  // Closed (as a new copydesk is): the server's own words.
  const admin = (await srv.login("ann@example.com")).access_token;
  assert.equal((await srv.api("PUT", "/api/settings/system", admin, { registration_open: false })).status, 200);
  const closed = await srv.api("POST", "/api/auth/register", "", { email: "x@example.com", username: "xavier", password: "long enough password" });
  assert.equal(closed.status, 403);
  await form.getByRole("button", { name: "Create the account" }).click();
  const alert = form.getByRole("alert");
  await alert.waitFor();
  assert.match(await alert.innerText(), new RegExp(closed.body.detail.slice(0, 30), "i"));
  assert.deepEqual(await axeCheck(page), [], "registration refused");

  // Open: a short password is refused beside the field.
  assert.equal((await srv.api("PUT", "/api/settings/system", admin, { registration_open: true })).status, 200);
  await form.getByRole("button", { name: "Create the account" }).click();
  await waitFor(async () => (await password.getAttribute("aria-invalid")) === "true", 10_000, "the password marked");
  assert.match(await described(password), /at least \d+ characters/);
  assert.equal(await alert.count(), 0, "the closed message is gone");

  await password.fill("a long enough password");
  await form.getByRole("button", { name: "Create the account" }).click();
  await page.getByRole("heading", { name: "Environments" }).waitFor();
  await page.getByText("You have no environment yet").waitFor();
  await page.getByRole("link", { name: "Your account: rita" }).waitFor();
  assert.deepEqual(await axeCheck(page), [], "signed in with no environment");
  const token = JSON.parse(await page.evaluate(() => localStorage.getItem("copydesk.session"))).access_token;
  const me = (await srv.api("GET", "/api/auth/me", token)).body.data;
  assert.deepEqual([me.username, me.email, me.full_name, me.role], ["rita", "rita@example.com", "Rita Reader", "viewer"]);

  // The same e-mail again: the server's words.
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByRole("button", { name: "Create an account" }).click();
  await form.getByRole("textbox", { name: "Username" }).fill("rita2");
  await form.getByRole("textbox", { name: "E-mail" }).fill("rita@example.com");
  await password.fill("a long enough password");
  await form.getByRole("button", { name: "Create the account" }).click();
  await form.getByRole("alert").filter({ hasText: /with this email already exists/ }).waitFor();
  await context.close();
  assert.deepEqual(problems, []);
});
