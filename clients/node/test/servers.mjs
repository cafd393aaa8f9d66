// Real servers for the package's tests: Redis 7.0 and Valkey 9.1, each with the rl module
// and without it (where the package runs the Functions library), on free ports.
// Environment: RL_MODULE (default target/release/librl.so of this checkout), RL_REDIS_SERVER
// (default redis-server), RL_VALKEY_SERVER (default .tools/bin/valkey-server, else on PATH).
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const ROOT = resolve(process.env.RL_ROOT ?? new URL("../../..", import.meta.url).pathname);

export function freePort() {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once("error", rej);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
  });
}

function binary(flavor) {
  if (flavor === "redis") return process.env.RL_REDIS_SERVER ?? "redis-server";
  const local = join(ROOT, ".tools/bin/valkey-server");
  return process.env.RL_VALKEY_SERVER ?? (existsSync(local) ? local : "valkey-server");
}

function modulePath() {
  const module = process.env.RL_MODULE ?? join(ROOT, "target/release/librl.so");
  if (!existsSync(module)) throw new Error(`${module} not found: run cargo build --release (or make test)`);
  return module;
}

const cli = (port, ...args) => spawnSync("redis-cli", ["-p", String(port), ...args], { encoding: "utf8" }).stdout;

/** Whether the server answering on `port` is process `pid` (not another test's server that
 * took the port meanwhile: `pid` then exits, unable to bind), with its data loaded (PING
 * answers LOADING till then). */
const answers = (port, pid) =>
  cli(port, "info", "server").split(/\r?\n/).includes(`process_id:${pid}`) && cli(port, "ping").trim() === "PONG";

/** One server process: start, stop (a kill, like a crash), restart (same port and files). */
export class Server {
  constructor(flavor, withModule, extra = []) {
    Object.assign(this, { flavor, withModule, extra, proc: undefined, port: undefined });
    this.dir = mkdtempSync(join(tmpdir(), `rl-node-${flavor}-`));
  }

  get url() {
    return `redis://127.0.0.1:${this.port}`;
  }

  get label() {
    return `${this.flavor}-${this.withModule ? "module" : "library"}`;
  }

  async start() {
    this.port ??= await freePort();
    const args = ["--port", String(this.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
      "--dir", this.dir, ...this.extra];
    if (this.withModule) args.push("--loadmodule", modulePath());
    this.proc = spawn(binary(this.flavor), args, { stdio: "ignore" });
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline) {
      if (this.proc.exitCode !== null) throw new Error(`${this.label} exited`);
      if (answers(this.port, this.proc.pid)) return this;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`${this.label} did not start`);
  }

  async stop() {
    if (!this.proc) return;
    const exited = new Promise((r) => this.proc.once("exit", r));
    this.proc.kill("SIGKILL");
    await exited;
    this.proc = undefined;
  }

  async restart() {
    await this.stop();
    await this.start();
  }

  /** Empties the server: no keys, no functions. */
  reset() {
    spawnSync("redis-cli", ["-p", String(this.port), "flushall"]);
    spawnSync("redis-cli", ["-p", String(this.port), "function", "flush"]);
  }

  async close() {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The Functions library with the policy file of `lines` written into it, as
 * docs/managed-redis.md ("Named policies") says: `scripts/library-policies.py FILE`. */
export function libraryWithPolicies(lines) {
  const dir = mkdtempSync(join(tmpdir(), "rl-node-policies-"));
  try {
    const file = join(dir, "rl-policies.conf");
    writeFileSync(file, lines.map((line) => `${line}\n`).join(""));
    return execFileSync("python3", [join(ROOT, "scripts/library-policies.py"), file], { encoding: "utf8" });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export const BACKENDS = [["redis", true], ["redis", false], ["valkey", true], ["valkey", false]];

/** Starts one server per backend: [label, Server] pairs; close them with closeAll. */
export async function startAll() {
  return Promise.all(BACKENDS.map(([flavor, withModule]) => new Server(flavor, withModule).start()));
}

export async function closeAll(servers) {
  await Promise.all(servers.map((s) => s.close()));
}

/** A free port whose cluster bus port (10,000 above) is free too. */
async function freeClusterPort() {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 25_000);
    const free = (p) => new Promise((res) => {
      const s = createServer();
      s.once("error", () => res(false));
      s.listen(p, "127.0.0.1", () => s.close(() => res(true)));
    });
    if ((await free(port)) && (await free(port + 10_000))) return port;
  }
}

/** Three Redis masters joined into one cluster, with or without the module. */
export async function startCluster(withModule) {
  const nodes = [];
  for (let i = 0; i < 3; i++) {
    const node = new Server("redis", withModule, ["--cluster-enabled", "yes", "--cluster-node-timeout", "5000"]);
    node.port = await freeClusterPort();
    nodes.push(await node.start());
  }
  const created = spawnSync("redis-cli", ["--cluster", "create", ...nodes.map((n) => `127.0.0.1:${n.port}`),
    "--cluster-yes"], { encoding: "utf8" });
  if (created.status !== 0) throw new Error(created.stdout + created.stderr);
  const deadline = Date.now() + 30_000;
  const ok = (n) => spawnSync("redis-cli", ["-p", String(n.port), "cluster", "info"], { encoding: "utf8" })
    .stdout.includes("cluster_state:ok");
  while (!nodes.every(ok)) {
    if (Date.now() > deadline) throw new Error("the cluster did not become ok");
    await new Promise((r) => setTimeout(r, 100));
  }
  return nodes;
}

/** Why `server` cannot run the quota tests, or false: the one place where the library's
 * servers are skipped while the Functions library the package ships has no `rl_quota`
 * (RL.QUOTA is then the module's alone). */
export async function noQuota(server) {
  if (server.withModule) return false;
  const { LIBRARY_SOURCE } = await import(new URL("library.js", import.meta.resolve("redis-rl")).href);
  return LIBRARY_SOURCE.includes("register_function('rl_quota'") ? false
    : "the Functions library has no rl_quota yet: RL.QUOTA is module-only";
}
