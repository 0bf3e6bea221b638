// Archetypes: an editor creates one with two variables (the server's 422
// shown at the field it names), finds exactly those variables as the Write
// screen's form, edits it, and deletes it after a confirmation naming it;
// a built-in is read-only and copied to be changed; a viewer only reads.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { axeCheck, grantAll, launch, openAs, startCopydesk, startProvider, TEAM, useProvider, waitFor } from "./harness.mjs";

let srv;
let browser;
let provider;
let env;
let admin;
before(async () => {
  srv = await startCopydesk({ users: TEAM });
  provider = await startProvider();
  browser = await launch();
  admin = (await srv.login("ann@example.com")).access_token;
  await useProvider(srv, admin, provider);
  env = (await srv.api("POST", "/api/environments", admin, { name: "Garden blog" })).body.data;
  await grantAll(srv, admin, env.id);
});
after(async () => {
  await browser?.close();
  await srv?.stop();
  await provider?.close();
});

const described = async (page, box) => {
  const ids = (await box.getAttribute("aria-describedby")) ?? "";
  const texts = await Promise.all(ids.split(" ").filter(Boolean).map((id) => page.locator(`[id="${id}"]`).textContent()));
  return texts.join(" ");
};

test("an editor creates an archetype with two variables, writes with it, edits and deletes it", async () => {
  const { page, close } = await openAs(browser, srv, "ed@example.com", `/e/${env.id}/archetypes`);
  const table = page.getByRole("table", { name: "Archetypes of this environment" });
  await table.getByRole("row").filter({ hasText: "How-to guide" }).getByText("Built in").waitFor();
  assert.deepEqual(await axeCheck(page), [], "archetypes list");

  await page.getByRole("button", { name: "New archetype" }).click();
  const form = page.getByRole("form", { name: "New archetype" });
  await form.getByRole("textbox", { name: "Name" }).fill("Garden guide");
  await form.getByRole("textbox", { name: "Description" }).fill("A guide to one plant in one season.");
  const prompt = form.getByRole("textbox", { name: "Prompt template" });
  await prompt.fill("Write a guide to {{plant}} for {{ 1season }}.");
  await form.getByRole("button", { name: "Create the archetype" }).click();
  // The server's 422 beside the field it names.
  await waitFor(async () => (await prompt.getAttribute("aria-invalid")) === "true", 10_000, "the prompt's error");
  assert.match(await described(page, prompt), /is not a placeholder/);
  await prompt.fill("Write a guide to {{plant}} for {{season}}.");
  await form.getByText("Variables the prompt uses: plant, season.").waitFor();
  await form.getByRole("button", { name: "Add a section" }).click();
  await form.getByRole("button", { name: "Create the archetype" }).click();
  const heading = form.getByRole("textbox", { name: "Section 1 heading" });
  await waitFor(async () => (await heading.getAttribute("aria-invalid")) === "true", 10_000, "the section's error");
  assert.match(await described(page, heading), /is required/i);
  await heading.fill("When to sow");
  await form.getByRole("textbox", { name: "Section 1 guidance" }).fill("Months and temperatures.");
  assert.deepEqual(await axeCheck(page), [], "archetype form");
  await form.getByRole("button", { name: "Create the archetype" }).click();
  await page.getByText("Archetype “Garden guide” created.").waitFor();
  const detail = page.getByRole("region", { name: "Garden guide" });
  await detail.getByText("plant, season", { exact: true }).waitFor();
  await detail.getByRole("listitem").filter({ hasText: "When to sow" }).waitFor();
  await table.getByRole("row").filter({ hasText: "Garden guide" }).getByText("This environment").waitFor();
  const made = (await srv.api("GET", `/api/cie/archetypes?environment_id=${env.id}&per_page=200`, admin)).body.data.items.find((a) => a.name === "Garden guide");
  assert.deepEqual(made.variables, ["plant", "season"]);
  assert.equal(made.environment_id, env.id);

  // The Write screen offers it, with a form of exactly its two variables.
  await page.getByRole("link", { name: "Write screen" }).click();
  await page.getByRole("heading", { name: "Write an article", level: 1 }).waitFor();
  await page.getByLabel("Archetype").selectOption({ label: "Garden guide" });
  const vars = page.getByRole("group", { name: "Variables of this archetype" });
  await vars.getByRole("textbox", { name: "Plant" }).waitFor();
  await vars.getByRole("textbox", { name: "Season" }).waitFor();
  assert.equal(await vars.getByRole("textbox").count(), 2);

  // Edit it.
  await page.goBack();
  await table.getByRole("button", { name: "Garden guide" }).click();
  await detail.getByRole("button", { name: "Edit", exact: true }).click();
  const edit = page.getByRole("form", { name: "Edit “Garden guide”" });
  await edit.getByRole("textbox", { name: "Name" }).fill("Seasonal garden guide");
  await edit.getByRole("textbox", { name: "Tone" }).fill("warm");
  await edit.getByRole("button", { name: "Save the archetype" }).click();
  await page.getByText("Archetype “Seasonal garden guide” saved.").waitFor();
  const changed = (await srv.api("GET", `/api/cie/archetypes/${made.id}`, admin)).body.data;
  assert.equal(changed.tone, "warm");
  assert.deepEqual(changed.outline, [{ heading: "When to sow", guidance: "Months and temperatures." }]);

  // Delete it after a confirmation naming it.
  const saved = page.getByRole("region", { name: "Seasonal garden guide" });
  await saved.getByRole("button", { name: "Delete" }).click();
  const confirm = page.getByRole("alertdialog", { name: "Delete the archetype Seasonal garden guide" });
  await confirm.getByText(/Delete the archetype “Seasonal garden guide”\?/).waitFor();
  assert.deepEqual(await axeCheck(page), [], "delete confirmation");
  await confirm.getByRole("button", { name: "Delete the archetype" }).click();
  await page.getByText("Archetype “Seasonal garden guide” deleted.").waitFor();
  // The message comes with the delete's answer, the list with its reload.
  await table.getByRole("button", { name: "Seasonal garden guide" }).waitFor({ state: "detached" });
  assert.equal((await srv.api("GET", `/api/cie/archetypes/${made.id}`, admin)).status, 404);
  await close();
});

