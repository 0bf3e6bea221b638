// The administration: an admin manages users (search, role, status,
// environment access, registration), credentials (added, shown masked,
// tested against a local stand-in of the provider, deleted after a
// confirmation naming it), environments (configuration with a test of the
// WordPress credential against a local stand-in site, delete with a
// confirmation) and AI settings (global and per environment, with price
// overrides). A non-admin sees no Administration and, at its address, the
// server's 403.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { axeCheck, launch, openAs, PASSWORD, startCopydesk, startProvider, startWordPress, TEAM, totp } from "./harness.mjs";

let srv;
let browser;
let provider;
let site;
let admin;
let roots;
before(async () => {
  roots = mkdtempSync(join(tmpdir(), "copydesk-astro-roots-"));
  // Three failed sign-ins lock an address here (the default is ten, after
  // two minutes of delays), so that the locked-account test is quick.
  srv = await startCopydesk({ users: TEAM, args: ["--astro-roots", roots, "--signin-lock-after", "3"] });
  provider = await startProvider();
  site = await startWordPress();
  browser = await launch();
  admin = (await srv.login("ann@example.com")).access_token;
});
after(async () => {
  await browser?.close();
  await srv?.stop();
  await provider?.close();
  await site?.close();
  rmSync(roots, { recursive: true, force: true });
});

test("credentials: empty state, add, masked, test, delete after a confirmation naming it", async () => {
  const { page, close } = await openAs(browser, srv, "ann@example.com", "/");
  await page.getByRole("link", { name: "Administration" }).click();
  await page.getByRole("heading", { name: "Users", level: 1 }).waitFor();
  await page.getByRole("navigation", { name: "Administration" }).getByRole("link", { name: "Credentials" }).click();
  await page.getByRole("heading", { name: "Credentials", level: 1 }).waitFor();
  await page.getByText(/No credentials yet/).waitFor();
  assert.deepEqual(await axeCheck(page), [], "credentials, empty");

  const secret = "sk-test-good-key-0001";
  await page.getByLabel("Name", { exact: true }).fill("Stand-in");
  await page.getByLabel("Provider").selectOption("openai_compatible");
  await page.getByLabel("API key").fill(secret);
  await page.getByLabel("Base URL").fill(provider.url);
  await page.getByLabel("Default model").fill("gpt-4o-mini");
  await page.getByRole("button", { name: "Save the credential" }).click();
  await page.getByRole("status").filter({ hasText: /Stand-in is saved\. .*will not be shown again/ }).waitFor();
  const table = page.getByRole("table", { name: "Credentials" });
  await table.getByRole("row", { name: /Stand-in/ }).waitFor();
  assert.equal(await page.getByLabel("API key").inputValue(), "", "the key field is emptied");
  assert.ok(!(await page.content()).includes(secret), "the secret is nowhere in the page");

  await table.getByRole("button", { name: "Test Stand-in" }).click();
  await page.getByRole("status").filter({ hasText: /Stand-in works \(\d+ ms\)/ }).waitFor();
  assert.deepEqual(await axeCheck(page), [], "credentials");

  await table.getByRole("button", { name: "Delete Stand-in…" }).click();
  const dialog = page.getByRole("alertdialog", { name: "Confirm deleting Stand-in" });
  await dialog.getByText(/Delete the credential Stand-in\?/).waitFor();
  await dialog.getByRole("button", { name: "Delete Stand-in" }).click();
  await page.getByText(/No credentials yet/).waitFor();
  const r = await srv.api("GET", "/api/configurations", admin);
  assert.equal(r.body.data.total, 0);
  await close();
});

