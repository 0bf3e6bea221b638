// safeHref and the Markdown links, without a browser: src/markdown.tsx is
// bundled with esbuild and its functions called in node, whose URL parser
// is the one browsers share (WHATWG). Every address that a browser would
// resolve to something other than http(s) or mailto is no link, however
// it is spelled: the parser drops tabs and newlines anywhere and C0
// controls and spaces at the ends.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import * as esbuild from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const base = "http://console.test/e/1/write";
let dir;
let md;
before(async () => {
  dir = mkdtempSync(join(tmpdir(), "copydesk-markdown-"));
  const out = join(dir, "markdown.mjs");
  await esbuild.build({
    absWorkingDir: root,
    entryPoints: ["src/markdown.tsx"],
    bundle: true,
    format: "esm",
    platform: "neutral",
    outfile: out,
    jsx: "automatic",
    jsxImportSource: "preact",
    logLevel: "warning",
  });
  // inline() resolves against the page's address, as in the browser.
  globalThis.location = { href: base };
  md = await import(pathToFileURL(out).href);
});
after(() => {
  delete globalThis.location;
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// What a browser would run or load instead of following as a link.
const unsafe = [
  "javascript:alert(1)",
  "JaVaScRiPt:alert(1)",
  "java\tscript:alert(1)",
  "java\nscript:alert(1)",
  "java\rscript:alert(1)",
  "\tjavascript:alert(1)",
  "\x01javascript:alert(1)",
  "\x00javascript:alert(1)",
  "\x1f java\tScRiPt:alert(1)",
  " javascript:alert(1) ",
  "j\na\tv\ra\nscript:alert(1)",
  "vbscript:msgbox(1)",
  "data:text/html,<script>alert(1)</script>",
  "DATA:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
  "blob:http://console.test/0d7c",
  "file:///etc/passwd",
  "ftp://example.com/",
  "",
  "\x01\t ",
  "http://[::1",
];

test("safeHref refuses every address that resolves to another scheme", () => {
  for (const href of unsafe) assert.equal(md.safeHref(href, base), null, JSON.stringify(href));
});

test("safeHref keeps http(s), mailto and relative links, resolved as the browser would", () => {
  const cases = [
    ["https://example.com/guide", "https://example.com/guide"],
    ["HTTP://Example.com", "http://example.com/"],
    ["mailto:ann@example.com", "mailto:ann@example.com"],
    ["/e/2/posts", "http://console.test/e/2/posts"],
    ["posts?post=3", "http://console.test/e/1/posts?post=3"],
    ["#steps", "http://console.test/e/1/write#steps"],
    ["?q=1", "http://console.test/e/1/write?q=1"],
    ["  https://example.com/a b ", "https://example.com/a%20b"],
    ["ht\ttps://example.com/", "https://example.com/"],
    // Not a scheme once read: "java&#9;script:" (an entity in Markdown is characters) is a path.
    ["java&#9;script:alert(1)", "http://console.test/e/1/java&#9;script:alert(1)"],
  ];
  for (const [href, want] of cases) {
    const got = md.safeHref(href, base);
    assert.equal(got, want, JSON.stringify(href));
    assert.ok(["http:", "https:", "mailto:"].includes(new URL(got).protocol));
  }
});

// The links inline() makes: every <a> it returns, with its href.
const links = (children) =>
  children.flatMap((c) => (c && typeof c === "object" && "props" in c ? [...(c.type === "a" ? [c.props.href] : []), ...links([c.props.children].flat())] : []));

test("Markdown links and images to another scheme are text, not links", () => {
  for (const href of unsafe.filter((h) => !/[\s()]/.test(h) && h)) {
    for (const text of [`[click](${href})`, `![pic](${href})`, `**[click](${href})**`]) {
      assert.deepEqual(links(md.inline(text)), [], JSON.stringify(text));
    }
  }
  assert.deepEqual(links(md.inline("[a](https://example.com/a) and ![b](/img/b.png) and [c](\x01JaVaScRiPt:alert(1))")), [
    "https://example.com/a",
    "http://console.test/img/b.png",
  ]);
});
