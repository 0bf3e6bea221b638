// Agents: with no AI credential the screen says so and links to the
// credentials screen; an editor creates an agent (a bad temperature is
// named beside its field), edits it, runs it and watches the output arrive
// from a local stand-in of the provider, sees the run with its usage and
// cost, stops a run (cancelled on the server), assigns the agent to
// another environment and to a campaign, and deletes it after a
// confirmation that names it; the provider credential is chosen from
// those usable there; a viewer sees the agents with no action.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { axeCheck, grantAll, launch, openAs, startCopydesk, startProvider, TEAM, useProvider, waitFor } from "./harness.mjs";

let srv;
let browser;
let provider;
let admin;
let env;
let other;
let campaign;

before(async () => {
  srv = await startCopydesk({ users: TEAM });
  provider = await startProvider({ reply: (n) => `Reply number ${n}: ` + Array.from({ length: 30 }, (_, i) => `w${i}`).join(" "), every: 10 });
  browser = await launch();
  admin = (await srv.login("ann@example.com")).access_token;
  env = (await srv.api("POST", "/api/environments", admin, { name: "Garden blog" })).body.data;
  other = (await srv.api("POST", "/api/environments", admin, { name: "Kitchen blog" })).body.data;
  await grantAll(srv, admin, env.id, other.id);
  const c = await srv.api("POST", "/api/seo/campaigns", admin, { environment_id: env.id, name: "Spring sowing", target: "wordpress" });
  assert.equal(c.status, 201, JSON.stringify(c.body));
  campaign = c.body.data;
});
after(async () => {
  await browser?.close();
  await srv?.stop();
  await provider?.close();
});

test("with no AI credential, the screen says so and links to the credentials screen", async () => {
  const { page, close } = await openAs(browser, srv, "ann@example.com", `/e/${env.id}/agents`);
  await page.getByRole("heading", { name: "Agents", level: 1 }).waitFor();
  await page.getByText("No agent yet.").waitFor();
  const link = page.getByRole("link", { name: "Add a credential" });
  await link.waitFor();
  assert.equal(await link.getAttribute("href"), "/admin/credentials");
  assert.deepEqual(await axeCheck(page), [], "agents, empty");
  await close();
  // An editor is told who adds one.
  const ed = await openAs(browser, srv, "ed@example.com", `/e/${env.id}/agents`);
  await ed.page.getByText(/Ask an administrator to add one/).waitFor();
  assert.equal(await ed.page.getByRole("link", { name: "Add a credential" }).count(), 0);
  await ed.close();
  await useProvider(srv, admin, provider);
});

