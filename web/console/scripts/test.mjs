// npm test: builds the copydesk binary once, then runs the browser tests
// (test/*.test.mjs, node's test runner) against it, one file at a time.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const dir = mkdtempSync(join(tmpdir(), "copydesk-console-bin-"));
let status = 1;
try {
  const bin = join(dir, "copydesk");
  execFileSync("go", ["build", "-o", bin, "."], { cwd: join(root, "..", ".."), stdio: "inherit" });
  const files = process.argv.slice(2).length
    ? process.argv.slice(2)
    : readdirSync(join(root, "test")).filter((f) => f.endsWith(".test.mjs")).sort().map((f) => join("test", f));
  const r = spawnSync(process.execPath, ["--test", "--test-concurrency=1", ...files], { cwd: root, stdio: "inherit", env: { ...process.env, COPYDESK_BIN: bin } });
  status = r.status ?? 1;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
process.exit(status);
