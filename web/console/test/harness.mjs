// What the browser tests share: the copydesk binary built from this
// checkout, a server on a free loopback port with a fresh data dir and its
// users, Debian's Chromium driven by playwright-core (never a downloaded
// browser), a TOTP generator (RFC 6238), and an axe-core check.
import { execFileSync, spawn } from "node:child_process";
import { createHmac } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, "..", "..", "..");
export const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";

// binary is the path of the copydesk binary: COPYDESK_BIN when set (npm
// test builds it once for every file), else built here.
let built = process.env.COPYDESK_BIN || "";
export function binary() {
  if (built) return built;
  const dir = mkdtempSync(join(tmpdir(), "copydesk-console-bin-"));
  built = join(dir, "copydesk");
  execFileSync("go", ["build", "-o", built, "."], { cwd: repo, stdio: "inherit" });
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  return built;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.unref();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

export const PASSWORD = "correct horse battery staple";

// startCopydesk creates the users (as `copydesk users create` does) and
// serves on a free port; stop() ends the process and removes the data dir.
export async function startCopydesk({ users = [{ email: "ann@example.com", username: "ann", role: "super_admin" }], args = [] } = {}) {
  const bin = binary();
  const dataDir = mkdtempSync(join(tmpdir(), "copydesk-console-data-"));
  for (const u of users) {
    execFileSync(bin, ["users", "create", "--init", "--data-dir", dataDir, "--email", u.email, "--username", u.username, "--role", u.role, "--password-stdin"],
      { input: (u.password ?? PASSWORD) + "\n", stdio: ["pipe", "ignore", "pipe"] });
  }
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const proc = spawn(bin, ["serve", "--http", `127.0.0.1:${port}`, "--data-dir", dataDir, "--log-level", "warn", ...args], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  proc.stderr.on("data", (b) => (stderr += b));
  const exited = new Promise((resolve) => proc.on("exit", resolve));
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error("copydesk serve exited: " + stderr);
    try {
      const r = await fetch(base + "/api/health");
      if (r.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error("copydesk serve was not healthy in 20 s: " + stderr);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    base,
    dataDir,
    get stderr() {
      return stderr;
    },
    async stop() {
      proc.kill("SIGTERM");
      await exited;
      rmSync(dataDir, { recursive: true, force: true });
    },
    // api calls the API as any client would; it returns status and body.
    async api(method, path, token, body) {
      const headers = { Accept: "application/json" };
      if (token) headers.Authorization = "Bearer " + token;
      if (body !== undefined) headers["Content-Type"] = "application/json";
      const r = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      const text = await r.text();
      let json = null;
      try {
        json = JSON.parse(text);
      } catch {
        json = text;
      }
      return { status: r.status, body: json, headers: r.headers };
    },
    async login(email, password = PASSWORD, totp_code) {
      const r = await this.api("POST", "/api/auth/login", "", { email, password, ...(totp_code ? { totp_code } : {}) });
      if (r.status !== 200) throw new Error(`login ${email}: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body;
    },
  };
}

// launch starts Debian's Chromium headless. A page that breaks the
// Content-Security-Policy logs "Refused to ..." on its console: cspErrors
// collects those, and every test checks it stays empty.
export async function launch() {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: apt-get install chromium (the tests never download a browser)`);
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, chromiumSandbox: process.getuid?.() !== 0 });
  return browser;
}

export async function newPage(context, problems) {
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  page.on("console", (m) => {
    if (/Refused to|Content Security Policy/i.test(m.text())) problems.push("CSP: " + m.text());
  });
  page.on("pageerror", (e) => problems.push("page error: " + e.message));
  return page;
}

// totp is the RFC 6238 code of a base32 secret (SHA-1, 30 s, 6 digits).
export function totp(secret, at = Date.now()) {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  let bits = "";
  for (const ch of secret.replace(/=+$/, "").toUpperCase()) {
    const v = alphabet.indexOf(ch);
    if (v < 0) throw new Error("bad base32: " + ch);
    bits += v.toString(2).padStart(5, "0");
  }
  const key = Buffer.alloc(Math.floor(bits.length / 8));
  for (let i = 0; i < key.length; i++) key[i] = parseInt(bits.slice(i * 8, i * 8 + 8), 2);
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(Math.floor(at / 1000 / 30)));
  const h = createHmac("sha1", key).update(counter).digest();
  const off = h[h.length - 1] & 0xf;
  const n = (h.readUInt32BE(off) & 0x7fffffff) % 1_000_000;
  return String(n).padStart(6, "0");
}

const axeSource = readFileSync(join(here, "..", "node_modules", "axe-core", "axe.min.js"), "utf8");

// axeCheck runs axe-core in the page (evaluated through the debugging
// protocol, which the page's CSP does not govern) and returns the serious
// and critical violations, one line each.
export async function axeCheck(page) {
  await page.evaluate(axeSource + "\n;0");
  const violations = await page.evaluate(async () => {
    // eslint-disable-next-line no-undef
    const r = await window.axe.run(document, { resultTypes: ["violations"] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(" ")).slice(0, 5) }));
  });
  return violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => `${v.impact} ${v.id}: ${v.help} at ${v.nodes.join(", ")}`);
}

