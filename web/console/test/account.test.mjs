// Your account: the profile saved (the header shows the new username), an
// avatar uploaded, shown and removed after a confirmation; two-factor
// authentication turned on by scanning the QR code (a data: image the CSP
// allows) and confirming with a code, the recovery codes shown once and
// downloaded, then turned off; the sessions with their device, place and
// last seen, this device marked, one
// ended after a confirmation (its token refused from then on) and this
// device's ending signs out here; the license activated with a key (a
// wrong key's words at the field, a key held by another account's at the
// form) and deactivated after a confirmation; an API token made (its
// secret shown once and copied), used, and revoked after a confirmation.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { crc32, deflateSync } from "node:zlib";
import { axeCheck, binary, launch, openAs, PASSWORD, startCopydesk, TEAM, totp, waitFor } from "./harness.mjs";

let srv;
let browser;
// The server trusts a signing key of this test's (copydesk license keygen),
// so issue() makes license keys it accepts, as a vendor would.
const keys = mkdtempSync(join(tmpdir(), "copydesk-license-"));
const signing = join(keys, "signing.pem");
const issue = (...args) =>
  execFileSync(binary(), ["license", "issue", "--private-key", signing, "--licensee", "Acme Content", "--plan", "team", "--seats", "5", ...args], { encoding: "utf8" }).trim();

before(async () => {
  const out = execFileSync(binary(), ["license", "keygen", "--out", signing], { encoding: "utf8" });
  const pub = /public key: (\S+)/.exec(out)[1];
  srv = await startCopydesk({ users: TEAM, args: ["--license-public-key", pub] });
  browser = await launch();
});
after(async () => {
  await browser?.close();
  await srv?.stop();
  rmSync(keys, { recursive: true, force: true });
});

// described is the text a control's aria-describedby points at.
const described = (control) =>
  control.evaluate((e) => (e.getAttribute("aria-describedby") ?? "").split(" ").map((id) => document.getElementById(id)?.textContent ?? "").join(" "));

// png is a w×h image of one colour, as a PNG file.
function png(w, h, [r, g, b]) {
  const chunk = (type, data) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type, "ascii"), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(td));
    return Buffer.concat([len, td, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // RGB
  const row = Buffer.concat([Buffer.from([0]), Buffer.from(Array.from({ length: w }, () => [r, g, b]).flat())]);
  const raw = Buffer.concat(Array.from({ length: h }, () => row));
  return Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), chunk("IHDR", ihdr), chunk("IDAT", deflateSync(raw)), chunk("IEND", Buffer.alloc(0))]);
}

test("the profile and the avatar", async () => {
  const { page, close } = await openAs(browser, srv, "ed@example.com", "/");
  await page.getByRole("link", { name: "Your account: eddie" }).click();
  await page.getByRole("heading", { name: "Your account", level: 1 }).waitFor();
  const profile = page.getByRole("region", { name: "Profile" });
  await profile.getByRole("textbox", { name: "Full name" }).fill("Eddie Editor");
  await profile.getByRole("textbox", { name: "Username" }).fill("eddie2");
  // A new e-mail address asks for the password; without it the server's
  // words are shown beside that field.
  await profile.getByRole("textbox", { name: "E-mail" }).fill("eddie@example.com");
  const current = profile.getByLabel("Current password");
  await profile.getByRole("button", { name: "Save the profile" }).click();
  await waitFor(async () => (await current.getAttribute("aria-invalid")) === "true", 10_000, "current password marked");
  await current.fill(PASSWORD);
  await profile.getByRole("button", { name: "Save the profile" }).click();
  await profile.getByText("Profile saved.").waitFor();
  await page.getByRole("link", { name: "Your account: eddie2" }).waitFor();
  const me = (await srv.login("eddie@example.com")).access_token;
  const u = (await srv.api("GET", "/api/auth/me", me)).body.data;
  assert.deepEqual([u.full_name, u.username, u.email], ["Eddie Editor", "eddie2", "eddie@example.com"]);
  assert.deepEqual(await axeCheck(page), [], "account");

  // The avatar: uploaded, shown (fetched with the token, as a data: image).
  const avatar = page.getByRole("region", { name: "Avatar" });
  await avatar.getByText("No avatar yet.").waitFor();
  await avatar.getByLabel("Upload an avatar").setInputFiles({ name: "me.png", mimeType: "image/png", buffer: png(64, 64, [200, 80, 40]) });
  const img = avatar.getByRole("img", { name: "Your avatar" });
  await img.waitFor();
  await waitFor(() => img.evaluate((e) => e.complete && e.naturalWidth === 64), 10_000, "the avatar drawn");
  assert.match(await img.getAttribute("src"), /^data:image\/png;base64,/);
  // Not an image: the server's words.
  await avatar.getByLabel("Replace the avatar").setInputFiles({ name: "notes.png", mimeType: "image/png", buffer: Buffer.from("not an image at all") });
  await avatar.getByRole("alert").waitFor();
  await avatar.getByRole("button", { name: "Remove the avatar…" }).click();
  const confirm = page.getByRole("alertdialog", { name: "Confirm removal" });
  assert.match(await confirm.innerText(), /Remove your avatar\?/);
  await confirm.getByRole("button", { name: "Remove the avatar" }).click();
  await avatar.getByText("No avatar yet.").waitFor();
  assert.equal((await srv.api("GET", "/api/auth/me", me)).body.data.avatar_url, null);
  await close();
});

