// Live sessions: an editor starts one with the environment's agent and
// generates; a viewer who opens it late (a second browser context) sees
// the text so far, then the rest live, and each sees who watches; cancel
// keeps the text so far; the last output is saved as a WordPress draft; an
// environment without an agent says where agents are made.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { axeCheck, grantAll, launch, openAs, startCopydesk, TEAM, startProvider, useProvider, waitFor } from "./harness.mjs";

let srv;
let browser;
let provider;
let env;
let bare;
let admin;
const words = (n) => Array.from({ length: n }, (_, i) => `w${i}`).join(" ");

before(async () => {
  srv = await startCopydesk({ users: TEAM });
  provider = await startProvider({
    every: 10,
    reply: (_, body) => {
      const last = String(body.messages?.at(-1)?.content ?? "");
      if (last.includes("long")) return "# A long piece\n\n" + words(3000) + " the end.";
      return "# Balcony herbs\n\nBasil, thyme and <b>mint</b> grow well.";
    },
  });
  browser = await launch();
  admin = (await srv.login("ann@example.com")).access_token;
  await useProvider(srv, admin, provider);
  env = (await srv.api("POST", "/api/environments", admin, { name: "Garden blog" })).body.data;
  bare = (await srv.api("POST", "/api/environments", admin, { name: "Empty blog" })).body.data;
  await grantAll(srv, admin, env.id, bare.id);
  const r = await srv.api("POST", "/api/agents", admin, { kind: "writer", name: "Garden writer", environment_id: env.id });
  assert.equal(r.status, 201, JSON.stringify(r.body));
});
after(async () => {
  await browser?.close();
  await srv?.stop();
  await provider?.close();
});

test("an editor runs a live session; a late watcher sees the text so far and the rest live; presence; cancel; save as draft", async () => {
  const ed = await openAs(browser, srv, "ed@example.com", `/e/${env.id}/live`);
  const page = ed.page;
  await page.getByRole("heading", { name: "Live sessions", level: 1 }).waitFor();
  await page.getByText("No live session yet.").waitFor();
  assert.deepEqual(await axeCheck(page), [], "live, list");
  await page.getByLabel("Agent").selectOption({ label: "Garden writer" });
  await page.getByRole("textbox", { name: "Title (optional)" }).fill("Herbs piece");
  await page.getByRole("button", { name: "Start the session" }).click();
  await page.getByRole("heading", { name: "Herbs piece", level: 2 }).waitFor();
  const watching = (p) => p.getByRole("list", { name: "Watching now" });
  await watching(page).getByText("eddie").waitFor();

  // A long generation; the viewer opens the session while it is written.
  await page.getByRole("textbox", { name: "Prompt" }).fill("Write a long piece");
  await page.getByRole("button", { name: "Generate" }).click();
  const so = page.getByRole("region", { name: "Text so far" });
  await so.getByText(/w20\b/).waitFor();
  const at = new URL(page.url());
  const vic = await openAs(browser, srv, "vic@example.com", at.pathname + at.search);
  const late = vic.page.getByRole("region", { name: "Text so far" });
  // The text so far at once (it starts at the beginning), then more of it.
  await late.getByText(/^# A long piece\s+w0 w1/).waitFor();
  const seen = (await late.textContent()).length;
  await waitFor(async () => (await late.textContent()).length > seen + 50, 10_000, "more text, live");
  // Both see both watchers.
  await watching(vic.page).getByText("eddie").waitFor();
  await watching(page).getByText("vic").waitFor();
  assert.deepEqual(await axeCheck(vic.page), [], "live, watcher");
  assert.equal(await vic.page.getByRole("button", { name: "Cancel the generation" }).count(), 0, "a viewer cannot cancel");

  // Cancel: the text so far is kept, for both.
  await page.getByRole("button", { name: "Cancel the generation" }).click();
  const kept = page.getByRole("listitem").filter({ hasText: "Output (cancelled: the text so far)" });
  await kept.waitFor();
  const text = await kept.textContent();
  assert.ok(text.includes("w0 w1") && !text.includes("the end."), "cancelled midway, its text kept");
  await vic.page.getByRole("listitem").filter({ hasText: "Output (cancelled: the text so far)" }).waitFor();
  // A cancelled output is not saved as a draft (the API saves only a
  // complete one): the screen says so and offers no save.
  await page.getByText("The last output did not complete: its text so far is kept here but is not saved as a draft. Generate again to have one to save.").waitFor();
  assert.equal(await page.getByRole("button", { name: /as a WordPress draft$/ }).count(), 0);

  // A short generation succeeds; the viewer sees it arrive; it is saved as a draft.
  await page.getByRole("textbox", { name: "Prompt" }).fill("Write about herbs");
  await page.getByRole("button", { name: "Generate" }).click();
  await page.getByRole("region", { name: "Output 4" }).getByRole("heading", { name: "Balcony herbs" }).waitFor();
  await vic.page.getByRole("region", { name: "Output 4" }).getByText("Basil, thyme and <b>mint</b> grow well.").waitFor();
  assert.deepEqual(await axeCheck(page), [], "live, session");
  await page.getByRole("button", { name: "Save the last complete output as a WordPress draft" }).click();
  await page.getByText("Saved “Balcony herbs” as a WordPress draft.").waitFor();
  const posts = (await srv.api("GET", `/api/wordpress-posts?environment_id=${env.id}`, admin)).body.data.items;
  assert.deepEqual(posts.map((p) => [p.title, p.status]), [["Balcony herbs", "draft"]]);

  // The viewer leaves: the editor sees it.
  await vic.close();
  await waitFor(async () => (await watching(page).getByText("vic").count()) === 0, 10_000, "vic leaves");

  // Delete, after a confirmation naming the session.
  await page.getByRole("button", { name: "Delete…" }).click();
  await page.getByRole("alertdialog", { name: "Confirm deletion" }).getByText("Delete the live session “Herbs piece” and its transcript?", { exact: false }).waitFor();
  await page.getByRole("button", { name: "Delete “Herbs piece”" }).click();
  await page.getByText("No live session yet.").waitFor();
  await ed.close();
});

test("an environment without an agent links to where agents are made", async () => {
  const { page, close } = await openAs(browser, srv, "ed@example.com", `/e/${bare.id}/live`);
  await page.getByText("There is no agent in this environment yet").waitFor();
  assert.equal(await page.getByRole("link", { name: "Create an agent" }).getAttribute("href"), `/e/${bare.id}/agents`);
  assert.deepEqual(await axeCheck(page), [], "live, no agent");
  await close();
});
