// Accessibility beyond each flow's own check: every screen of the
// environment in the dark theme passes axe-core (no serious or critical
// violation, contrast included), and the keywords and write screens are
// used with the keyboard alone (Tab, Enter, Space, arrows in a select),
// each control reached showing a visible focus indicator.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { axeCheck, grantAll, launch, openAs, startCopydesk, startProvider, startWordPress, TEAM, useProvider, useWordPress, waitFor } from "./harness.mjs";

let srv;
let browser;
let provider;
let site;
let env;
let campaign;
let post;
const article = (words) =>
  `TITLE: Basil on a windowsill\nDESCRIPTION: Sow it warm.\n---\n# Basil on a windowsill\n\nSee [the guide](https://example.com/guide).\n\n` +
  Array.from({ length: words }, (_, i) => `word${i}`).join(" ") + "\n";

before(async () => {
  srv = await startCopydesk({ users: TEAM });
  provider = await startProvider({ reply: () => article(20) });
  site = await startWordPress();
  browser = await launch();
  const admin = (await srv.login("ann@example.com")).access_token;
  await useProvider(srv, admin, provider);
  env = (await srv.api("POST", "/api/environments", admin, { name: "Garden blog" })).body.data;
  await grantAll(srv, admin, env.id);
  await useWordPress(srv, admin, env.id, site);
  const ok = (r, status = 201) => {
    assert.equal(r.status, status, JSON.stringify(r.body));
    return r.body.data;
  };
  const ids = [];
  for (const [i, keyword] of ["garden tip 01", "garden tip 02", "garden tip 03", "compost bins"].entries()) {
    ids.push(ok(await srv.api("POST", "/api/seo/keywords", admin, { environment_id: env.id, keyword, search_volume: (i + 1) * 100 })).id);
  }
  const agent = ok(await srv.api("POST", "/api/agents", admin, { kind: "writer", name: "Writer", environment_id: env.id }));
  const howTo = ok(await srv.api("GET", `/api/cie/archetypes?environment_id=${env.id}`, admin), 200).items.find((a) => a.builtin === "how-to");
  campaign = ok(await srv.api("POST", "/api/seo/campaigns", admin, { environment_id: env.id, name: "Compost", target: "wordpress", agent_id: agent.id,
    archetype_id: howTo.id, keyword_ids: [ids[3]], status: "active", post_status: "draft" }));
  post = ok(await srv.api("POST", "/api/wordpress-posts", admin, { environment_id: env.id, title: "Tomato diary", content: "# Notes\n\nFirst **notes**." }));
  ok(await srv.api("PUT", "/api/autopilot/config", admin, { environment_id: env.id, daily_budget_usd: 0.0001, variables: { audience: "gardeners" } }), 200);
  // A generation, so the costs have a day of spend.
  const run = ok(await srv.api("POST", `/api/cie/archetypes/${howTo.id}/generate`, admin, { environment_id: env.id, variables: { keyword: "basil", audience: "cooks" } }), 202);
  await waitFor(async () => (await srv.api("GET", `/api/cie/runs/${run.id}`, admin)).body.data.status === "succeeded", 10_000, "the generation");
  // A notification for ann: a message from eddie.
  const eddie = await srv.login("ed@example.com");
  const annId = (await srv.login("ann@example.com")).user.id;
  ok(await srv.api("POST", "/api/messages", eddie.access_token, { recipient_id: annId, subject: "Draft ready", body: "Please look at it." }));
});
after(async () => {
  await browser?.close();
  await srv?.stop();
  await provider?.close();
  await site?.close();
});