test("environments: create, configure WordPress and Astro, test the site's credential, delete after a confirmation", async () => {
  const astro = join(roots, "herbs");
  mkdirSync(join(astro, "src", "content", "blog"), { recursive: true });
  writeFileSync(join(astro, "astro.config.mjs"), "export default {};\n");
  const { page, close } = await openAs(browser, srv, "ann@example.com", "/admin/environments");
  await page.getByRole("heading", { name: "Environments", level: 1 }).waitFor();
  await page.getByText(/No environments yet/).waitFor();
  assert.deepEqual(await axeCheck(page), [], "environments, empty");
  await page.getByLabel("Environment name").fill("Herb blog");
  await page.getByRole("button", { name: "Create the environment" }).click();
  await page.getByRole("heading", { name: "Herb blog", level: 2 }).waitFor();
  // No WordPress credential yet: the link to the screen that adds one.
  await page.getByRole("link", { name: /add an application password under Credentials/ }).waitFor();

  const cred = await srv.api("POST", "/api/configurations", admin, { name: "Herb site", provider: "wordpress", base_url: site.url, username: site.user, application_password: site.password });
  assert.equal(cred.status, 201, JSON.stringify(cred.body));
  await page.reload();
  await page.getByRole("button", { name: "Configure Herb blog" }).click();
  await page.getByLabel("Site address").fill(site.url);
  await page.getByLabel("WordPress credential").selectOption(String(cred.body.data.id));
  await page.getByLabel("Project folder").fill(astro);
  await page.getByLabel("Content folder").fill("src/content/blog");
  await page.getByLabel("Time zone").fill("Europe/Paris");
  await page.getByRole("button", { name: "Save the configuration" }).click();
  await page.getByRole("status").filter({ hasText: "The configuration of Herb blog is saved." }).waitFor();
  const env = (await srv.api("GET", "/api/environments", admin)).body.data.items[0];
  assert.equal(env.configuration.wordpress.base_url, site.url);
  assert.equal(env.configuration.wordpress.credential_id, cred.body.data.id);
  assert.equal(env.configuration.astro.content_dir, "src/content/blog");
  assert.equal(env.configuration.timezone, "Europe/Paris");

  await page.getByRole("button", { name: "Test the WordPress credential" }).click();
  await page.getByRole("status").filter({ hasText: /Herb site works/ }).waitFor();

  // The Astro folder test: what the server finds there, check by check.
  await page.getByRole("button", { name: "Test the Astro folder" }).click();
  const found = page.getByRole("list", { name: "What the server found" });
  await page.getByRole("status").filter({ hasText: "The Astro folder works" }).waitFor();
  await found.getByRole("listitem").filter({ hasText: "Writable by the server: ok" }).waitFor();
  await found.getByRole("listitem").filter({ hasText: "astro command installed: warning" }).waitFor();
  assert.deepEqual(await axeCheck(page), [], "environments");
  rmSync(join(astro, "src", "content", "blog"), { recursive: true });
  await page.getByRole("button", { name: "Test the Astro folder" }).click();
  await page.getByRole("status").filter({ hasText: "The Astro folder test failed: failed: content_folder" }).waitFor();
  await found.getByRole("listitem").filter({ hasText: /Content folder: failed.*mkdir -p/ }).waitFor();
  await found.getByRole("listitem").filter({ hasText: "Writable by the server: not checked" }).waitFor();

  // A relative project folder: the server's words beside the field.
  await page.getByLabel("Project folder").fill("herbs");
  await page.getByRole("button", { name: "Save the configuration" }).click();
  await page.getByLabel("Project folder").and(page.locator("[aria-invalid=true]")).waitFor();

  await page.getByRole("button", { name: "Delete Herb blog…" }).click();
  const dialog = page.getByRole("alertdialog", { name: "Confirm deleting Herb blog" });
  await dialog.getByText(/everything in it/).waitFor();
  await dialog.getByRole("button", { name: "Delete Herb blog" }).click();
  await page.getByText(/No environments yet/).waitFor();
  await srv.api("DELETE", `/api/configurations/${cred.body.data.id}`, admin);
  rmSync(astro, { recursive: true, force: true });
  await close();
});

