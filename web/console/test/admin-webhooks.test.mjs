// Webhooks (administration): the empty state; a plain admin makes one (URL,
// events from the documented list) and sees its secret once; a ping reaches
// a local receiver and shows in the deliveries, which send one again with
// the same webhook-id; the list says how the last delivery went; an edit
// switches it off; a delete asks first, naming the URL.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, test } from "node:test";
import { axeCheck, launch, openAs, startCopydesk, TEAM, waitFor } from "./harness.mjs";

let srv;
let browser;
let receiver;
let url;
const got = [];
before(async () => {
  // The receiver is on loopback, which --web-sources-private allows.
  srv = await startCopydesk({ users: TEAM, args: ["--web-sources-private", "--webhook-retry-delay", "200ms"] });
  receiver = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      got.push({ id: req.headers["webhook-id"], body: JSON.parse(body) });
      res.writeHead(200).end("ok");
    });
  });
  await new Promise((ok) => receiver.listen(0, "127.0.0.1", ok));
  url = `http://127.0.0.1:${receiver.address().port}/hook`;
  browser = await launch();
});
after(async () => {
  await browser?.close();
  receiver?.close();
  await srv?.stop();
});

test("make a webhook, see its secret once, ping it, send a delivery again, edit and delete it", async () => {
  const token = (await srv.login("adam@example.com")).access_token;
  const env = (await srv.api("POST", "/api/environments", token, { name: "Hook blog" })).body.data;
  const { page, close } = await openAs(browser, srv, "adam@example.com", "/admin/users");
  await page.getByRole("navigation", { name: "Administration" }).getByRole("link", { name: "Webhooks" }).click();
  await page.getByRole("heading", { name: "Webhooks", level: 1 }).waitFor();
  await page.getByText(/No webhooks yet/).waitFor();
  assert.deepEqual(await axeCheck(page), [], "webhooks, empty");

  const form = page.getByRole("form", { name: "Add a webhook" });
  await form.getByLabel("Environment").selectOption(String(env.id));
  await form.getByLabel("URL").fill(url);
  await form.getByRole("checkbox", { name: /^post\.failed/ }).uncheck();
  await form.getByRole("checkbox", { name: /^run\.failed/ }).check();
  await form.getByRole("button", { name: "Add the webhook" }).click();
  const shown = page.getByRole("region", { name: `The signing secret of ${url}` });
  const secret = (await shown.getByLabel("Signing secret").innerText()).trim();
  assert.match(secret, /^whsec_[A-Za-z0-9+/=]+$/);
  const hook = (await srv.api("GET", `/api/webhooks?environment_id=${env.id}`, token)).body.data.items[0];
  assert.deepEqual(hook.events, ["post.published", "run.failed"]);
  assert.ok(secret.startsWith(hook.secret_prefix));
  const table = page.getByRole("table", { name: "Webhooks" });
  await table.getByRole("row", { name: new RegExp(`${url.replace(/\./g, "\\.")} Hook blog post\\.published, run\\.failed On Nothing sent yet`) }).waitFor();
  assert.deepEqual(await axeCheck(page), [], "webhooks, the secret");
  await shown.getByRole("button", { name: "I have copied it" }).click();
  assert.ok(!(await page.content()).includes(secret), "shown once only");

  // A ping reaches the receiver and shows in the deliveries.
  await table.getByRole("button", { name: `Send a ping to ${url}` }).click();
  await waitFor(() => got.length === 1, 20_000, "the ping");
  assert.equal(got[0].body.type, "webhook.ping");
  assert.equal(got[0].body.data.webhook_id, hook.id);
  const deliveries = page.getByRole("table", { name: "Deliveries" });
  const row = deliveries.getByRole("row", { name: /webhook\.ping/ });
  await row.getByText("Delivered").waitFor();
  await row.getByText("HTTP 200").waitFor();
  await table.getByRole("row", { name: /Delivered/ }).waitFor();
  assert.deepEqual(await axeCheck(page), [], "webhooks, deliveries");

  // Sent again: the same webhook-id.
  await row.getByRole("button", { name: /^Send again webhook\.ping/ }).click();
  await waitFor(() => got.length === 2, 20_000, "the delivery sent again");
  assert.equal(got[1].id, got[0].id);

  // Edit: another event, and switched off.
  await table.getByRole("button", { name: `Edit ${url}` }).click();
  const edit = page.getByRole("form", { name: `Edit the webhook to ${url}` });
  await edit.getByRole("checkbox", { name: /^keywords\.imported/ }).check();
  await edit.getByRole("checkbox", { name: "Enabled" }).uncheck();
  await edit.getByRole("button", { name: "Save the webhook" }).click();
  await page.getByRole("status").filter({ hasText: `The webhook to ${url} is saved.` }).waitFor();
  await table.getByRole("row", { name: /keywords\.imported Off/ }).waitFor();
  const saved = (await srv.api("GET", `/api/webhooks/${hook.id}`, token)).body.data;
  assert.equal(saved.enabled, false);
  assert.deepEqual(saved.events, ["post.published", "run.failed", "keywords.imported"]);
  assert.ok(await table.getByRole("button", { name: `Send a ping to ${url}` }).isDisabled(), "no ping while off");

  // Delete after a confirmation naming the URL (Escape closes it first).
  await table.getByRole("button", { name: `Delete… ${url}` }).click();
  const confirm = page.getByRole("alertdialog", { name: `Confirm deleting the webhook to ${url}` });
  await confirm.getByText(`Delete the webhook to ${url} and its deliveries?`).waitFor();
  assert.deepEqual(await axeCheck(page), [], "webhooks, delete confirmation");
  await page.keyboard.press("Escape");
  await confirm.waitFor({ state: "detached" });
  assert.equal((await srv.api("GET", `/api/webhooks/${hook.id}`, token)).status, 200, "nothing deleted before the confirmation");
  await table.getByRole("button", { name: `Delete… ${url}` }).click();
  await confirm.getByRole("button", { name: "Delete the webhook" }).click();
  await page.getByText(/No webhooks yet/).waitFor();
  assert.equal((await srv.api("GET", `/api/webhooks/${hook.id}`, token)).status, 404);
  await close();
});
