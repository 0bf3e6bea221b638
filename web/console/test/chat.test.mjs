// Chat: an editor starts a conversation, watches the reply stream in from a
// local stand-in of the provider, sees the automatic title arrive, copies a
// code block, regenerates and steps through the replies (1 / 2, 2 / 2),
// edits a message into a branch of its own, stops a reply, renames,
// searches, exports (a blob: download, no token in an address) and deletes
// after a confirmation naming the conversation; a tab closed mid-reply
// finds the reply finished when it comes back.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { axeCheck, grantAll, launch, openAs, startCopydesk, TEAM, startProvider, useProvider, waitFor } from "./harness.mjs";

let srv;
let browser;
let provider;
let env;
let admin;
let answers = 0;
const long = (n) => Array.from({ length: n }, (_, i) => `w${i}`).join(" ");

before(async () => {
  srv = await startCopydesk({ users: TEAM });
  provider = await startProvider({
    every: 10,
    reply: (_, body) => {
      const system = body.messages?.[0]?.role === "system" ? String(body.messages[0].content) : "";
      if (system.startsWith("You name conversations")) {
        const shown = JSON.stringify(body.messages);
        return shown.includes("basil") ? "Basil questions" : shown.includes("pepper") ? "Pepper questions" : "Tomato questions";
      }
      const last = String(body.messages?.at(-1)?.content ?? "");
      if (last.includes("slowly")) return "Slow answer " + long(600) + " the end.";
      answers++;
      return `Answer ${answers}: plant them <script>window.__pwned=1</script> deep.\n\n\`\`\`sh\necho tomato-${answers}\n\`\`\`\n`;
    },
  });
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

test("an editor chats: streamed reply, automatic title, copy, regenerate and edit branches, rename, search, export, delete", async () => {
  const { page, context, close } = await openAs(browser, srv, "ed@example.com", `/e/${env.id}/chat`);
  await context.grantPermissions(["clipboard-read", "clipboard-write"]);
  await page.getByRole("heading", { name: "Chat", level: 1 }).waitFor();
  await page.getByText("No conversations yet: write a message to start one.").waitFor();
  assert.deepEqual(await axeCheck(page), [], "chat, empty");

  await page.getByRole("textbox", { name: "Message" }).fill("How deep do I plant tomatoes?");
  await page.getByRole("button", { name: "Send" }).click();
  // The reply arrives as Markdown; its markup stays text.
  const reply = page.getByRole("region", { name: "Reply 2" });
  await reply.getByText(/Answer 1: plant them/).waitFor();
  await reply.getByText("<script>window.__pwned=1</script>", { exact: false }).waitFor();
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  // The automatic title appears without a reload, in the heading and the list.
  await page.getByRole("heading", { name: "Tomato questions", level: 2 }).waitFor();
  await page.getByRole("link", { name: "Tomato questions" }).waitFor();
  assert.match(page.url(), /\?c=\d+$/);
  const convId = Number(new URL(page.url()).searchParams.get("c"));

  // A code block is copied.
  await reply.getByRole("button", { name: "Copy code" }).click();
  await reply.getByText("Copied").waitFor();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), "echo tomato-1");
  assert.deepEqual(await axeCheck(page), [], "chat, a conversation");

  // Regenerate: a second reply, shown as 2 / 2, and the first one back.
  await page.getByRole("button", { name: "Regenerate" }).click();
  await page.getByRole("region", { name: "Reply 2" }).getByText(/Answer 2:/).waitFor();
  const replies = page.getByRole("group", { name: "Replies at message 2" });
  await replies.getByText("2 / 2").waitFor();
  await replies.getByRole("button", { name: "Previous reply" }).click();
  await replies.getByText("1 / 2").waitFor();
  await page.getByRole("region", { name: "Reply 2" }).getByText(/Answer 1:/).waitFor();
  assert.equal(await replies.getByRole("button", { name: "Previous reply" }).isDisabled(), true);
  await replies.getByRole("button", { name: "Next reply" }).click();
  await replies.getByText("2 / 2").waitFor();

  // Edit the message: a new branch with its own reply; the old version stays.
  await page.getByRole("button", { name: "Edit message 1" }).click();
  await page.getByRole("textbox", { name: "Edit your message" }).fill("How deep for cherry tomatoes?");
  await page.getByRole("button", { name: "Send the edited message" }).click();
  await page.getByRole("region", { name: "Reply 2" }).getByText(/Answer 3:/).waitFor();
  const versions = page.getByRole("group", { name: "Versions of message 1" });
  await versions.getByText("2 / 2").waitFor();
  await page.getByText("How deep for cherry tomatoes?").waitFor();
  await versions.getByRole("button", { name: "Previous version of this message" }).click();
  await versions.getByText("1 / 2").waitFor();
  await page.getByText("How deep do I plant tomatoes?").waitFor();
  await page.getByRole("region", { name: "Reply 2" }).getByText(/Answer 2:/).waitFor();
  assert.deepEqual(await axeCheck(page), [], "chat, branches");

  // Stop: the reply keeps what it had, marked incomplete.
  await page.getByRole("textbox", { name: "Message" }).fill("Tell me slowly");
  await page.getByRole("button", { name: "Send" }).click();
  await page.getByRole("region", { name: "Reply being written" }).getByText(/Slow answer/).waitFor();
  await page.getByRole("button", { name: "Stop" }).click();
  await page.getByText("Stopped: the reply keeps what it had written.").waitFor();
  await page.getByText("Incomplete: the reply was stopped or cut off.").waitFor();
  const stopped = await page.getByRole("region", { name: "Reply 4" }).textContent();
  assert.ok(stopped.includes("Slow answer") && !stopped.includes("the end."), "stopped midway");

  // Rename.
  await page.getByRole("button", { name: "Rename…" }).click();
  await page.getByRole("textbox", { name: "Title" }).fill("Planting depth");
  await page.getByRole("button", { name: "Save the title" }).click();
  await page.getByRole("heading", { name: "Planting depth", level: 2 }).waitFor();
  await page.getByRole("link", { name: "Planting depth" }).waitFor();

  // Export: a download through a blob: address with the conversation's text.
  const [md] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Export as Markdown" }).click()]);
  assert.match(md.url(), /^blob:/);
  assert.equal(md.suggestedFilename(), "Planting-depth.md");
  const mdText = await (await md.createReadStream()).toArray().then((b) => Buffer.concat(b).toString());
  assert.match(mdText, /How deep do I plant tomatoes\?/);
  const [js] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Export as JSON" }).click()]);
  const json = JSON.parse(await (await js.createReadStream()).toArray().then((b) => Buffer.concat(b).toString()));
  assert.ok(JSON.stringify(json).includes("cherry tomatoes"), "the JSON holds every branch");

  // Delete one message: the confirmation names it and what goes with it.
  await page.getByRole("button", { name: "Delete message 3…" }).click();
  const delMsg = page.getByRole("alertdialog", { name: "Confirm deleting message 3" });
  await delMsg.getByText(/Delete message 3, your message “Tell me slowly”, and everything below it: the 1 later message of this branch/).waitFor();
  await delMsg.getByText(/shows the branch of the newest message left/).waitFor();
  assert.deepEqual(await axeCheck(page), [], "chat, confirm deleting a message");
  await delMsg.getByRole("button", { name: "Delete message 3", exact: true }).click();
  await page.getByText("Deleted 2 messages.").waitFor();
  await waitFor(async () => (await page.getByText("Tell me slowly").count()) === 0);
  await page.getByRole("region", { name: "Reply 2" }).waitFor();

  // Newest activity first: two more conversations go above it; a message
  // in the oldest moves it back to the top.
  const conversations = page.getByRole("region", { name: "Conversations" }).getByRole("listitem").getByRole("link");
  const order = async (want) => waitFor(async () => JSON.stringify(await conversations.allTextContents()) === JSON.stringify(want));
  for (const [ask, title] of [["What about basil?", "Basil questions"], ["And peppers?", "Pepper questions"]]) {
    await page.getByRole("link", { name: "New conversation" }).click();
    await page.getByRole("textbox", { name: "Message" }).fill(ask);
    await page.getByRole("button", { name: "Send" }).click();
    await page.getByRole("region", { name: "Reply 2" }).getByText(/Answer \d+:/).waitFor();
    await page.getByRole("heading", { name: title, level: 2 }).waitFor();
  }
  await order(["Pepper questions", "Basil questions", "Planting depth"]);
  await page.getByRole("link", { name: "Planting depth" }).click();
  await page.getByRole("heading", { name: "Planting depth", level: 2 }).waitFor();
  await page.getByRole("textbox", { name: "Message" }).fill("And how far apart?");
  await page.getByRole("button", { name: "Send" }).click();
  await page.getByText("And how far apart?").waitFor();
  await order(["Planting depth", "Pepper questions", "Basil questions"]);
  await page.getByRole("region", { name: "Reply 4" }).getByText(/Answer \d+:/).waitFor();

  // Search: the list finds each by its words.
  await page.getByRole("searchbox", { name: "Search conversations" }).fill("cherry");
  await waitFor(async () => (await conversations.count()) === 1);
  assert.equal(await conversations.textContent(), "Planting depth");
  await page.getByRole("searchbox", { name: "Search conversations" }).fill("zucchini");
  await page.getByText("No conversation holds “zucchini”.").waitFor();
  await page.getByRole("searchbox", { name: "Search conversations" }).fill("");

  // Delete, after a confirmation that names it.
  await page.getByRole("link", { name: "Planting depth" }).click();
  await page.getByRole("heading", { name: "Planting depth", level: 2 }).waitFor();
  await page.getByRole("button", { name: "Delete…" }).click();
  const confirm = page.getByRole("alertdialog", { name: "Confirm deletion" });
  await confirm.getByText("Delete the conversation “Planting depth” and all its messages?").waitFor();
  assert.deepEqual(await axeCheck(page), [], "chat, confirm deletion");
  await confirm.getByRole("button", { name: "Delete “Planting depth”" }).click();
  await page.getByRole("heading", { name: "New conversation", level: 2 }).waitFor();
  await waitFor(async () => (await page.getByRole("link", { name: "Planting depth" }).count()) === 0);
  const ed = (await srv.login("ed@example.com")).access_token;
  const r = await srv.api("GET", `/api/openchat/conversations/${convId}`, ed);
  assert.equal(r.status, 404);
  await close();
});