test("users: search, role, status with a confirmation, environment access, registration", async () => {
  const env = (await srv.api("POST", "/api/environments", admin, { name: "Mint notes" })).body.data;
  const { page, close } = await openAs(browser, srv, "ann@example.com", "/admin/users");
  await page.getByRole("heading", { name: "Users", level: 1 }).waitFor();
  const table = page.getByRole("table", { name: "Users" });
  await table.getByRole("row", { name: /eddie/ }).waitFor();
  await page.getByLabel("Search users").fill("vic");
  await table.getByRole("row").filter({ has: page.getByRole("cell") }).nth(1).waitFor({ state: "detached" }); // one row left
  await table.getByRole("row", { name: /vic@example\.com Viewer Active/ }).waitFor();
  assert.deepEqual(await axeCheck(page), [], "users");

  await table.getByRole("button", { name: "Manage vic" }).click();
  await page.getByRole("heading", { name: "Manage vic" }).waitFor();
  await page.getByLabel("Role").selectOption("editor");
  await page.getByRole("button", { name: "Change role…" }).click();
  const roleDialog = page.getByRole("alertdialog", { name: "Confirm the role change" });
  await roleDialog.getByText("Make vic editor (now viewer)?").waitFor();
  assert.deepEqual(await axeCheck(page), [], "users, role confirmation");
  assert.equal((await srv.api("GET", "/api/auth/users?q=vic", admin)).body.data.items[0].role, "viewer", "nothing changes before the confirmation");
  await roleDialog.getByRole("button", { name: "Make vic editor" }).click();
  await page.getByRole("status").filter({ hasText: "vic is now editor." }).waitFor();
  await table.getByRole("row", { name: /vic@example\.com Editor/ }).waitFor();

  await page.getByRole("checkbox", { name: "Mint notes" }).check();
  await page.getByRole("button", { name: "Save access" }).click();
  await page.getByRole("status").filter({ hasText: "vic now sees 1 environment." }).waitFor();
  const vic = (await srv.api("GET", "/api/auth/users?q=vic", admin)).body.data.items[0];
  assert.deepEqual((await srv.api("GET", `/api/auth/users/${vic.id}/environments`, admin)).body.data.environment_ids, [env.id]);

  await page.getByRole("button", { name: "Disable…" }).click();
  const dialog = page.getByRole("alertdialog", { name: "Confirm disabling" });
  await dialog.getByText(/Disable vic \(vic@example\.com\)\?/).waitFor();
  assert.deepEqual(await axeCheck(page), [], "users, confirmation");
  await dialog.getByRole("button", { name: "Disable vic" }).click();
  await table.getByRole("row", { name: /vic@example\.com Editor Disabled/ }).waitFor();
  assert.equal((await srv.api("POST", "/api/auth/login", "", { email: "vic@example.com", password: "correct horse battery staple" })).status, 403);
  await page.getByRole("button", { name: "Enable" }).click();
  await table.getByRole("row", { name: /vic@example\.com Editor Active/ }).waitFor();
  assert.equal(await page.getByRole("button", { name: "Unlock sign-in" }).count(), 0, "no unlock for an account that is not locked");
  // Back to a viewer for the other tests.
  await page.getByLabel("Role").selectOption("viewer");
  await page.getByRole("button", { name: "Change role…" }).click();
  await page.getByRole("alertdialog", { name: "Confirm the role change" }).getByRole("button", { name: "Make vic viewer" }).click();
  await page.getByRole("status").filter({ hasText: "vic is now viewer." }).waitFor();

  await page.getByText(/Registration is open/).waitFor();
  await page.getByRole("button", { name: "Close registration" }).click();
  await page.getByText(/Registration is closed/).waitFor();
  assert.equal((await srv.api("GET", "/api/settings/system", admin)).body.data.registration_open, false);
  await page.getByRole("button", { name: "Open registration" }).click();
  await page.getByText(/Registration is open/).waitFor();
  await srv.api("DELETE", `/api/environments/${env.id}`, admin);
  await close();
});

