// Messages: the empty state, the directory (searchable) of the people one
// may write to, a conversation: sending, the other side's unread count and
// its reading (the sender then sees "read"), a reply, and deleting a
// message for oneself after a confirmation (the other side keeps it).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { axeCheck, grantAll, launch, openAs, startCopydesk, TEAM } from "./harness.mjs";

let srv;
let browser;
before(async () => {
  srv = await startCopydesk({ users: TEAM });
  browser = await launch();
  const admin = (await srv.login("ann@example.com")).access_token;
  const env = (await srv.api("POST", "/api/environments", admin, { name: "Garden blog" })).body.data;
  await grantAll(srv, admin, env.id);
});
after(async () => {
  await browser?.close();
  await srv?.stop();
});

test("write to someone from the directory, read, reply and delete", async () => {
  const ed = await openAs(browser, srv, "ed@example.com", "/");
  await ed.page.getByRole("link", { name: "Messages" }).click();
  await ed.page.getByRole("heading", { name: "Messages", level: 1 }).waitFor();
  await ed.page.getByText(/No messages yet\. Choose someone in the directory/).waitFor();
  const directory = ed.page.getByRole("region", { name: "Directory" });
  await directory.getByRole("link", { name: "Write to ann" }).waitFor();
  assert.deepEqual(await axeCheck(ed.page), [], "messages, empty");
  await directory.getByLabel("Find a person").fill("vi");
  await directory.getByRole("link", { name: "Write to ann" }).waitFor({ state: "detached" });
  await directory.getByRole("link", { name: "Write to vic" }).click();

  const thread = ed.page.getByRole("region", { name: "Conversation with vic" });
  await thread.getByText("No messages with vic yet: write the first one below.").waitFor();
  await thread.getByLabel("Message to vic").fill("The basil post is ready for review.");
  await thread.getByRole("button", { name: "Send" }).click();
  await thread.getByText("The basil post is ready for review.").waitFor();
  await thread.getByText(/not read yet/).waitFor();
  await ed.page.getByRole("region", { name: "Conversations" }).getByRole("link", { name: "vic" }).waitFor();
  assert.deepEqual(await axeCheck(ed.page), [], "a conversation");

  // Away from the conversation, eddie's list counts vic's reply as it comes.
  await ed.page.getByRole("link", { name: "Messages", exact: true }).click();
  await thread.waitFor({ state: "detached" });

  // The other side: one unread, read when the conversation opens, a reply.
  const vic = await openAs(browser, srv, "vic@example.com", "/messages");
  const convs = vic.page.getByRole("region", { name: "Conversations" });
  await convs.getByRole("link", { name: "eddie, 1 unread" }).click();
  const back = vic.page.getByRole("region", { name: "Conversation with eddie" });
  await back.getByText("The basil post is ready for review.").waitFor();
  await convs.getByRole("link", { name: "eddie", exact: true }).waitFor();
  await back.getByLabel("Message to eddie").fill("Thanks, reading it now.");
  await back.getByRole("button", { name: "Send" }).click();
  await back.getByText("Thanks, reading it now.").waitFor();

  // Live for the sender: the unread count, and the bell's notification
  // opens the conversation, which shows the reply and his message read.
  const edConvs = ed.page.getByRole("region", { name: "Conversations" });
  await edConvs.getByRole("link", { name: "vic, 1 unread" }).waitFor();
  await ed.page.getByRole("button", { name: /^Notifications, 1 unread$/ }).click();
  await ed.page.getByRole("region", { name: "Notifications" }).getByRole("link", { name: "New message from vic" }).click();
  await thread.getByText("Thanks, reading it now.").waitFor();
  await edConvs.getByRole("link", { name: "vic", exact: true }).waitFor();
  await thread.getByText(/^You, .* · read /).waitFor();

  // While the conversation is open, a new message shows without a reload.
  await back.getByLabel("Message to eddie").fill("One more thing: the photo.");
  await back.getByRole("button", { name: "Send" }).click();
  await thread.getByText("One more thing: the photo.").waitFor();

  // Delete his own message, for himself only.
  const mine = thread.getByRole("listitem").filter({ hasText: "The basil post is ready for review." });
  await mine.getByRole("button", { name: /^Delete the message of / }).click();
  const ask = mine.getByRole("alertdialog", { name: "Delete the message" });
  await ask.getByText("Delete your message “The basil post is ready for review.” from your messages? vic keeps it.").waitFor();
  await ask.getByRole("button", { name: "Delete for me" }).click();
  // exact: until the answer comes, the dialog still quotes the message.
  await thread.getByText("The basil post is ready for review.", { exact: true }).waitFor({ state: "detached" });
  await thread.getByText("Thanks, reading it now.").waitFor();
  const vicToken = (await srv.login("vic@example.com")).access_token;
  const kept = (await srv.api("GET", "/api/messages/inbox", vicToken)).body.data.items.map((m) => m.body);
  assert.deepEqual(kept, ["The basil post is ready for review."]);
  await vic.close();
  await ed.close();
});