test("two-factor authentication on with the QR code, recovery codes downloaded once, then off", async () => {
  const { page, close } = await openAs(browser, srv, "vic@example.com", "/account");
  const tf = page.getByRole("region", { name: "Two-factor authentication" });
  await tf.getByRole("button", { name: "Turn on two-factor authentication" }).click();
  const qr = tf.getByRole("img", { name: "QR code to scan with an authenticator app" });
  await qr.waitFor();
  assert.match(await qr.getAttribute("src"), /^data:image\/png;base64,/);
  // Drawn: the CSP's img-src allows data: (a refused image would be a
  // problem the page reports, and would have no size).
  await waitFor(() => qr.evaluate((e) => e.complete && e.naturalWidth > 0), 10_000, "the QR code drawn");
  assert.deepEqual(await axeCheck(page), [], "two-factor setup");
  const secret = (await tf.locator("code").innerText()).trim();
  const code = tf.getByRole("textbox", { name: "Code from the app" });
  const wrong = String((Number(totp(secret)) + 500_000) % 1_000_000).padStart(6, "0");
  await code.fill(wrong);
  await tf.getByLabel("Your password").fill(PASSWORD);
  await tf.getByRole("button", { name: "Confirm and turn on" }).click();
  await tf.getByRole("alert").or(tf.locator("[aria-invalid=true]")).first().waitFor();
  // The previous step's code (the server takes each step once; the one
  // after is left for turning it off).
  await code.fill(totp(secret, Date.now() - 30_000));
  await tf.getByRole("button", { name: "Confirm and turn on" }).click();
  const codes = page.getByRole("region", { name: "Your recovery codes" });
  await codes.waitFor();
  const shown = (await codes.getByRole("listitem").allInnerTexts()).map((s) => s.trim());
  assert.equal(shown.length, 10);
  assert.deepEqual(await axeCheck(page), [], "recovery codes");
  const [download] = await Promise.all([page.waitForEvent("download"), codes.getByRole("link", { name: "Download the recovery codes" }).click()]);
  assert.equal(download.suggestedFilename(), "copydesk-recovery-codes.txt");
  const text = await readFile(await download.path(), "utf8");
  for (const c of shown) assert.ok(text.includes(c), "the file holds " + c);
  await codes.getByRole("button", { name: "I have saved them" }).click();
  await tf.getByText("On. 10 recovery codes left.").waitFor();
  assert.equal(await page.getByRole("region", { name: "Your recovery codes" }).count(), 0, "shown once");
  assert.deepEqual(await axeCheck(page), [], "account, two-factor on");
  // A sign-in now needs a code; with one, the API says it is on.
  assert.notEqual((await srv.api("POST", "/api/auth/login", "", { email: "vic@example.com", password: PASSWORD })).body?.data?.access_token ? "token" : "none", "token");
  const t = (await srv.login("vic@example.com", PASSWORD, totp(secret))).access_token;
  assert.equal((await srv.api("GET", "/api/auth/2fa", t)).body.data.two_factor_enabled, true);

  // Off, with a recovery code.
  await tf.getByRole("textbox", { name: "Code or recovery code" }).fill(shown[0]);
  await tf.getByRole("button", { name: "Turn off two-factor authentication" }).click();
  await tf.getByRole("button", { name: "Turn on two-factor authentication" }).waitFor();
  await srv.login("vic@example.com");
  await close();
});