test("users: reset two-factor after a confirmation naming the user", async () => {
  // Turn 2FA on for eddie through the API (the previous 30 s step's code, as
  // test/twofactor.test.mjs does).
  const ed = (await srv.login("ed@example.com")).access_token;
  const setup = await srv.api("POST", "/api/auth/2fa/setup", ed);
  assert.equal(setup.status, 200, JSON.stringify(setup.body));
  const v = await srv.api("POST", "/api/auth/2fa/verify", ed, { code: totp(setup.body.data.secret, Date.now() - 30_000), current_password: PASSWORD });
  assert.equal(v.status, 200, JSON.stringify(v.body));
  const eddie = async () => (await srv.api("GET", "/api/auth/users?q=eddie", admin)).body.data.items[0];
  assert.equal((await eddie()).two_factor_enabled, true);

  const { page, close } = await openAs(browser, srv, "ann@example.com", "/admin/users");
  const table = page.getByRole("table", { name: "Users" });
  await table.getByRole("row", { name: /ed@example\.com Editor Active On/ }).waitFor();
  await table.getByRole("button", { name: "Manage eddie" }).click();
  await page.getByRole("heading", { name: "Manage eddie" }).waitFor();
  await page.getByRole("button", { name: "Reset two-factor…" }).click();
  const dialog = page.getByRole("alertdialog", { name: "Confirm the reset" });
  await dialog.getByText(/Turn off two-factor authentication for eddie\?/).waitFor();
  assert.deepEqual(await axeCheck(page), [], "users, reset two-factor confirmation");
  assert.equal((await eddie()).two_factor_enabled, true, "nothing changes before the confirmation");
  await dialog.getByRole("button", { name: "Reset two-factor for eddie" }).click();
  await page.getByRole("status").filter({ hasText: "Two-factor authentication is off for eddie." }).waitFor();
  await table.getByRole("row", { name: /ed@example\.com Editor Active Off/ }).waitFor();
  assert.equal((await eddie()).two_factor_enabled, false);
  assert.ok(await page.getByRole("button", { name: "Reset two-factor…" }).isDisabled(), "nothing left to reset");
  await close();
});

test("users: an account locked by failed sign-ins shows until when, and the unlock clears it", async () => {
  // Lock lou through the API: failed sign-ins until the server says locked
  // (three on this server: --signin-lock-after), each after the delay the
  // server asks for (Retry-After), if any.
  const reg = await srv.api("POST", "/api/auth/register", "", { email: "lou@example.com", username: "lou", password: PASSWORD });
  assert.equal(reg.status, 201, JSON.stringify(reg.body));
  const wrong = { email: "lou@example.com", password: "not the password" };
  for (let locked = false; !locked; ) {
    const r = await srv.api("POST", "/api/auth/login", "", wrong);
    if (r.status === 429 && /locked/.test(r.body.detail)) locked = true;
    else if (r.status === 429) await new Promise((ok) => setTimeout(ok, (Number(r.headers.get("retry-after")) || 1) * 1000 + 100));
    else assert.equal(r.status, 401, JSON.stringify(r.body));
  }
  const lou = async () => (await srv.api("GET", "/api/auth/users?q=lou", admin)).body.data.items[0];
  assert.ok((await lou()).locked_until, "the list shows the lock");

  const { page, close } = await openAs(browser, srv, "ann@example.com", "/admin/users");
  const table = page.getByRole("table", { name: "Users" });
  await table.getByRole("row", { name: /lou@example\.com .*Locked until/ }).waitFor();
  await table.getByRole("button", { name: "Manage lou" }).click();
  await page.getByRole("heading", { name: "Manage lou" }).waitFor();
  assert.deepEqual(await axeCheck(page), [], "users, a locked account");
  await page.getByRole("button", { name: "Unlock sign-in" }).click();
  await page.getByRole("status").filter({ hasText: "lou can sign in again" }).waitFor();
  await table.getByRole("row", { name: /Locked until/ }).first().waitFor({ state: "detached" });
  assert.equal(await page.getByRole("button", { name: "Unlock sign-in" }).count(), 0, "nothing left to unlock");
  assert.equal((await lou()).locked_until, null);
  assert.equal((await srv.api("POST", "/api/auth/login", "", { email: "lou@example.com", password: PASSWORD })).status, 200);
  await close();
});

