// `limiter.top(policy)` and `limiter.top(null, { command })`: RL.TOP's entries as typed
// objects, on the module (Redis 7.0 and Valkey 9.1), through node-redis and ioredis.
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";

import { Limiter } from "redis-rl";

import { CLIENTS } from "./clients.mjs";
import { closeAll, startAll } from "./servers.mjs";

const servers = await startAll();
after(() => closeAll(servers));

for (const server of servers.filter((s) => s.withModule)) {
  for (const [clientName, connect] of Object.entries(CLIENTS)) {
    describe(`top on ${server.label} through ${clientName}`, () => {
      test("lists who a policy and a command denied, heaviest first", async () => {
        const { client, raw, close } = await connect(server.url);
        try {
          await raw(["RL.POLICY", "SET", "top:login", "FIXED", "1", "1h"]);
          await raw(["DEL", "top:u1", "top:u2", "top:k"]);
          await raw(["CONFIG", "RESETSTAT"]); // each run counts from zero
          const limiter = new Limiter(client, { denialCache: false });
          for (const [key, n] of [["top:u1", 4], ["top:u2", 2]]) {
            for (let i = 0; i < n; i++) await limiter.limit(key, "top:login");
          }
          for (let i = 0; i < 3; i++) await raw(["RL.FIXED", "top:k", "1", "1h"]);
          assert.deepEqual(await limiter.top("top:login"), [
            { key: "top:u1", denials: 3, overestimate: 0 },
            { key: "top:u2", denials: 1, overestimate: 0 },
          ]);
          assert.deepEqual(await limiter.top("top:login", { count: 1 }),
            [{ key: "top:u1", denials: 3, overestimate: 0 }]);
          assert.ok((await limiter.top(null, { command: "rl.fixed" }))
            .some((e) => e.key === "top:k" && e.denials === 2));
          await assert.rejects(limiter.top(null), TypeError);
          await assert.rejects(limiter.top("top:nope"), /no such policy/);
          await raw(["RL.POLICY", "DEL", "top:login"]);
        } finally {
          await close();
        }
      });
    });
  }
}
