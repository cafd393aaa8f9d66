// Writes src/library.ts, the Functions library this package loads where the module is
// absent: the repository's functions/rl.lua as a string constant (so the CommonJS and ES
// module builds both carry it). Run by `npm run build` (and so by `npm pack`) and by
// `npm run typecheck`; the file is not committed. Where functions/rl.lua is not there (not
// a checkout of the repository), an existing src/library.ts is kept.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const pkg = join(dirname(fileURLToPath(import.meta.url)), "..");
const source = join(pkg, "../../functions/rl.lua");
const target = join(pkg, "src/library.ts");

if (existsSync(source)) {
  const text = readFileSync(source, "utf8");
  writeFileSync(target, [
    "// generated from functions/rl.lua by scripts/write-library.mjs: do not edit",
    "/** functions/rl.lua, the Functions library this package loads where the module is absent. */",
    `export const LIBRARY_SOURCE: string = ${JSON.stringify(text)};`,
    "",
  ].join("\n"));
} else if (!existsSync(target)) {
  console.error(`write-library: neither ${source} nor ${target} exists`);
  process.exit(1);
}