test("AI settings: global and per environment, with price overrides", async () => {
  const env = (await srv.api("POST", "/api/environments", admin, { name: "Thyme shop" })).body.data;
  const { page, close } = await openAs(browser, srv, "ann@example.com", "/admin/ai");
  await page.getByRole("heading", { name: "AI settings", level: 1 }).waitFor();
  const form = page.getByRole("form", { name: "Global AI settings" });
  await form.getByRole("link", { name: /add one under Credentials/ }).waitFor();
  await form.getByLabel("Model").fill("gpt-4o-mini");
  await form.getByLabel("Temperature").fill("0.4");
  await form.getByRole("button", { name: "Add a price" }).click();
  await form.getByLabel("Model of row 1").fill("gpt-4o-mini");
  await form.getByLabel("Input price of gpt-4o-mini", { exact: true }).fill("0.2");
  await form.getByLabel("Output price of gpt-4o-mini").fill("0.8");
  assert.deepEqual(await axeCheck(page), [], "AI settings");
  await form.getByRole("button", { name: "Save the AI settings" }).click();
  await page.getByRole("status").filter({ hasText: "The AI settings are saved." }).waitFor();
  let s = (await srv.api("GET", "/api/settings/ai-content", admin)).body.data;
  assert.equal(s.global.model, "gpt-4o-mini");
  assert.equal(s.global.temperature, 0.4);
  assert.deepEqual(s.global.price_overrides["gpt-4o-mini"], { input: 0.2, output: 0.8, cached_input: null });

  // Out of range: the server's words beside the field.
  await form.getByLabel("Temperature").fill("3");
  await form.getByRole("button", { name: "Save the AI settings" }).click();
  await form.getByLabel("Temperature").and(page.locator("[aria-invalid=true]")).waitFor();

  await page.getByLabel("Settings of").selectOption(String(env.id));
  const own = page.getByRole("form", { name: "Environment's AI settings" });
  await own.getByText(/Now in effect: gpt-4o-mini/).first().waitFor();
  await own.getByLabel("Tone").fill("warm");
  // A price of the environment's own, in place of the global one.
  await own.getByText("No price overrides: the built-in price table applies.").waitFor();
  await own.getByRole("button", { name: "Add a price" }).click();
  await own.getByLabel("Model of row 1").fill("gpt-4o-mini");
  await own.getByLabel("Input price of gpt-4o-mini", { exact: true }).fill("0.3");
  await own.getByLabel("Output price of gpt-4o-mini").fill("1.2");
  await own.getByLabel("Cached input price of gpt-4o-mini").fill("0.15");
  assert.deepEqual(await axeCheck(page), [], "an environment's AI settings");
  await own.getByRole("button", { name: "Save the AI settings" }).click();
  await page.getByRole("status").filter({ hasText: "The AI settings are saved." }).waitFor();
  s = (await srv.api("GET", `/api/settings/ai-content?environment_id=${env.id}`, admin)).body.data;
  assert.equal(s.override.tone, "warm");
  assert.equal(s.effective.model, "gpt-4o-mini");
  assert.deepEqual(s.override.price_overrides, { "gpt-4o-mini": { input: 0.3, output: 1.2, cached_input: 0.15 } });
  assert.deepEqual(s.global.price_overrides, { "gpt-4o-mini": { input: 0.2, output: 0.8, cached_input: null } }, "the global price is untouched");
  const global = (await srv.api("GET", "/api/settings/ai-content", admin)).body.data;
  assert.deepEqual(global.global.price_overrides, { "gpt-4o-mini": { input: 0.2, output: 0.8, cached_input: null } });
  assert.equal(global.global.tone, s.global.tone);
  await close();
});

test("a non-admin sees no Administration, and at its address the server's 403", async () => {
  const { page, close } = await openAs(browser, srv, "ed@example.com", "/");
  await page.getByRole("heading", { name: "Environments", level: 1 }).waitFor();
  assert.equal(await page.getByRole("link", { name: "Administration" }).count(), 0);
  for (const [path, heading] of [["/admin/users", "Users"], ["/admin/credentials", "Credentials"], ["/admin/ai", "AI settings"]]) {
    await page.goto(path);
    await page.getByRole("heading", { name: heading, level: 1 }).waitFor();
    await page.getByRole("alert").filter({ hasText: /admin/i }).first().waitFor();
    assert.deepEqual(await axeCheck(page), [], path);
  }
  await close();
});
