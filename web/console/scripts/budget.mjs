// The first screen's budget (DESIGN.md, The console): the JavaScript and
// CSS that dist/index.html loads, with the chunks they import statically,
// at most 150 KB gzipped. Prints the size; exits 1 over budget.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const BUDGET = 150 * 1024;
const dist = join(dirname(fileURLToPath(import.meta.url)), "..", "dist");
const html = readFileSync(join(dist, "index.html"), "utf8");
const first = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+\.(?:js|css))"/g)].map((m) => m[1]);
if (!first.some((f) => f.endsWith(".js")) || !first.some((f) => f.endsWith(".css"))) {
  console.error("budget: dist/index.html names no script or no stylesheet");
  process.exit(1);
}
// Static imports of the entry (shared chunks esbuild split out) load with it.
const seen = new Set();
const queue = [...first];
while (queue.length) {
  const f = queue.shift();
  if (seen.has(f)) continue;
  seen.add(f);
  if (!f.endsWith(".js")) continue;
  const src = readFileSync(join(dist, f), "utf8");
  for (const m of src.matchAll(/(?:^|[;}\s])import\s*(?:[\w*{}\s,$]+from\s*)?["'](\.\/[^"']+\.js)["']/g)) {
    queue.push("/assets/" + m[1].slice(2));
  }
}
let raw = 0;
let gz = 0;
for (const f of seen) {
  const b = readFileSync(join(dist, f));
  raw += b.length;
  gz += gzipSync(b, { level: 9 }).length;
  console.log(`  ${f}: ${(b.length / 1024).toFixed(1)} KB, ${(gzipSync(b, { level: 9 }).length / 1024).toFixed(1)} KB gzipped`);
}
console.log(`budget: first screen ${(gz / 1024).toFixed(1)} KB of JS+CSS gzipped (${(raw / 1024).toFixed(1)} KB raw); budget ${BUDGET / 1024} KB`);
if (gz > BUDGET) {
  console.error("budget: over the first screen's budget");
  process.exit(1);
}