test("an editor creates, edits, runs, assigns and deletes an agent", async () => {
  const { page, close } = await openAs(browser, srv, "ed@example.com", `/e/${env.id}/agents`);
  await page.getByRole("button", { name: "New agent" }).click();
  const form = page.getByRole("form", { name: "New agent" });
  await form.getByRole("textbox", { name: "Name" }).fill("Gardener");
  await form.getByLabel("Kind").selectOption({ label: "Researcher" });
  await form.getByRole("textbox", { name: "System prompt" }).fill("You answer questions about {{plant}}.");
  const temperature = form.getByRole("spinbutton", { name: "Temperature" });
  await temperature.fill("3");
  // The credentials an agent here may use (GET /api/agents/credentials).
  await form.getByLabel("Provider credential").selectOption({ label: "Stand-in (openai, gpt-4o-mini)" });
  assert.deepEqual(await axeCheck(page), [], "new agent form");
  await form.getByRole("button", { name: "Create the agent" }).click();
  await waitFor(async () => (await temperature.getAttribute("aria-invalid")) === "true", 10_000, "temperature marked");
  await temperature.fill("0.7");
  await form.getByRole("spinbutton", { name: "Max output tokens" }).fill("800");
  await form.getByRole("button", { name: "Create the agent" }).click();
  await page.getByText("Agent “Gardener” created.").waitFor();
  const detail = page.getByRole("region", { name: "Gardener" });
  await detail.getByText("Researcher").waitFor();

  // Edit: the model.
  await detail.getByRole("button", { name: "Edit the agent" }).click();
  const edit = page.getByRole("form", { name: "Edit “Gardener”" });
  await edit.getByRole("textbox", { name: "Model" }).fill("gpt-4o-mini");
  await edit.getByRole("button", { name: "Save the agent" }).click();
  await page.getByText("Agent “Gardener” saved.").waitFor();
  const agents = (await srv.api("GET", `/api/agents?environment_id=${env.id}`, admin)).body.data.items;
  assert.equal(agents.length, 1);
  const agent = agents[0];
  const cred = (await srv.api("GET", "/api/configurations", admin)).body.data.items[0];
  assert.deepEqual([agent.name, agent.kind, agent.model, agent.temperature, agent.max_tokens, agent.environment_id, agent.credential_id],
    ["Gardener", "researcher", "gpt-4o-mini", 0.7, 800, env.id, cred.id]);

  // Run it: the output arrives piece by piece, then the usage and cost.
  await detail.getByRole("textbox", { name: "Input" }).fill("When do I sow tomatoes?");
  await detail.getByRole("button", { name: "Run" }).click();
  const output = detail.getByRole("region", { name: "Output" });
  await output.getByText(/Reply number 1:/).waitFor();
  await detail.getByText(/^Done: 1,000 tokens in, 500 out, from gpt-4o-mini, \$/).waitFor();
  assert.match(await output.innerText(), /w29/);
  const runs = detail.getByRole("table", { name: "Past runs" });
  await runs.getByRole("row").filter({ hasText: "Succeeded" }).getByRole("cell", { name: "1,000" }).waitFor();
  assert.match(await runs.getByRole("row").filter({ hasText: "Succeeded" }).innerText(), /gpt-4o-mini[\s\S]*1,000[\s\S]*500[\s\S]*\$/);
  assert.deepEqual(await axeCheck(page), [], "agent detail after a run");

  // Stop: the run is cancelled on the server, its output so far kept.
  provider.every = 60;
  await detail.getByRole("textbox", { name: "Input" }).fill("And peppers?");
  await detail.getByRole("button", { name: "Run" }).click();
  await output.getByText(/Reply number 2:/).waitFor();
  await detail.getByRole("button", { name: "Stop" }).click();
  await detail.getByText(/^Stopped\. The run was cancelled/).waitFor();
  assert.ok(!(await output.innerText()).includes("w29"), "stopped before the end");
  provider.every = 10;
  await waitFor(async () => {
    const r = (await srv.api("GET", `/api/agents/${agent.id}/runs`, admin)).body.data.items;
    return r[0].status === "cancelled";
  }, 10_000, "the run cancelled on the server");
  await runs.getByRole("row").filter({ hasText: "Cancelled" }).waitFor();

  // Assign it to another environment, and to a campaign.
  await detail.getByRole("checkbox", { name: "Kitchen blog" }).check();
  await detail.getByRole("button", { name: "Save the environments" }).click();
  await page.getByText("The environments that may use “Gardener” are saved.").waitFor();
  assert.deepEqual((await srv.api("GET", `/api/agents/${agent.id}/assignments`, admin)).body.data.environment_ids, [other.id]);
  await detail.getByRole("combobox", { name: "Campaign to assign it to" }).selectOption({ label: "Spring sowing" });
  await detail.getByRole("button", { name: "Assign to the campaign" }).click();
  await detail.getByRole("button", { name: "Take it off Spring sowing" }).waitFor();
  assert.equal((await srv.api("GET", `/api/seo/campaigns/${campaign.id}`, admin)).body.data.agent_id, agent.id);
  await detail.getByRole("button", { name: "Take it off Spring sowing" }).click();
  await detail.getByText("No campaign writes with it.").waitFor();
  assert.equal((await srv.api("GET", `/api/seo/campaigns/${campaign.id}`, admin)).body.data.agent_id, null);

  // Delete: the confirmation names the agent.
  await detail.getByRole("button", { name: "Delete the agent…" }).click();
  const confirm = page.getByRole("alertdialog", { name: "Confirm deletion" });
  assert.match(await confirm.innerText(), /Delete the agent “Gardener” and all its past runs\?/);
  assert.deepEqual(await axeCheck(page), [], "delete confirmation");
  await confirm.getByRole("button", { name: "Delete “Gardener”" }).click();
  await page.getByText("Agent “Gardener” deleted.").waitFor();
  await page.getByText("No agent yet.").waitFor();
  assert.equal((await srv.api("GET", `/api/agents/${agent.id}`, admin)).status, 404);
  await close();
});

