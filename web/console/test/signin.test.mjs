// Sign in and out: a wrong password shows the server's words; a right one
// opens the console; a reload keeps the session; "Sign out" ends it, on the
// server too.
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

test("sign in, reload, sign out", async () => {
  const context = await browser.newContext({ baseURL: srv.base });
  const page = await newPage(context, problems);
  await page.goto("/");
  await page.getByRole("heading", { name: "Sign in to copydesk" }).waitFor();
  assert.deepEqual(await axeCheck(page), [], "sign-in page");

  await page.getByLabel("E-mail").fill("ann@example.com");
  await page.getByLabel("Password").fill("not the password");
  await page.getByRole("button", { name: "Sign in" }).click();
  const alert = page.getByRole("alert");
  await alert.waitFor();
  // The server's own words, not a message of the console's.
  const bad = await srv.api("POST", "/api/auth/login", "", { email: "ann@example.com", password: "still not it" });
  assert.equal(bad.status, 401);
  assert.match(await alert.innerText(), new RegExp(bad.body.detail.slice(0, 20), "i"));
  assert.deepEqual(await axeCheck(page), [], "sign-in page with an error");

  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Environments" }).waitFor();
  assert.equal(await page.getByRole("button", { name: /^Notifications/ }).count(), 1);
  // The token is kept for the tab's reloads, never in the address.
  assert.doesNotMatch(page.url(), /token|eyJ/);
  assert.deepEqual(await axeCheck(page), [], "environments page");

  await page.reload();
  await page.getByRole("heading", { name: "Environments" }).waitFor();
  assert.equal(await page.getByRole("heading", { name: "Sign in to copydesk" }).count(), 0);

  const token = JSON.parse(await page.evaluate(() => localStorage.getItem("copydesk.session"))).access_token;
  assert.equal((await srv.api("GET", "/api/auth/me", token)).status, 200);
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByRole("heading", { name: "Sign in to copydesk" }).waitFor();
  await page.getByText("You signed out.").waitFor();
  assert.equal(await page.evaluate(() => localStorage.getItem("copydesk.session")), null);
  // Signed out on the server: the old token no longer works.
  assert.equal((await srv.api("GET", "/api/auth/me", token)).status, 401);
  await page.reload();
  await page.getByRole("heading", { name: "Sign in to copydesk" }).waitFor();
  await context.close();
  assert.deepEqual(problems, []);
});

// The first screen becomes usable (the sign-in form is on the page),
// timed by the page's own clock from the start of the navigation. The
// time is a benchmark, reported, never asserted (a loaded machine is slow,
// not wrong; the target of 1 s on loopback is checked by reading this
// line in the test output); the bytes over the wire are held to the
// budget of 150 KB.
test("first screen: time to usable and bytes", async (t) => {
  const context = await browser.newContext({ baseURL: srv.base });
  // Run before the page's scripts (through the debugging protocol, outside
  // the page's CSP): note when an input first appears.
  await context.addInitScript(() => {
    new MutationObserver((_, obs) => {
      if (document.querySelector("input")) {
        window.__usableAt = performance.now();
        obs.disconnect();
      }
    }).observe(document, { childList: true, subtree: true });
  });
  const page = await newPage(context, problems);
  const runs = [];
  for (let i = 0; i < 3; i++) {
    await page.goto("/?" + i);
    await page.getByLabel("E-mail").waitFor();
    runs.push(await page.evaluate(() => ({
      usable: Math.round(window.__usableAt),
      bytes: performance.getEntriesByType("resource").concat(performance.getEntriesByType("navigation"))
        .reduce((n, e) => n + e.encodedBodySize, 0),
    })));
  }
  const first = runs[0];
  const median = runs.map((r) => r.usable).sort((a, b) => a - b)[1];
  const line = `first screen: usable in ${first.usable} ms on a first visit, ${median} ms median of 3 visits; ${first.bytes} bytes over the wire`;
  t.diagnostic(line);
  assert.ok(first.usable > 0 && first.bytes > 0, line);
  assert.ok(first.bytes < 150 * 1024, line);
  await context.close();
  assert.deepEqual(problems, []);
});
