// No AI provider credential on a fresh install: every screen that needs one
// (chat, live sessions, agents, write) says so before anyone types. An
// administrator gets a link that opens the credentials screen; an editor is
// told to ask an administrator, and a generation the server refuses for it
// shows the same message, not the API's words. Once a credential is added
// the message is gone.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { axeCheck, grantAll, launch, openAs, startCopydesk, startProvider, TEAM, useProvider, waitFor } from "./harness.mjs";

let srv;
let browser;
let provider;
let admin;
let env;

// The screens that need a credential, by their address and their heading.
const screens = [
  ["chat", "Chat"],
  ["live", "Live sessions"],
  ["agents", "Agents"],
  ["write", "Write an article"],
];
const missing = "No AI provider credential is configured yet";

before(async () => {
  srv = await startCopydesk({ users: TEAM });
  provider = await startProvider();
  browser = await launch();
  admin = (await srv.login("ann@example.com")).access_token;
  env = (await srv.api("POST", "/api/environments", admin, { name: "Garden blog" })).body.data;
  await grantAll(srv, admin, env.id);
});
after(async () => {
  await browser?.close();
  await srv?.stop();
  await provider?.close();
});

test("an administrator sees, on each screen that needs one, a link that opens the credentials screen", async () => {
  const { page, close } = await openAs(browser, srv, "ann@example.com", `/e/${env.id}/chat`);
  await page.getByRole("heading", { name: "Chat", level: 1 }).waitFor(); // signed in
  for (const [section, heading] of screens) {
    await page.goto(`/e/${env.id}/${section}`);
    await page.getByRole("heading", { name: heading, level: 1 }).waitFor();
    const notice = page.getByRole("status").filter({ hasText: missing });
    await notice.waitFor();
    assert.equal(await page.getByText("Ask an administrator to add one.").count(), 0, section);
    const link = notice.getByRole("link", { name: "Add a credential" });
    assert.equal(await link.getAttribute("href"), "/admin/credentials", section);
    assert.deepEqual(await axeCheck(page), [], `${section}, no credential (admin)`);
    await link.click();
    await page.getByRole("heading", { name: "Credentials", level: 1 }).waitFor();
    assert.equal(new URL(page.url()).pathname, "/admin/credentials", section);
  }
  await close();
});

test("an editor is told to ask an administrator, also when a generation is refused", async () => {
  const { page, close } = await openAs(browser, srv, "ed@example.com", `/e/${env.id}/chat`);
  await page.getByRole("heading", { name: "Chat", level: 1 }).waitFor(); // signed in
  for (const [section, heading] of screens) {
    await page.goto(`/e/${env.id}/${section}`);
    await page.getByRole("heading", { name: heading, level: 1 }).waitFor();
    const notice = page.getByRole("status").filter({ hasText: missing });
    await notice.getByText("Ask an administrator to add one.", { exact: false }).waitFor();
    assert.equal(await page.getByRole("link", { name: "Add a credential" }).count(), 0, section);
    if (section === "chat") {
      // No composer: a first message would make a conversation nothing can answer.
      assert.equal(await page.getByRole("textbox", { name: "Message" }).count(), 0, "chat composer");
    }
    assert.deepEqual(await axeCheck(page), [], `${section}, no credential (editor)`);
  }
  // Generating anyway: the server's 409 shows as the same message, not as
  // the API's words (which name routes an editor cannot use).
  await page.getByLabel("Archetype").selectOption({ label: "How-to guide (global)" });
  await page.getByRole("textbox", { name: "Keyword" }).fill("balcony tomatoes");
  await page.getByRole("textbox", { name: "Audience" }).fill("city gardeners");
  const refused = page.waitForResponse((r) => r.url().includes("/generate") && r.request().method() === "POST");
  const generate = page.getByRole("button", { name: "Generate", exact: true });
  await generate.click();
  const r = await refused;
  assert.equal(r.status(), 409);
  assert.match((await r.json()).detail, /^no AI provider is configured/);
  await waitFor(() => generate.isEnabled(), 10_000, "Generate enabled again");
  assert.equal(await page.getByRole("alert").count(), 0, "no alert with the API's words");
  assert.equal(await page.getByRole("status").filter({ hasText: missing }).count(), 1);
  await close();
});

test("once a credential is added, the screens no longer show the message", async () => {
  await useProvider(srv, admin, provider);
  const { page, close } = await openAs(browser, srv, "ed@example.com", `/e/${env.id}/agents`);
  await page.getByRole("heading", { name: "Agents", level: 1 }).waitFor();
  await page.getByText("No agent yet.").waitFor();
  for (const [section, heading] of screens) {
    const listed = page.waitForResponse((r) => r.url().includes("/api/agents/credentials"));
    await page.goto(`/e/${env.id}/${section}`);
    await page.getByRole("heading", { name: heading, level: 1 }).waitFor();
    assert.equal((await (await listed).json()).data.total, 1, section);
    await page.waitForTimeout(300); // the answer rendered
    assert.equal(await page.getByText(missing).count(), 0, section);
    if (section === "chat") await page.getByRole("textbox", { name: "Message" }).waitFor();
  }
  await close();
});