test("an editor sets temperature and max tokens back to the model's default; replacing a campaign's agent is asked first", async () => {
  const mk = async (body) => {
    const r = await srv.api("POST", "/api/agents", admin, { kind: "writer", environment_id: env.id, ...body });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return r.body.data;
  };
  const trimmer = await mk({ name: "Trimmer", temperature: 0.5, max_tokens: 600 });
  const weeder = await mk({ name: "Weeder" });
  const c = await srv.api("POST", "/api/seo/campaigns", admin, { environment_id: env.id, name: "Summer beds", target: "wordpress", agent_id: weeder.id });
  assert.equal(c.status, 201, JSON.stringify(c.body));
  const { page, close } = await openAs(browser, srv, "ed@example.com", `/e/${env.id}/agents`);
  await page.getByRole("button", { name: "Trimmer" }).click();
  const detail = page.getByRole("region", { name: "Trimmer" });
  await detail.getByRole("button", { name: "Edit the agent" }).click();
  const edit = page.getByRole("form", { name: "Edit “Trimmer”" });
  assert.equal(await edit.getByRole("spinbutton", { name: "Temperature" }).inputValue(), "0.5");
  await edit.getByRole("button", { name: "Use the model's default temperature" }).click();
  assert.equal(await edit.getByRole("spinbutton", { name: "Temperature" }).inputValue(), "");
  await edit.getByRole("spinbutton", { name: "Max output tokens" }).fill("");
  assert.deepEqual(await axeCheck(page), [], "edit form, cleared");
  await edit.getByRole("button", { name: "Save the agent" }).click();
  await page.getByText("Agent “Trimmer” saved.").waitFor();
  const got = (await srv.api("GET", `/api/agents/${trimmer.id}`, admin)).body.data;
  assert.deepEqual([got.temperature, got.max_tokens], [null, null]);
  await detail.getByText("the settings'").first().waitFor();

  // Summer beds writes with Weeder: assigning Trimmer asks first, naming it.
  await detail.getByRole("combobox", { name: "Campaign to assign it to" }).selectOption({ label: "Summer beds" });
  await detail.getByRole("button", { name: "Assign to the campaign" }).click();
  const confirm = page.getByRole("alertdialog", { name: "Confirm replacing the agent" });
  assert.match(await confirm.innerText(), /The campaign “Summer beds” writes with the agent “Weeder”\. Assign “Trimmer” instead\?/);
  assert.deepEqual(await axeCheck(page), [], "replace confirmation");
  await confirm.getByRole("button", { name: "Cancel" }).click();
  assert.equal((await srv.api("GET", `/api/seo/campaigns/${c.body.data.id}`, admin)).body.data.agent_id, weeder.id, "cancelled: unchanged");
  await detail.getByRole("button", { name: "Assign to the campaign" }).click();
  await confirm.getByRole("button", { name: "Replace “Weeder”" }).click();
  await detail.getByRole("button", { name: "Take it off Summer beds" }).waitFor();
  assert.equal((await srv.api("GET", `/api/seo/campaigns/${c.body.data.id}`, admin)).body.data.agent_id, trimmer.id);
  await close();
});

test("an admin chooses the provider credential too; a viewer sees the agents with no action", async () => {
  const a = await srv.api("POST", "/api/agents", admin, { name: "Proofreader", kind: "editor", environment_id: env.id, system_prompt: "Fix the typos." });
  assert.equal(a.status, 201, JSON.stringify(a.body));
  {
    const { page, close } = await openAs(browser, srv, "ann@example.com", `/e/${env.id}/agents`);
    await page.getByRole("button", { name: "Proofreader" }).click();
    await page.getByRole("button", { name: "Edit the agent" }).click();
    const edit = page.getByRole("form", { name: "Edit “Proofreader”" });
    await edit.getByLabel("Provider credential").selectOption({ label: "Stand-in (openai, gpt-4o-mini)" });
    await edit.getByRole("button", { name: "Save the agent" }).click();
    await page.getByText("Agent “Proofreader” saved.").waitFor();
    const cred = (await srv.api("GET", "/api/configurations", admin)).body.data.items[0];
    assert.equal((await srv.api("GET", `/api/agents/${a.body.data.id}`, admin)).body.data.credential_id, cred.id);
    assert.equal(await page.getByRole("link", { name: "Add a credential" }).count(), 0);
    await close();
  }
  // A run's notification links to /e/<id>/agents?run=<run>: its agent opens
  // with that run's output shown.
  const x = await srv.api("POST", `/api/agents/${a.body.data.id}/execute`, admin, { input: "Teh cat", environment_id: env.id });
  assert.equal(x.status, 202, JSON.stringify(x.body));
  const runId = x.body.data.id;
  await waitFor(async () => (await srv.api("GET", `/api/agents/runs/${runId}`, admin)).body.data.status === "succeeded", 10_000, "the run done");
  const { page, close } = await openAs(browser, srv, "vic@example.com", `/e/${env.id}/agents?run=${runId}`);
  const detail = page.getByRole("region", { name: "Proofreader" });
  await detail.getByRole("table", { name: "Past runs" }).getByRole("row").filter({ hasText: "Succeeded" }).waitFor();
  await detail.getByText(/^Reply number \d+:/).waitFor({ state: "visible" });
  assert.equal(await page.getByRole("button", { name: "New agent" }).count(), 0);
  assert.equal(await page.getByRole("button", { name: "Edit the agent" }).count(), 0);
  assert.equal(await page.getByRole("button", { name: "Run" }).count(), 0);
  assert.equal(await page.getByRole("button", { name: "Delete the agent…" }).count(), 0);
  assert.deepEqual(await axeCheck(page), [], "agents, viewer");
  await close();
});