test("every screen of the environment passes the check in the dark theme", async () => {
  const { page, close } = await openAs(browser, srv, "ann@example.com", `/e/${env.id}`);
  await page.emulateMedia({ colorScheme: "dark" });
  assert.equal(await page.evaluate(() => getComputedStyle(document.body).backgroundColor), "rgb(20, 23, 27)", "dark background");
  const check = async (what) => assert.deepEqual(await axeCheck(page), [], `${what}, dark`);

  await page.getByRole("heading", { name: "Overview of Garden blog" }).waitFor();
  await page.getByRole("region", { name: "Drafts waiting for review" }).getByRole("link", { name: "Tomato diary" }).waitFor();
  await page.getByRole("img", { name: /^Spend in the last 30 days: .* exceeded on 1 day$/ }).waitFor();
  await check("overview");

  await page.goto(`/e/${env.id}/keywords`);
  await page.getByRole("heading", { name: "Keywords", level: 1 }).waitFor();
  // The bell's panel (here: the overview has a notifications region of its own).
  await page.getByRole("button", { name: /^Notifications, [1-9]\d* unread$/ }).click();
  const panel = page.getByRole("region", { name: "Notifications" });
  await panel.getByText("New message from eddie: Draft ready", { exact: true }).waitFor();
  await check("notifications panel");
  await page.keyboard.press("Escape");
  await panel.waitFor({ state: "hidden" });
  await page.getByRole("checkbox", { name: "Select garden tip 02" }).check();
  await page.getByRole("group", { name: "Selected keywords" }).getByText("1 keyword selected").waitFor();
  await check("keywords, one selected");

  await page.goto(`/e/${env.id}/campaigns`);
  await page.getByRole("heading", { name: "Campaigns", level: 1 }).waitFor();
  await page.getByRole("row").filter({ hasText: "Compost" }).waitFor();
  await check("campaigns");
  await page.goto(`/e/${env.id}/campaigns?id=${campaign.id}`);
  await page.getByRole("heading", { name: "Compost", level: 3 }).waitFor();
  await check("a campaign");

  await page.goto(`/e/${env.id}/write`);
  await page.getByRole("heading", { name: "Write an article", level: 1 }).waitFor();
  await page.getByLabel("Archetype").selectOption({ label: "How-to guide (global)" });
  await page.getByRole("button", { name: "Generate" }).click();
  await waitFor(async () => (await page.getByRole("textbox", { name: "Keyword" }).getAttribute("aria-invalid")) === "true");
  await check("write, a field refused");
  await page.getByRole("textbox", { name: "Keyword" }).fill("basil");
  await page.getByRole("textbox", { name: "Audience" }).fill("cooks");
  await page.getByRole("button", { name: "Generate" }).click();
  await page.getByRole("region", { name: "Article preview" }).getByRole("link", { name: "the guide" }).waitFor();
  await check("write, the article");

  await page.goto(`/e/${env.id}/posts`);
  const table = page.getByRole("table", { name: "WordPress posts" });
  await table.getByRole("row").filter({ hasText: "Tomato diary" }).waitFor();
  await check("posts");
  await table.getByRole("button", { name: "Tomato diary" }).click();
  await page.getByRole("region", { name: "Preview" }).getByRole("heading", { name: "Notes" }).waitFor();
  await check("a post open in the editor");

  await page.goto(`/e/${env.id}/autopilot`);
  await page.getByRole("heading", { name: "Autopilot", level: 1 }).waitFor();
  await page.getByRole("region", { name: "State" }).getByText("Stopped", { exact: true }).waitFor();
  await check("autopilot");

  await page.goto(`/e/${env.id}/costs`);
  await page.getByRole("img", { name: /^Spend per day: .* exceeded on 1 day$/ }).waitFor();
  await page.getByRole("table", { name: "By model" }).getByRole("row", { name: /gpt-4o-mini \d+ / }).waitFor();
  await check("costs");
  await close();
});

// tabTo presses Tab until target has the focus, and returns how the
// focused element shows it.
async function tabTo(page, target, what) {
  for (let i = 0; i < 80; i++) {
    await page.keyboard.press("Tab");
    if (await target.evaluate((el) => el === document.activeElement).catch(() => false)) {
      await assertFocusVisible(page, what);
      return;
    }
  }
  throw new Error(`Tab never reached ${what}`);
}

// assertFocusVisible: the focused element matches :focus-visible and draws
// an outline or a box shadow there.
async function assertFocusVisible(page, what) {
  const s = await page.evaluate(() => {
    const el = document.activeElement;
    const cs = getComputedStyle(el);
    return { visible: el.matches(":focus-visible"), outline: cs.outlineStyle, width: cs.outlineWidth, shadow: cs.boxShadow };
  });
  assert.ok(s.visible, `${what}: :focus-visible`);
  assert.ok((s.outline !== "none" && s.width !== "0px") || s.shadow !== "none", `${what}: a visible focus indicator, ${JSON.stringify(s)}`);
}

// chooseByKeys moves a focused select with the arrow keys to the option
// labelled label.
async function chooseByKeys(page, select, label) {
  for (let i = 0; i < 20; i++) {
    if ((await select.evaluate((el) => el.selectedOptions[0]?.textContent)) === label) return;
    await page.keyboard.press("ArrowDown");
  }
  throw new Error(`no option ${label}`);
}