test("a tab closed mid-reply finds the reply finished when it comes back", async () => {
  const first = await openAs(browser, srv, "ed@example.com", `/e/${env.id}/chat`);
  await first.page.getByRole("textbox", { name: "Message" }).fill("Explain slowly please");
  await first.page.getByRole("button", { name: "Send" }).click();
  await first.page.getByRole("region", { name: "Reply being written" }).getByText(/Slow answer w0/).waitFor();
  const at = first.page.url();
  assert.match(at, /\?c=\d+$/);
  await first.close();

  // Another tab, later: the reply went on on the server. Coming back either
  // follows the rest of it or finds it done; either way it ends complete.
  const again = await openAs(browser, srv, "ed@example.com", new URL(at).pathname + new URL(at).search);
  const reply = again.page.getByRole("region", { name: "Reply 2" });
  await reply.getByText(/the end\./).waitFor({ timeout: 20_000 });
  assert.equal(await again.page.getByText("Incomplete: the reply was stopped or cut off.").count(), 0);
  assert.deepEqual(await axeCheck(again.page), [], "chat, reply finished");
  await again.close();
});

test("a reply whose stream drops is followed on from its last event (Last-Event-ID)", async () => {
  const { page, close } = await openAs(browser, srv, "ed@example.com", `/e/${env.id}/chat`);
  // The stream of the send is cut after its first events (the test reads
  // them from the server itself and hands the page only those); the reply
  // goes on on the server.
  await page.route(/\/api\/openchat\/conversations\/\d+\/messages$/, async (route) => {
    const req = route.request();
    if (req.method() !== "POST") return route.continue();
    const h = await req.allHeaders();
    const res = await fetch(req.url(), { method: "POST", body: req.postData(), headers: { authorization: h.authorization, "content-type": "application/json", accept: "text/event-stream" } });
    const reader = res.body.getReader();
    let buf = "";
    while ((buf.match(/\n\n/g) ?? []).length < 8) buf += new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    await route.fulfill({ status: 200, headers: { "content-type": "text/event-stream" }, body: buf.slice(0, buf.lastIndexOf("\n\n") + 2) });
  });
  const resumed = [];
  page.on("request", (r) => {
    if (/\/api\/openchat\/messages\/\d+\/stream$/.test(r.url())) resumed.push(r.headers()["last-event-id"]);
  });
  await page.getByRole("textbox", { name: "Message" }).fill("Answer slowly again");
  await page.getByRole("button", { name: "Send" }).click();
  // The rest arrives live through the resumed stream, before the reply is done.
  const live = page.getByRole("region", { name: "Reply being written" });
  await live.getByText(/ w100 /).waitFor({ timeout: 15_000 });
  const reply = page.getByRole("region", { name: "Reply 2" });
  await reply.getByText(/the end\./).waitFor({ timeout: 20_000 });
  assert.ok(resumed.length > 0 && resumed.every((id) => Number(id) > 0), `resumed with Last-Event-ID: ${JSON.stringify(resumed)}`);
  const text = (await reply.textContent()).replace(/\s+/g, " ");
  assert.equal((text.match(/Slow answer/g) ?? []).length, 1);
  assert.ok(text.includes("w0 w1 w2") && text.includes("w598 w599 the end."), "the whole reply");
  assert.equal(await page.getByRole("alert").count(), 0);
  await close();
});

