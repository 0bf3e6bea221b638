// The environment chooser lists the environments the user can see; the
// address carries the environment and the screen, so a link opens that
// screen in another tab, after a reload, or after signing in.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { axeCheck, launch, newPage, PASSWORD, startCopydesk } from "./harness.mjs";

let srv;
let browser;
let garden;
let kitchen;
const problems = [];
before(async () => {
  srv = await startCopydesk({
    users: [
      { email: "ann@example.com", username: "ann", role: "super_admin" },
      { email: "vic@example.com", username: "vic", role: "viewer" },
    ],
  });
  browser = await launch();
  const tok = (await srv.login("ann@example.com")).access_token;
  garden = (await srv.api("POST", "/api/environments", tok, { name: "Garden blog", description: "plants" })).body.data;
  kitchen = (await srv.api("POST", "/api/environments", tok, { name: "Kitchen blog" })).body.data;
  const users = await srv.api("GET", "/api/auth/users?q=vic", tok);
  const vic = users.body.data.items.find((u) => u.username === "vic");
  const r = await srv.api("PUT", `/api/auth/users/${vic.id}/environments`, tok, { environment_ids: [kitchen.id] });
  assert.equal(r.status, 200, JSON.stringify(r.body));
});
after(async () => {
  await browser?.close();
  await srv?.stop();
});

async function signIn(page, email, path = "/") {
  await page.goto(path);
  await page.getByLabel("E-mail").fill(email);
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in" }).click();
}

test("choose an environment, move between its screens, open a link in another tab", async () => {
  const context = await browser.newContext({ baseURL: srv.base });
  const page = await newPage(context, problems);
  await signIn(page, "ann@example.com");
  await page.getByRole("heading", { name: "Environments" }).waitFor();
  await page.getByRole("link", { name: "Kitchen blog" }).waitFor();
  await page.getByRole("link", { name: "Garden blog" }).click();
  await page.getByRole("heading", { name: "Overview of Garden blog" }).waitFor();
  assert.equal(new URL(page.url()).pathname, `/e/${garden.id}`);
  await page.getByRole("heading", { name: "Autopilot" }).waitFor();
  await page.getByText("Stopped").waitFor();
  assert.deepEqual(await axeCheck(page), [], "overview");
  // The autopilot's state follows its stream: started and paused elsewhere,
  // the overview shows it without a reload.
  const tok = (await srv.login("ann@example.com")).access_token;
  let r = await srv.api("POST", "/api/autopilot/start", tok, { environment_id: garden.id });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  await page.getByText("Running", { exact: true }).waitFor();
  r = await srv.api("POST", "/api/autopilot/pause", tok, { environment_id: garden.id });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  await page.getByText("Paused (manual)", { exact: true }).waitFor();
  r = await srv.api("POST", "/api/autopilot/stop", tok, { environment_id: garden.id });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  await page.getByText("Stopped", { exact: true }).waitFor();

  const nav = page.getByRole("navigation", { name: "Sections" });
  for (const label of ["Chat", "Live sessions", "Keywords", "Campaigns", "Write", "Posts", "Web sources", "Search phrases", "Autopilot", "Costs"]) {
    await nav.getByRole("link", { name: label }).click();
    await page.getByRole("heading", { name: label, level: 1 }).waitFor();
    assert.equal(await nav.getByRole("link", { name: label }).getAttribute("aria-current"), "page");
    // Chat and Live sessions, with no provider configured here: checked
    // as a user first finds them.
    if (label === "Chat" || label === "Live sessions") assert.deepEqual(await axeCheck(page), [], label);
  }
  assert.deepEqual(await axeCheck(page), [], "costs");
  assert.equal(new URL(page.url()).pathname, `/e/${garden.id}/costs`);
  assert.equal(await page.title(), "Costs · Garden blog · copydesk");
  await page.goBack();
  await page.getByRole("heading", { name: "Autopilot", level: 1 }).waitFor();

  // The same link in another tab of the same browser: same screen, same session.
  const other = await newPage(context, problems);
  await other.goto(`/e/${garden.id}/keywords`);
  await other.getByRole("heading", { name: "Keywords", level: 1 }).waitFor();
  await other.getByText("Garden blog").first().waitFor();
  await other.reload();
  await other.getByRole("heading", { name: "Keywords", level: 1 }).waitFor();

  // Keyboard: the skip link leads to the screen's content.
  await other.keyboard.press("Tab");
  const skip = other.getByRole("link", { name: "Skip to content" });
  assert.equal(await skip.evaluate((el) => el === document.activeElement), true);
  await other.keyboard.press("Enter");
  assert.equal(await other.evaluate(() => document.activeElement?.id), "main");

  // An address that names no screen.
  await other.goto(`/e/${garden.id}/nothing-here`);
  await other.getByRole("heading", { name: "Page not found" }).waitFor();
  assert.deepEqual(await axeCheck(other), [], "not found");
  await context.close();
  assert.deepEqual(problems, []);
});

test("the dark theme passes the same check", async () => {
  const context = await browser.newContext({ baseURL: srv.base, colorScheme: "dark" });
  const page = await newPage(context, problems);
  await page.goto("/");
  await page.getByRole("heading", { name: "Sign in to copydesk" }).waitFor();
  assert.equal(await page.evaluate(() => getComputedStyle(document.body).backgroundColor), "rgb(20, 23, 27)", "dark background");
  assert.deepEqual(await axeCheck(page), [], "sign-in, dark");
  await signIn(page, "ann@example.com", `/e/${garden.id}`);
  await page.getByRole("heading", { name: "Overview of Garden blog" }).waitFor();
  await page.getByText("Stopped").waitFor();
  assert.deepEqual(await axeCheck(page), [], "overview, dark");
  await context.close();
  assert.deepEqual(problems, []);
});

test("a link opened before signing in leads to its screen after", async () => {
  const context = await browser.newContext({ baseURL: srv.base });
  const page = await newPage(context, problems);
  await signIn(page, "ann@example.com", `/e/${kitchen.id}/posts`);
  await page.getByRole("heading", { name: "Posts", level: 1 }).waitFor();
  assert.equal(new URL(page.url()).pathname, `/e/${kitchen.id}/posts`);
  await context.close();
  assert.deepEqual(problems, []);
});

test("a user sees only their environments", async () => {
  const context = await browser.newContext({ baseURL: srv.base });
  const page = await newPage(context, problems);
  await signIn(page, "vic@example.com");
  await page.getByRole("link", { name: "Kitchen blog" }).waitFor();
  assert.equal(await page.getByRole("link", { name: "Garden blog" }).count(), 0);
  // Not an admin: no form to add one.
  assert.equal(await page.getByRole("button", { name: "Create environment" }).count(), 0);
  // Another environment's address says it is not available, as the API does.
  await page.goto(`/e/${garden.id}`);
  await page.getByRole("heading", { name: "Environment not available" }).waitFor();
  await context.close();
  assert.deepEqual(problems, []);
});
