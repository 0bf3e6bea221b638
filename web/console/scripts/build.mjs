// Builds the console into dist/: content-hashed assets under dist/assets/
// and dist/index.html naming them. The output depends only on the sources
// and the locked packages, so CI rebuilds it and fails on any difference
// from what is committed (the binary embeds dist/ with go:embed).
import * as esbuild from "esbuild";
import { createHash } from "node:crypto";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const dist = join(root, "dist");
await rm(dist, { recursive: true, force: true });
await mkdir(join(dist, "assets"), { recursive: true });

const result = await esbuild.build({
  absWorkingDir: root,
  entryPoints: { app: "src/main.tsx" },
  bundle: true,
  // Screens added later load when opened: import() makes a chunk of its own.
  splitting: true,
  format: "esm",
  minify: true,
  target: ["es2022", "chrome111", "firefox111", "safari16.4"],
  outdir: "dist/assets",
  entryNames: "[name]-[hash]",
  chunkNames: "chunk-[hash]",
  assetNames: "[name]-[hash]",
  jsx: "automatic",
  jsxImportSource: "preact",
  legalComments: "none",
  charset: "utf8",
  metafile: true,
  logLevel: "warning",
});

let js = "";
let css = "";
for (const [file, out] of Object.entries(result.metafile.outputs)) {
  if (out.entryPoint === "src/main.tsx") {
    js = "/" + file.replace(/^dist\//, "");
    if (out.cssBundle) css = "/" + out.cssBundle.replace(/^dist\//, "");
  }
}
if (!js || !css) throw new Error("build: no entry script or stylesheet in esbuild's output");

const icon = await readFile(join(root, "favicon.svg"));
const iconName = `favicon-${createHash("sha256").update(icon).digest("hex").slice(0, 8)}.svg`;
await writeFile(join(dist, "assets", iconName), icon);

const html = (await readFile(join(root, "index.html"), "utf8"))
  .replace("{{js}}", js)
  .replace("{{css}}", css)
  .replace("{{favicon}}", "/assets/" + iconName);
await writeFile(join(dist, "index.html"), html);
console.log(`build: dist/index.html, ${js.slice(1)}, ${css.slice(1)}, assets/${basename(iconName)}`);