// waitFor polls fn until it returns a truthy value, or fails after ms.
export async function waitFor(fn, ms = 10_000, what = "condition") {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error("timed out waiting for " + what);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// signIn opens path and signs in there as email, and returns once the
// sign-in form is gone (the session is stored: a reload keeps it).
export async function signIn(page, email, path = "/") {
  await page.goto(path);
  await page.getByLabel("E-mail").fill(email);
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("form", { name: "Sign in to copydesk" }).waitFor({ state: "detached" });
}

// grantAll gives every editor and viewer these environments, and only these
// (admins see them all).
export async function grantAll(srv, token, ...envIds) {
  const users = (await srv.api("GET", "/api/auth/users?per_page=50", token)).body.data.items;
  for (const u of users.filter((u) => u.role === "editor" || u.role === "viewer")) {
    const r = await srv.api("PUT", `/api/auth/users/${u.id}/environments`, token, { environment_ids: envIds });
    if (r.status !== 200) throw new Error(`grant ${u.username}: ${r.status} ${JSON.stringify(r.body)}`);
  }
}

// startProvider is a local stand-in for an LLM provider speaking the OpenAI
// API's wire format (GET /v1/models, POST /v1/chat/completions, plain and
// streamed), as the Go tests' fake provider does. reply(n, request) gives
// the text of the n-th call; a streamed answer sends it a word at a time,
// every `every` ms (so a test can watch it arrive, or stop it midway; it
// can be changed between calls).
export async function startProvider({ reply = () => "Generated text.", every = 0 } = {}) {
  const self = { every };
  const { createServer: createHttp } = await import("node:http");
  const requests = [];
  const server = createHttp(async (req, res) => {
    let raw = "";
    for await (const chunk of req) raw += chunk;
    if (req.method === "GET" && req.url.endsWith("/models")) {
      res.setHeader("Content-Type", "application/json");
      res.end(JSON.stringify({ object: "list", data: [{ id: "gpt-4o-mini", object: "model", created: 1, owned_by: "openai" }] }));
      return;
    }
    if (req.method !== "POST" || !req.url.endsWith("/chat/completions")) {
      res.statusCode = 404;
      res.end();
      return;
    }
    const body = JSON.parse(raw || "{}");
    requests.push(body);
    const text = await reply(requests.length, body); // a reply may be a promise: the model answers when it settles
    const model = body.model || "gpt-4o-mini";
    const usage = { prompt_tokens: 1000, completion_tokens: 500, total_tokens: 1500 };
    if (!body.stream) {
      res.setHeader("Content-Type", "application/json");
      res.end(JSON.stringify({ id: "c1", object: "chat.completion", created: 1, model, choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }], usage }));
      return;
    }
    res.setHeader("Content-Type", "text/event-stream");
    const chunk = (delta, finish, extra = {}) =>
      `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 1, model, choices: delta ? [{ index: 0, delta, finish_reason: finish }] : [], ...extra })}\n\n`;
    for (const word of text.split(/(?<= )/)) {
      if (res.destroyed) return;
      res.write(chunk({ content: word }, null));
      if (self.every) await new Promise((r) => setTimeout(r, self.every));
    }
    res.write(chunk({}, "stop"));
    res.write(chunk(null, null, { usage }));
    res.end("data: [DONE]\n\n");
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address();
  return Object.assign(self, {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }),
  });
}