test("the keywords screen with the keyboard alone", async () => {
  const { page, close } = await openAs(browser, srv, "ed@example.com", `/e/${env.id}/keywords`);
  await page.getByRole("heading", { name: "Keywords", level: 1 }).waitFor();
  await page.getByRole("row").filter({ hasText: "garden tip 01" }).waitFor();

  // The import's file picker opens with Space.
  await tabTo(page, page.getByLabel("Keyword export (CSV)"), "the file field");
  const [chooser] = await Promise.all([page.waitForEvent("filechooser"), page.keyboard.press("Space")]);
  await chooser.setFiles({ name: "more.csv", mimeType: "text/csv", buffer: Buffer.from("Keyword,Volume,KD,CPC\nraised beds,700,12,0.40\n") });
  await page.getByText(/1 rows?: 1 imported, 0 updated, 0 rejected\./).waitFor();

  const search = page.getByRole("searchbox", { name: "Search" });
  await tabTo(page, search, "the search");
  await page.keyboard.type("garden tip");
  await page.getByText("3 keywords", { exact: true }).waitFor();

  // Sorting: Enter, then Space, on the column's button.
  await tabTo(page, page.getByRole("button", { name: "Volume" }), "the Volume sort");
  await page.keyboard.press("Enter");
  await page.getByRole("columnheader", { name: "Volume" }).and(page.locator("[aria-sort=descending]")).waitFor();
  await page.keyboard.press("Space");
  await page.getByRole("columnheader", { name: "Volume" }).and(page.locator("[aria-sort=ascending]")).waitFor();

  // Select a row with Space, give it a status.
  const box = page.getByRole("checkbox", { name: "Select garden tip 03" });
  await tabTo(page, box, "a row's checkbox");
  await page.keyboard.press("Space");
  assert.equal(await box.isChecked(), true);
  const group = page.getByRole("group", { name: "Selected keywords" });
  await group.getByText("1 keyword selected").waitFor();
  const status = group.getByLabel("New status");
  await tabTo(page, status, "the new status");
  await chooseByKeys(page, status, "Planned");
  await tabTo(page, group.getByRole("button", { name: "Set status" }), "Set status");
  await page.keyboard.press("Enter");
  await page.getByText("Planned: 1 keyword changed.").waitFor();

  // The status filter, with the arrow keys.
  const filter = page.getByLabel("Status", { exact: true });
  await search.focus();
  await tabTo(page, filter, "the status filter");
  await chooseByKeys(page, filter, "Planned");
  await page.getByText("1 keyword", { exact: true }).waitFor();
  await page.getByRole("row").filter({ hasText: "garden tip 03" }).waitFor();
  await close();
});

test("the write screen with the keyboard alone, and its text so far is focusable", async () => {
  provider.every = 60; // slow enough to reach Stop while it writes
  provider.reply = () => article(120);
  const { page, close } = await openAs(browser, srv, "ed@example.com", `/e/${env.id}/write`);
  await page.getByRole("heading", { name: "Write an article", level: 1 }).waitFor();
  const archetype = page.getByLabel("Archetype");
  await tabTo(page, archetype, "the archetype");
  await chooseByKeys(page, archetype, "How-to guide (global)");
  await tabTo(page, page.getByRole("textbox", { name: "Keyword" }), "the keyword");
  await page.keyboard.type("basil");
  await tabTo(page, page.getByRole("textbox", { name: "Audience" }), "the audience");
  await page.keyboard.type("cooks");
  await tabTo(page, page.getByRole("button", { name: "Generate" }), "Generate");
  await page.keyboard.press("Enter");

  // Stop with Space while it writes (once its first words are on the
  // page: under load Stop could come before any); the text so far stays,
  // and Tab reaches it.
  const so = page.getByRole("region", { name: "Text so far" });
  await so.getByText(/TITLE: Basil/).waitFor();
  const stop = page.getByRole("button", { name: "Stop" });
  await tabTo(page, stop, "Stop");
  await page.keyboard.press("Space");
  await page.getByText(/^Stopped\. The generation was cancelled/).waitFor();
  await so.getByText(/TITLE: Basil/).waitFor();
  await tabTo(page, so, "the text so far");

  // Again to the end, and save the article with Enter.
  provider.every = 0;
  provider.reply = () => article(20);
  await tabTo(page, page.getByRole("button", { name: "Generate" }), "Generate, again");
  await page.keyboard.press("Enter");
  await page.getByText(/^Done: 500 tokens from gpt-4o-mini/).waitFor();
  await tabTo(page, page.getByRole("button", { name: "Save as WordPress draft" }), "Save as WordPress draft");
  await page.keyboard.press("Enter");
  await page.getByText("Saved “Basil on a windowsill” as a WordPress draft.").waitFor();
  await close();
});
