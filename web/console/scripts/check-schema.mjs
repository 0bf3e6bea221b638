// Fails when src/api/schema.d.ts is not what openapi-typescript makes of
// ../openapi.json today: an API change must reach the console's types (and
// so tsc) in the same commit. Fix with `npm run gen`.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const dir = mkdtempSync(join(tmpdir(), "copydesk-schema-"));
try {
  const out = join(dir, "schema.d.ts");
  execFileSync(join(root, "node_modules", ".bin", "openapi-typescript"), ["../openapi.json", "-o", out], { cwd: root, stdio: "pipe" });
  const want = readFileSync(out, "utf8");
  const have = readFileSync(join(root, "src", "api", "schema.d.ts"), "utf8");
  if (want !== have) {
    console.error("src/api/schema.d.ts is out of date with web/openapi.json: run `npm run gen` in web/console and commit the result");
    process.exit(1);
  }
  console.log("check: src/api/schema.d.ts is current with web/openapi.json");
} finally {
  rmSync(dir, { recursive: true, force: true });
}
