// Lints ../openapi.json with Redocly's recommended rules (the library
// openapi-typescript already brings): any error fails, as it would fail a
// client generator's user. Warnings are printed; the ones left are known
// (docs/DECISIONS.md, "The document and its checks").
import { createConfig, lint } from "@redocly/openapi-core";

const config = await createConfig({ extends: ["recommended"] });
const problems = await lint({ ref: "../openapi.json", config });
let errors = 0;
for (const p of problems) {
  const where = p.location?.[0]?.pointer ?? "";
  console.log(`${p.severity} ${p.ruleId}: ${p.message} ${where}`);
  if (p.severity === "error") errors++;
}
if (errors > 0) {
  console.error(`lint: ${errors} error(s) in web/openapi.json`);
  process.exit(1);
}
console.log(`lint: web/openapi.json has no error under Redocly's recommended rules (${problems.length} warning(s))`);
