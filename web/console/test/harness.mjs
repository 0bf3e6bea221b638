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
      return { status: r.status, body: json };
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

// signIn opens path and signs in there as email.
export async function signIn(page, email, path = "/") {
  await page.goto(path);
  await page.getByLabel("E-mail").fill(email);
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in" }).click();
}

// grantAll gives every editor and viewer the environment (admins see them all).
export async function grantAll(srv, token, envId) {
  const users = (await srv.api("GET", "/api/auth/users?per_page=50", token)).body.data.items;
  for (const u of users.filter((u) => u.role === "editor" || u.role === "viewer")) {
    const r = await srv.api("PUT", `/api/auth/users/${u.id}/environments`, token, { environment_ids: [envId] });
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
    const text = reply(requests.length, body);
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