test("a new conversation may be answered by one of the environment's agents", async () => {
  const r = await srv.api("POST", "/api/agents", admin, { kind: "writer", name: "Garden helper", environment_id: env.id, system_prompt: "You are the garden agent." });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  const { page, close } = await openAs(browser, srv, "ed@example.com", `/e/${env.id}/chat`);
  await page.getByLabel("Answered by").selectOption({ label: "Garden helper (agent)" });
  await page.getByRole("textbox", { name: "Message" }).fill("Which herbs for shade?");
  await page.getByRole("button", { name: "Send" }).click();
  await page.getByRole("region", { name: "Reply 2" }).getByText(/Answer \d+:/).waitFor();
  const asked = provider.requests.filter((b) => JSON.stringify(b.messages).includes("Which herbs for shade?"));
  assert.ok(asked.some((b) => b.messages[0].role === "system" && String(b.messages[0].content).includes("You are the garden agent.")), "the agent's system prompt went with it");
  const id = Number(new URL(page.url()).searchParams.get("c"));
  const ed = (await srv.login("ed@example.com")).access_token;
  assert.equal((await srv.api("GET", `/api/openchat/conversations/${id}`, ed)).body.data.agent_id, r.body.data.id);
  await close();
});

test("a viewer reads conversations but has no composer", async () => {
  const { page, close } = await openAs(browser, srv, "vic@example.com", `/e/${env.id}/chat`);
  await page.getByText("Writing in a conversation needs the editor role.").waitFor();
  assert.equal(await page.getByRole("button", { name: "Send" }).count(), 0);
  assert.deepEqual(await axeCheck(page), [], "chat, viewer");
  await close();
});