// useProvider makes provider the instance's one AI credential (global, so
// every environment may use it).
export async function useProvider(srv, token, provider) {
  const r = await srv.api("POST", "/api/configurations", token, { name: "Stand-in", provider: "openai", api_key: "sk-test-good-key-0001", base_url: provider.url, default_model: "gpt-4o-mini" });
  if (r.status !== 201) throw new Error(`configuration: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.data;
}

// openAs opens a new browser context signed in as email at path; close()
// ends it and fails the test on any CSP violation or page error seen.
export async function openAs(browser, srv, email, path) {
  const problems = [];
  const context = await browser.newContext({ baseURL: srv.base });
  const page = await newPage(context, problems);
  await signIn(page, email, path);
  return {
    page,
    context,
    async close() {
      await context.close();
      if (problems.length) throw new Error("problems in the page:\n" + problems.join("\n"));
    },
  };
}

// startWordPress is a local stand-in for a WordPress site's REST API (as
// the Go tests' wptest): posts and terms under /wp-json/wp/v2 with an
// application password. edit(id, fields) changes a post as a person on the
// site would, a few seconds later than its last change.
export async function startWordPress({ user = "editor", password = "abcd efgh ijkl mnop" } = {}) {
  const { createServer: createHttp } = await import("node:http");
  const posts = new Map();
  const terms = { categories: new Map([[1, { id: 1, name: "Uncategorized", slug: "uncategorized", parent: 0 }]]), tags: new Map() };
  let next = 100;
  let base = "";
  let gate = null; // hold(): the posts list waits for it
  const wpTime = (d) => d.toISOString().slice(0, 19);
  const json = (p) => ({
    id: p.id, date: p.date ? wpTime(p.date) : null, date_gmt: p.date ? wpTime(p.date) : null, modified: wpTime(p.modified), modified_gmt: wpTime(p.modified),
    slug: p.slug, status: p.status, type: "post", link: `${base}/${p.slug}/`, title: { raw: p.title, rendered: p.title },
    content: { raw: p.content, rendered: p.content }, excerpt: { raw: p.excerpt, rendered: p.excerpt }, author: 1, featured_media: 0,
    categories: p.categories, tags: p.tags,
  });
  const apply = (p, b) => {
    for (const k of ["title", "content", "excerpt", "status"]) if (typeof b[k] === "string") p[k] = b[k];
    if (b.slug) p.slug = b.slug;
    if (Array.isArray(b.categories)) p.categories = b.categories.filter((id) => terms.categories.has(id));
    if (Array.isArray(b.tags)) p.tags = b.tags.filter((id) => terms.tags.has(id));
    if (p.status === "publish" && !p.date) p.date = new Date();
    p.modified = new Date(Math.max(Date.now(), p.modified.getTime() + 1000));
  };
  const server = createHttp(async (req, res) => {
    let raw = "";
    for await (const chunk of req) raw += chunk;
    const u = new URL(req.url, "http://x");
    const send = (status, body) => {
      res.writeHead(status, { "Content-Type": "application/json; charset=UTF-8" });
      res.end(JSON.stringify(body));
    };
    const fail = (status, code, message) => send(status, { code, message, data: { status } });
    if (!u.pathname.startsWith("/wp-json")) {
      res.writeHead(200, { "Content-Type": "text/html" });
      res.end("<!doctype html><title>A WordPress site</title>");
      return;
    }
    const auth = req.headers.authorization || "";
    const authed = auth === "Basic " + Buffer.from(`${user}:${password}`).toString("base64");
    if (auth && !authed) return fail(401, "incorrect_password", "The provided password is an invalid application password.");
    const parts = u.pathname.replace(/^\/wp-json\/?/, "").split("/").filter(Boolean);
    if (parts.length === 0) return send(200, { name: "A WordPress site", namespaces: ["wp/v2"] });
    if (parts[0] !== "wp" || parts[1] !== "v2") return fail(404, "rest_no_route", "No route was found matching the URL and request method.");
    if (req.method !== "GET" && !authed) return fail(401, "rest_cannot_create", "Sorry, you are not allowed to create posts as this user.");
    const body = raw ? JSON.parse(raw) : {};
    const [, , kind, id] = parts;
    if (kind === "users" && id === "me") return authed ? send(200, { id: 1, name: "Editor", slug: user, roles: ["editor"] }) : fail(401, "rest_not_logged_in", "You are not currently logged in.");
    if (kind === "posts") {
      if (!id) {
        if (req.method === "POST") {
          const p = { id: ++next, title: "", content: "", excerpt: "", slug: `post-${next}`, status: "draft", categories: [1], tags: [], modified: new Date(0), date: null };
          apply(p, body);
          posts.set(p.id, p);
          return send(201, json(p));
        }
        if (gate) await gate;
        let list = [...posts.values()].filter((p) => p.status !== "trash");
        if (u.searchParams.get("slug")) list = list.filter((p) => p.slug === u.searchParams.get("slug"));
        res.setHeader("X-WP-Total", String(list.length));
        res.setHeader("X-WP-TotalPages", "1");
        return send(200, list.sort((a, b) => b.id - a.id).map(json));
      }
      const p = posts.get(Number(id));
      if (!p) return fail(404, "rest_post_invalid_id", "Invalid post ID.");
      if (req.method === "GET") return send(200, json(p));
      if (req.method === "DELETE") {
        p.status = "trash";
        return send(200, json(p));
      }
      apply(p, body);
      return send(200, json(p));
    }
    if (kind === "categories" || kind === "tags") {
      const m = terms[kind];
      if (req.method === "POST" && !id) {
        const slug = body.slug || String(body.name).toLowerCase().replace(/[^a-z0-9]+/g, "-");
        const dup = [...m.values()].find((t) => t.slug === slug);
        if (dup) return send(400, { code: "term_exists", message: "A term with the name provided already exists.", data: { status: 400, term_id: dup.id } });
        const t = { id: ++next, name: body.name, slug, parent: body.parent || 0 };
        m.set(t.id, t);
        return send(201, t);
      }
      if (id) return m.has(Number(id)) ? send(200, m.get(Number(id))) : fail(404, "rest_term_invalid", "Term does not exist.");
      let list = [...m.values()];
      const include = u.searchParams.get("include");
      if (include) list = list.filter((t) => include.split(",").map(Number).includes(t.id));
      if (u.searchParams.get("slug")) list = list.filter((t) => t.slug === u.searchParams.get("slug"));
      res.setHeader("X-WP-Total", String(list.length));
      res.setHeader("X-WP-TotalPages", "1");
      return send(200, list);
    }
    return fail(404, "rest_no_route", "No route was found matching the URL and request method.");
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${server.address().port}`;
  return {
    url: base,
    user,
    password,
    posts,
    // hold makes the posts list wait until the function it returns is
    // called (a test sees an import in progress).
    hold() {
      let release;
      gate = new Promise((r) => (release = r));
      return () => {
        gate = null;
        release();
      };
    },
    edit(id, fields) {
      const p = posts.get(id);
      Object.assign(p, fields);
      p.modified = new Date(Math.max(Date.now(), p.modified.getTime()) + 5000);
    },
    close: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }),
  };
}

