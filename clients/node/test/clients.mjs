// The Redis clients the tests hand the package: node-redis and ioredis, each connected to
// `url` and given as { client, raw(args) sending one command line, close() }.
import Redis from "ioredis";
import { createClient } from "redis";

export const CLIENTS = {
  "node-redis": async (url) => {
    const c = await createClient({ url }).connect();
    return { client: c, raw: (args) => c.sendCommand(args), close: () => c.close() };
  },
  ioredis: async (url) => {
    const c = new Redis(url);
    return { client: c, raw: (args) => c.call(args[0], ...args.slice(1)), close: () => c.disconnect() };
  },
};
