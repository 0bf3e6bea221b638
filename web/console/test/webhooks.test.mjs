// Webhook deliveries verify with the Standard Webhooks reference library
// (npm standardwebhooks), as a receiver would check them: a ping, and the
// retries of a delivery the receiver refused twice, each signed anew with
// the same webhook-id. No browser: a served copydesk and a local receiver.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, test } from "node:test";
import { Webhook } from "standardwebhooks";
import { startCopydesk } from "./harness.mjs";

let srv;
let receiver;
const got = [];
let refuse = 0; // how many requests to answer 500 from now on

before(async () => {
  // Webhooks go through the web sources' guard: the receiver is on
  // loopback, which --web-sources-private allows.
  srv = await startCopydesk({ args: ["--web-sources-private", "--webhook-retry-delay", "200ms"] });
  receiver = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      got.push({ headers: { ...req.headers }, body });
      const status = refuse > 0 ? 500 : 200;
      refuse = Math.max(0, refuse - 1);
      res.writeHead(status).end(status === 200 ? "ok" : "not now");
    });
  });
  await new Promise((resolve) => receiver.listen(0, "127.0.0.1", resolve));
});
after(async () => {
  receiver?.close();
  await srv?.stop();
});

async function waitFor(n) {
  const deadline = Date.now() + 20_000;
  while (got.length < n) {
    if (Date.now() > deadline) throw new Error(`${got.length} requests in 20 s; want ${n}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test("deliveries verify with the standardwebhooks library", async () => {
  const tok = (await srv.login("ann@example.com")).access_token;
  const env = (await srv.api("POST", "/api/environments", tok, { name: "Hooked blog" })).body.data;
  const url = `http://127.0.0.1:${receiver.address().port}/in`;
  const made = await srv.api("POST", "/api/webhooks", tok, { environment_id: env.id, url, events: ["post.published"] });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  const hook = made.body.data;
  const wh = new Webhook(hook.secret);

  assert.equal((await srv.api("POST", `/api/webhooks/${hook.id}/ping`, tok)).status, 202);
  await waitFor(1);
  const ping = wh.verify(got[0].body, got[0].headers);
  assert.equal(ping.type, "webhook.ping");
  assert.equal(ping.data.webhook_id, hook.id);
  assert.equal(ping.data.environment_id, env.id);

  refuse = 2;
  assert.equal((await srv.api("POST", `/api/webhooks/${hook.id}/ping`, tok)).status, 202);
  await waitFor(4);
  for (const r of got.slice(1)) {
    assert.equal(wh.verify(r.body, r.headers).type, "webhook.ping");
    assert.equal(r.headers["webhook-id"], got[1].headers["webhook-id"]);
  }
  assert.notEqual(got[1].headers["webhook-id"], got[0].headers["webhook-id"]);
  // Another secret does not verify.
  const other = new Webhook("whsec_" + Buffer.from("another secret of 32 bytes!!!!!!").toString("base64"));
  assert.throws(() => other.verify(got[0].body, got[0].headers));

  const list = await srv.api("GET", `/api/webhooks/${hook.id}/deliveries`, tok);
  const retried = list.body.data.items[0];
  assert.equal(retried.status, "succeeded");
  assert.deepEqual(retried.attempt_list.map((a) => a.status_code), [500, 500, 200]);
});