// useWordPress points the environment at site, with a credential for it.
export async function useWordPress(srv, token, envId, site) {
  let r = await srv.api("POST", "/api/configurations", token, { name: "Site", provider: "wordpress", base_url: site.url, username: site.user, application_password: site.password });
  if (r.status !== 201) throw new Error(`wordpress credential: ${r.status} ${JSON.stringify(r.body)}`);
  r = await srv.api("PUT", `/api/environments/${envId}/configuration`, token, { wordpress: { base_url: site.url, credential_id: r.body.data.id } });
  if (r.status !== 200) throw new Error(`configuration: ${r.status} ${JSON.stringify(r.body)}`);
}

// TEAM is a super admin, an editor, a viewer and a plain admin (last, so
// the first three keep their ids).
export const TEAM = [
  { email: "ann@example.com", username: "ann", role: "super_admin" },
  { email: "ed@example.com", username: "eddie", role: "editor" },
  { email: "vic@example.com", username: "vic", role: "viewer" },
  { email: "adam@example.com", username: "adam", role: "admin" },
];

// importKeywords uploads a keyword export (a CSV's bytes) to an environment
// by the API's import, as any client would, and returns its report.
export async function importKeywords(srv, token, envId, name, bytes) {
  const form = new FormData();
  form.append("environment_id", String(envId));
  form.append("file", new Blob([bytes], { type: "text/csv" }), name);
  const r = await fetch(srv.base + "/api/seo/keywords/import", { method: "POST", headers: { Authorization: "Bearer " + token }, body: form });
  const body = await r.json();
  if (r.status !== 200) throw new Error(`import ${name}: ${r.status} ${JSON.stringify(body)}`);
  return body.data;
}

