// Save as a draft (src/savedraft.tsx, on Write and Live sessions): an
// environment with no Astro project says so beside the buttons, with a link
// to Environments for an administrator and "ask an administrator" for an
// editor; once one is configured, the line goes and the Astro draft saves.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { axeCheck, grantAll, launch, openAs, startCopydesk, startProvider, TEAM, useProvider } from "./harness.mjs";

let srv;
let browser;
let provider;
let env;
let roots;
let admin;
before(async () => {
  roots = mkdtempSync(join(tmpdir(), "copydesk-astro-"));
  mkdirSync(join(roots, "site", "src", "content", "blog"), { recursive: true });
  writeFileSync(join(roots, "site", "astro.config.mjs"), "export default {};\n");
  srv = await startCopydesk({ users: TEAM, args: ["--astro-roots", roots] });
  provider = await startProvider({ reply: () => "TITLE: Mint in pots\nDESCRIPTION: Small space.\n---\n# Mint in pots\n\nWater it.\n" });
  browser = await launch();
  admin = (await srv.login("ann@example.com")).access_token;
  await useProvider(srv, admin, provider);
  env = (await srv.api("POST", "/api/environments", admin, { name: "Mint blog" })).body.data;
  await grantAll(srv, admin, env.id);
});
after(async () => {
  await browser?.close();
  await srv?.stop();
  await provider?.close();
  rmSync(roots, { recursive: true, force: true });
});

async function generate(page) {
  await page.getByRole("heading", { name: "Write an article", level: 1 }).waitFor();
  await page.getByLabel("Archetype").selectOption({ label: "How-to guide (global)" });
  await page.getByRole("textbox", { name: "Keyword" }).fill("mint");
  await page.getByRole("textbox", { name: "Audience" }).fill("cooks");
  await page.getByRole("button", { name: "Generate" }).click();
  await page.getByRole("button", { name: "Save as Astro draft" }).waitFor();
}

test("no Astro project: the line beside the buttons, a link for an admin, then the draft once configured", async () => {
  const ed = await openAs(browser, srv, "ed@example.com", `/e/${env.id}/write`);
  await generate(ed.page);
  await ed.page.getByText(/no Astro project yet, so an Astro draft cannot be saved: ask an administrator to configure one/).waitFor();
  assert.equal(await ed.page.getByRole("link", { name: "configure one under Environments" }).count(), 0);
  assert.deepEqual(await axeCheck(ed.page), [], "write, no Astro project");
  await ed.close();

  const { page, close } = await openAs(browser, srv, "adam@example.com", `/e/${env.id}/write`);
  await generate(page);
  await page.getByRole("link", { name: "configure one under Environments" }).click();
  await page.getByRole("heading", { name: "Environments", level: 1 }).waitFor();

  const r = await srv.api("PUT", `/api/environments/${env.id}/configuration`, admin, { astro: { project_path: join(roots, "site"), content_dir: "src/content/blog" } });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  await page.goto(`/e/${env.id}/write`);
  await generate(page);
  await page.getByRole("button", { name: "Save as Astro draft" }).click();
  await page.getByText("Saved “Mint in pots” as an Astro draft.").waitFor();
  assert.equal(await page.getByText(/no Astro project yet/).count(), 0);
  await close();
});
