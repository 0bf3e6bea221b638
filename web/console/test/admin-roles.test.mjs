// Admin and super_admin: only a super_admin acts on a super_admin (the
// server's rule, server/auth mayManage), grants super_admin, and keeps the
// backups. A plain admin sees a super_admin's account without Manage and
// its actions, cannot pick super_admin for anyone, and sees no Backups; a
// super_admin has all of them.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { axeCheck, launch, openAs, startCopydesk, TEAM } from "./harness.mjs";

let srv;
let browser;
before(async () => {
  srv = await startCopydesk({ users: TEAM });
  browser = await launch();
});
after(async () => {
  await browser?.close();
  await srv?.stop();
});

test("a plain admin is offered nothing on a super_admin, no super_admin role and no Backups", async () => {
  const { page, close } = await openAs(browser, srv, "adam@example.com", "/admin/users");
  const table = page.getByRole("table", { name: "Users" });
  const ann = table.getByRole("row", { name: /ann@example\.com Super admin/ });
  await ann.waitFor();
  await ann.getByText("Only a super admin manages ann").waitFor();
  assert.equal(await ann.getByRole("button").count(), 0, "no action on the super_admin's row");
  assert.equal(await page.getByRole("button", { name: "Manage ann" }).count(), 0);
  assert.deepEqual(await axeCheck(page), [], "users, as a plain admin");

  // Another account: managed, but super_admin is not among the roles.
  await table.getByRole("button", { name: "Manage eddie" }).click();
  await page.getByRole("heading", { name: "Manage eddie" }).waitFor();
  const roles = await page.getByLabel("Role").locator("option").allInnerTexts();
  assert.deepEqual(roles, ["Admin", "Editor", "Viewer"]);
  await page.getByRole("button", { name: "Disable…" }).waitFor();
  // No environment yet: the access form links to where one is made.
  await page.getByRole("link", { name: "create one under Environments" }).click();
  await page.getByRole("heading", { name: "Environments", level: 1 }).waitFor();

  // Backups are the super_admins': no link in the header or the
  // administration's navigation, and at its address a line saying so.
  assert.equal(await page.getByRole("link", { name: "Backups" }).count(), 0);
  await page.getByRole("navigation", { name: "Administration" }).getByRole("link", { name: "Credentials" }).waitFor();
  await page.goto("/admin/backups");
  await page.getByText(/Backups are kept by super administrators/).waitFor();
  assert.equal(await page.getByRole("button", { name: "Take a backup" }).count(), 0);
  assert.deepEqual(await axeCheck(page), [], "backups, as a plain admin");

  // The server refuses what the screen does not offer.
  const token = (await srv.login("adam@example.com")).access_token;
  const annId = (await srv.api("GET", "/api/auth/users?q=ann", token)).body.data.items[0].id;
  assert.equal((await srv.api("PUT", `/api/auth/users/${annId}/status`, token, { is_active: false })).status, 403);
  await close();
});

test("a super_admin manages a super_admin's peers, grants super_admin and reaches Backups", async () => {
  const { page, close } = await openAs(browser, srv, "ann@example.com", "/admin/users");
  const table = page.getByRole("table", { name: "Users" });
  await table.getByRole("row", { name: /adam@example\.com Admin/ }).waitFor();
  await table.getByRole("button", { name: "Manage ann" }).waitFor();
  await table.getByRole("button", { name: "Manage adam" }).click();
  await page.getByRole("heading", { name: "Manage adam" }).waitFor();
  const roles = await page.getByLabel("Role").locator("option").allInnerTexts();
  assert.deepEqual(roles, ["Super admin", "Admin", "Editor", "Viewer"]);
  await page.getByRole("button", { name: "Disable…" }).waitFor();
  await page.getByRole("button", { name: "Reset two-factor…" }).waitFor();
  assert.deepEqual(await axeCheck(page), [], "users, as a super_admin");

  await page.getByRole("navigation", { name: "Administration" }).getByRole("link", { name: "Backups" }).click();
  await page.getByRole("heading", { name: "Backups", level: 1 }).waitFor();
  await page.getByRole("button", { name: "Take a backup" }).waitFor();
  await page.getByRole("banner").getByRole("link", { name: "Backups" }).waitFor();
  await close();
});
