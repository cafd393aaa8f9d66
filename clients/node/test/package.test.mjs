// The package as installed: its CommonJS and ES module builds, its type declarations (a
// TypeScript consumer compiles against them), the library it ships, and the examples
// (quoted whole in the docs), which print what their comments say (an example with a line
// starting "// Needs the rl module" on the servers with the module only).
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";

import * as esm from "redis-rl";

import { ROOT, closeAll, startAll } from "./servers.mjs";

const require = createRequire(import.meta.url);
const HERE = fileURLToPath(new URL(".", import.meta.url));
const EXAMPLES = process.env.RL_NODE_EXAMPLES ?? join(HERE, "../examples");

test("the CommonJS build exports what the ES module build does", () => {
  const cjs = require("redis-rl");
  assert.deepEqual(Object.keys(cjs).sort(), Object.keys(esm).sort());
  assert.equal(typeof cjs.Limiter, "function");
  assert.notEqual(cjs.Limiter, esm.Limiter); // two builds, both loadable
});

test("the declarations type-check a consumer and refuse wrong calls", () => {
  const tsc = join(HERE, "../node_modules/.bin/tsc");
  const out = spawnSync(tsc, ["--noEmit", "--strict", "--module", "NodeNext", "--moduleResolution", "NodeNext",
    "--target", "ES2021", "--skipLibCheck", join(HERE, "consumer.ts")], { encoding: "utf8" });
  assert.equal(out.status, 0, out.stdout + out.stderr);
});

test("the package ships its README", () => {
  const readme = join(require.resolve("redis-rl"), "../../../README.md");
  assert.match(readFileSync(readme, "utf8"), /^# redis-rl/);
});

test("the shipped library is the repository's functions/rl.lua", async () => {
  const { LIBRARY_SOURCE } = await import(join(require.resolve("redis-rl"), "../library.js"));
  assert.equal(LIBRARY_SOURCE, readFileSync(join(ROOT, "functions/rl.lua"), "utf8"));
});

const servers = await startAll();
after(() => closeAll(servers));

const printed = (path) =>
  readFileSync(path, "utf8").split("\n").flatMap((line) => {
    const m = /^\s*console\.log\(.*\); \/\/ (.*)$/.exec(line);
    return m ? [m[1]] : [];
  });

const needsModule = (path) => /^\/\/ Needs the rl module/m.test(readFileSync(path, "utf8"));

for (const name of readdirSync(EXAMPLES).filter((f) => f.endsWith(".mjs") && printed(join(EXAMPLES, f)).length)) {
  for (const server of servers.filter((s) => s.withModule || !needsModule(join(EXAMPLES, name)))) {
    test(`examples/${name} prints what it shows on ${server.label}`, () => {
      server.reset();
      const out = execFileSync(process.execPath, [join(EXAMPLES, name)], {
        encoding: "utf8", env: { ...process.env, REDIS_URL: server.url }, cwd: HERE,
      });
      assert.deepEqual(out.trimEnd().split("\n"), printed(join(EXAMPLES, name)));
    });
  }
}