test("sessions: this device marked, another ended after a confirmation, ending this one signs out; the license", async () => {
  const other = (await srv.login("ann@example.com")).access_token;
  const { page, close } = await openAs(browser, srv, "ann@example.com", "/account");
  const sessions = page.getByRole("table", { name: "Sessions" });
  await sessions.getByRole("row").filter({ hasText: "(this device)" }).waitFor();
  assert.equal(await sessions.getByRole("row").count(), 3, "header and two sessions");
  // Device (read from the User-Agent), place (the IP address, as the API
  // answers it) and last seen (a time, today's), in the page's own format.
  const listed = (await srv.api("GET", "/api/auth/sessions", other)).body.data.items;
  assert.deepEqual(listed.map((s) => s.ip), ["127.0.0.1", "127.0.0.1"]);
  const today = await page.evaluate(() => new Intl.DateTimeFormat(undefined, { dateStyle: "medium" }).format(new Date()));
  const cells = async (row) => [(await row.getByRole("rowheader").innerText()).trim(), ...(await row.getByRole("cell").allInnerTexts()).map((t) => t.trim())];
  const [device, place, seen] = await cells(sessions.getByRole("row").filter({ hasText: "(this device)" }));
  assert.match(await page.evaluate(() => navigator.userAgent), /Chrome\/.*Linux|Linux.*Chrome\//);
  assert.equal(device, "Chrome on Linux (this device)");
  assert.equal(place, "127.0.0.1");
  assert.ok(seen.includes(today), `last seen ${seen} is today (${today})`);
  // node's fetch sends "node", which names no browser.
  const [otherDevice, otherPlace, otherSeen] = await cells(sessions.getByRole("row").filter({ hasNotText: "(this device)" }).filter({ has: page.getByRole("cell") }));
  assert.equal(otherDevice, "A client");
  assert.equal(otherPlace, "127.0.0.1");
  assert.ok(otherSeen.includes(today), `last seen ${otherSeen} is today`);
  const license = page.getByRole("region", { name: "License" });
  await license.getByText("No license activated").waitFor();
  assert.deepEqual(await axeCheck(page), [], "sessions and license");

  // The other session (made with node's fetch): ended after a confirmation.
  const end = sessions.getByRole("button", { name: /^End the session of .*\d$/ });
  await end.click();
  const confirm = page.getByRole("alertdialog", { name: "Confirm ending the session" });
  assert.match(await confirm.innerText(), /That device will have to sign in again/);
  await confirm.getByRole("button", { name: "End the session" }).click();
  await page.getByText(/^Ended the session of /).waitFor();
  await waitFor(async () => (await sessions.getByRole("row").count()) === 2, 10_000, "one session left");
  assert.equal((await srv.api("GET", "/api/auth/me", other)).status, 401);

  // This device: signed out here.
  await sessions.getByRole("button", { name: /\(this device\)$/ }).click();
  assert.match(await confirm.innerText(), /you will be signed out here/);
  await confirm.getByRole("button", { name: "End the session" }).click();
  await page.getByRole("button", { name: "Sign in" }).waitFor();
  await close();
});

test("the license: a wrong key's words at the field, one held elsewhere refused, activated, deactivated after a confirmation", async () => {
  const { page, close } = await openAs(browser, srv, "vic@example.com", "/account");
  const license = page.getByRole("region", { name: "License" });
  await license.getByText("No license activated").waitFor();
  const field = license.getByRole("textbox", { name: "License key" });
  await field.fill("hello");
  await license.getByRole("button", { name: "Activate the license" }).click();
  await waitFor(async () => (await field.getAttribute("aria-invalid")) === "true", 10_000, "the key marked");
  assert.match(await described(field), /not a copydesk license key/);
  assert.deepEqual(await axeCheck(page), [], "license with a wrong key");

  // A key active on another account: the server's words at the form.
  const held = issue("--days", "30");
  const ann = (await srv.login("ann@example.com")).access_token;
  assert.equal((await srv.api("POST", "/api/auth/license/activate", ann, { license_key: held })).status, 200);
  await field.fill(held);
  await license.getByRole("button", { name: "Activate the license" }).click();
  await license.getByRole("alert").filter({ hasText: /already active on another account/ }).waitFor();
  assert.equal(await field.getAttribute("aria-invalid"), null);

  const key = issue("--days", "30");
  await field.fill(key);
  await license.getByRole("button", { name: "Activate the license" }).click();
  await license.getByText("License activated.").waitFor();
  const facts = await license.locator("dl").innerText();
  assert.match(facts, /Active/);
  assert.match(facts, /Acme Content/);
  assert.match(facts, /team/);
  assert.match(facts, /Expires/);
  assert.equal(await field.count(), 0, "no second key while one is held");
  const vic = (await srv.login("vic@example.com")).access_token;
  const held2 = (await srv.api("GET", "/api/auth/license", vic)).body.data;
  assert.equal(held2.state, "active");
  // The seats in use are the server's count (the harness's team, which grows).
  assert.match(facts, new RegExp(`\\b${held2.seats_in_use} in use of 5\\b`));
  assert.deepEqual(await axeCheck(page), [], "license active");

  await license.getByRole("button", { name: "Deactivate the license…" }).click();
  const confirm = page.getByRole("alertdialog", { name: "Confirm deactivation" });
  assert.match(await confirm.innerText(), /Deactivate the license of Acme Content \(plan team, 5 seats\)\? Your account will have no license/);
  await confirm.getByRole("button", { name: "Cancel" }).click();
  assert.equal((await srv.api("GET", "/api/auth/license", vic)).body.data.state, "active", "cancel keeps it");
  await license.getByRole("button", { name: "Deactivate the license…" }).click();
  await confirm.getByRole("button", { name: "Deactivate the license" }).click();
  await license.getByText(/^License deactivated/).waitFor();
  await license.getByText("No license activated").waitFor();
  assert.equal((await srv.api("GET", "/api/auth/license", vic)).body.data.state, "inactive");
  // Freed: the key can now be activated on another account.
  assert.equal((await srv.api("POST", "/api/auth/license/activate", ann, { license_key: key })).status, 200);
  await close();
});

test("API tokens: made with the secret shown once and copied, used, revoked after a confirmation naming it", async () => {
  const ann = (await srv.login("ann@example.com")).access_token;
  const env = (await srv.api("POST", "/api/environments", ann, { name: "Token shop" })).body.data;
  const { page, context, close } = await openAs(browser, srv, "ann@example.com", "/account");
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: srv.base });
  const tokens = page.getByRole("region", { name: "API tokens" });
  await tokens.getByText("No API tokens.").waitFor();
  await tokens.getByRole("button", { name: "New API token" }).click();
  const form = tokens.getByRole("form", { name: "New API token" });
  // No name: the server's words beside the field.
  await form.getByRole("button", { name: "Make the token" }).click();
  const name = form.getByRole("textbox", { name: "Name" });
  await waitFor(async () => (await name.getAttribute("aria-invalid")) === "true", 10_000, "the name marked");
  await name.fill("n8n publishing");
  await form.getByRole("checkbox", { name: /Read only/ }).check();
  await form.getByRole("combobox", { name: "Expires" }).selectOption({ label: "In 30 days" });
  await form.getByRole("checkbox", { name: "Token shop" }).check();
  await form.getByRole("button", { name: "Make the token" }).click();
  const shown = page.getByRole("region", { name: "Your new token n8n publishing" });
  await shown.waitFor();
  assert.match(await shown.innerText(), /shown only this once/);
  const secret = /cdk_\S+/.exec(await shown.innerText())[0];
  await shown.getByRole("button", { name: "Copy the token" }).click();
  await shown.getByText("Copied.").waitFor();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), secret);
  assert.deepEqual(await axeCheck(page), [], "a new token");

  const table = page.getByRole("table", { name: "API tokens" });
  const row = table.getByRole("row").filter({ hasText: "n8n publishing" });
  assert.match(await row.innerText(), /Read only, Token shop/);
  assert.match(await row.innerText(), /Never/, "not used yet");
  // The secret is in no list: once "I have copied it", it is gone.
  await shown.getByRole("button", { name: "I have copied it" }).click();
  assert.equal(await page.getByText(secret).count(), 0);
  const listed = (await srv.api("GET", "/api/auth/tokens", ann)).body.data.items;
  assert.equal(listed.length, 1);
  assert.equal(JSON.stringify(listed).includes(secret), false);

  // It works, as what it was given: reading, not writing.
  const me = await fetch(srv.base + "/api/auth/me", { headers: { Authorization: "Bearer " + secret } });
  assert.equal(me.status, 200);
  assert.equal((await me.json()).data.email, "ann@example.com");
  assert.equal((await srv.api("GET", `/api/environments/${env.id}`, secret)).status, 200);
  assert.equal((await srv.api("POST", "/api/environments", secret, { name: "Not with a read-only token" })).status, 403);
  await page.reload();
  // Last used (the second cell after the name): a time now.
  const lastUsed = row.getByRole("cell").nth(1);
  await waitFor(async () => (await lastUsed.innerText()).trim() !== "Never", 10_000, "last used shown");
  assert.match(await lastUsed.innerText(), /\d/);

  await row.getByRole("button", { name: "Revoke the token n8n publishing" }).click();
  const confirm = page.getByRole("alertdialog", { name: "Confirm revoking the token" });
  assert.match(await confirm.innerText(), /Revoke the token n8n publishing \(cdk_.*…\), last used .*\? Whatever uses it is refused/);
  await confirm.getByRole("button", { name: "Revoke the token" }).click();
  await tokens.getByText("Revoked the token n8n publishing.").waitFor();
  await tokens.getByText("No API tokens.").waitFor();
  const refused = await fetch(srv.base + "/api/auth/me", { headers: { Authorization: "Bearer " + secret } });
  assert.equal(refused.status, 401);
  await close();
});