test("a built-in is read-only; an editor copies it to change it", async () => {
  const { page, close } = await openAs(browser, srv, "ed@example.com", `/e/${env.id}/archetypes`);
  const table = page.getByRole("table", { name: "Archetypes of this environment" });
  await table.getByRole("button", { name: "Listicle", exact: true }).click();
  const detail = page.getByRole("region", { name: "Listicle", exact: true });
  await detail.getByText(/read-only: make a copy/).waitFor();
  assert.equal(await detail.getByRole("button", { name: "Edit", exact: true }).count(), 0);
  assert.equal(await detail.getByRole("button", { name: "Delete" }).count(), 0);
  await detail.getByRole("button", { name: "Make an editable copy" }).click();
  await page.getByText("Copied as “Listicle (copy)” in this environment: edit it as you like.").waitFor();
  const copy = page.getByRole("region", { name: "Listicle (copy)" });
  await copy.getByRole("button", { name: "Edit", exact: true }).waitFor();
  await table.getByRole("row").filter({ hasText: "Listicle (copy)" }).getByText("This environment").waitFor();
  await close();
});

test("a viewer reads the archetypes with no action", async () => {
  const { page, close } = await openAs(browser, srv, "vic@example.com", `/e/${env.id}/archetypes`);
  const table = page.getByRole("table", { name: "Archetypes of this environment" });
  await table.getByRole("button", { name: "Listicle (copy)" }).click();
  const detail = page.getByRole("region", { name: "Listicle (copy)" });
  await detail.getByRole("region", { name: "Prompt template" }).getByText(/\{\{keyword\}\}/).waitFor();
  for (const name of ["New archetype", "Edit", "Delete", "Make an editable copy"]) assert.equal(await page.getByRole("button", { name, exact: true }).count(), 0, name);
  assert.deepEqual(await axeCheck(page), [], "archetypes, viewer");
  await close();
});
