// After `vite build`: writes the gzip and brotli form of every file of the
// build next to it (the Go binary serves them as they are and compresses
// nothing), and records the hash of the build's inputs in
// ../internal/webapp/BUILD_INPUTS, which a Go test recomputes: a change to
// web/ or to gateway/openapi.yaml without `make console-assets` fails it.
// The hash is the one inputsHash in internal/webapp/webapp_test.go
// computes: sha256 over "<path>\n<sha256 of the file>\n" for every file of
// services/console/web (node_modules aside) and gateway/openapi.yaml, by
// path from the repository root.
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";

const web = fileURLToPath(new URL(".", import.meta.url));
const root = join(web, "..", "..", "..");
const dist = join(web, "..", "internal", "webapp", "dist");

function walk(dir, skip = () => false) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (skip(name)) continue;
    if (statSync(p).isDirectory()) out.push(...walk(p, skip));
    else out.push(p);
  }
  return out;
}

let raw = 0;
let compressed = 0;
for (const file of walk(dist)) {
  if (file.endsWith(".gz") || file.endsWith(".br")) continue;
  const body = readFileSync(file);
  if (/\.(png|ico|woff2)$/.test(file)) continue; // already compressed
  const gz = gzipSync(body, { level: 9 });
  const br = brotliCompressSync(body, {
    params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: body.length },
  });
  writeFileSync(file + ".gz", gz);
  writeFileSync(file + ".br", br);
  raw += body.length;
  compressed += br.length;
}

const inputs = [
  ...walk(web, (name) => name === "node_modules"),
  join(root, "gateway", "openapi.yaml"),
]
  .map((p) => relative(root, p).split(sep).join("/"))
  .sort();
const h = createHash("sha256");
for (const p of inputs) {
  h.update(p + "\n" + createHash("sha256").update(readFileSync(join(root, p))).digest("hex") + "\n");
}
writeFileSync(join(dist, "..", "BUILD_INPUTS"), h.digest("hex") + "\n");
console.log(`postbuild: ${raw} bytes, ${compressed} as brotli; ${inputs.length} inputs hashed`);
