// A real convostore-server for the tests: the server environment's `convostore-server` on a
// free loopback port, its own SQLite file (or a PostgreSQL schema) and a token for alice, bob
// and an admin.
import { spawn, spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(fileURLToPath(new URL("../../..", import.meta.url)));
export const SERVER_BIN =
  process.env.CONVOSTORE_SERVER_BIN ?? join(ROOT, ".venvs", "server", "bin", "convostore-server");
export const SERVER_PYTHON = join(ROOT, ".venvs", "server", "bin", "python");

function freePort() {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => done(port));
    });
  });
}

function token(role) {
  const value = randomBytes(32).toString("base64url");
  return [value, `${createHash("sha256").update(value).digest("hex")} ${role}`];
}

const PG_URL = process.env.CONVOSTORE_TEST_PG ?? "postgresql://postgres@127.0.0.1:5432/test";

/** Run `code` in the server environment's Python with PG_URL as sys.argv[1]. */
function pg(code, ...args) {
  return spawnSync(SERVER_PYTHON, ["-c", `import sys, psycopg\n${code}`, PG_URL, ...args], {
    encoding: "utf8",
  });
}

/** Why PostgreSQL cannot be used here, or null when it can. Under CI=true it must be. */
export function pgUnreachable() {
  const probe = pg("psycopg.connect(sys.argv[1], connect_timeout=3).close()");
  if (probe.status === 0) return null;
  const reason = `PostgreSQL unreachable at ${PG_URL}: ${(probe.stderr || String(probe.error)).trim().split("\n").pop()}`;
  if (process.env.CI === "true") throw new Error(reason);
  return reason;
}

/** A PostgreSQL URL whose search_path is a fresh schema, and how to drop it. */
export function pgSchema() {
  const schema = `t_ts_${randomBytes(6).toString("hex")}`;
  const made = pg(
    "psycopg.connect(sys.argv[1], autocommit=True).execute(f'CREATE SCHEMA {sys.argv[2]}')",
    schema,
  );
  if (made.status !== 0) throw new Error(`CREATE SCHEMA failed: ${made.stderr}`);
  const sep = PG_URL.includes("?") ? "&" : "?";
  return {
    url: `${PG_URL}${sep}options=${encodeURIComponent(`-csearch_path=${schema}`)}`,
    drop: () =>
      pg(
        "psycopg.connect(sys.argv[1], autocommit=True).execute(f'DROP SCHEMA IF EXISTS {sys.argv[2]} CASCADE')",
        schema,
      ),
  };
}

/** Start a server on `backend` ("sqlite", a fresh file; "postgresql", a fresh schema). */
export async function startOn(backend, options = {}) {
  if (backend === "sqlite") return startServer(options);
  const schema = pgSchema();
  try {
    const server = await startServer({ ...options, url: schema.url });
    const stop = server.stop;
    server.stop = async () => {
      await stop();
      schema.drop();
    };
    return server;
  } catch (error) {
    schema.drop();
    throw error;
  }
}

/** Start a server; `extra` are more command-line options. `stop()` ends it. */
export async function startServer({ url, extra = [], users = ["alice", "bob"] } = {}) {
  if (!existsSync(SERVER_BIN)) {
    throw new Error(`${SERVER_BIN} is missing: run \`make install-server\` first`);
  }
  const dir = mkdtempSync(join(tmpdir(), "convostore-client-ts-"));
  const tokens = {};
  const lines = [];
  for (const [who, role] of [...users.map((u) => [u, `user ${u}`]), ["admin", "admin"]]) {
    const [value, line] = token(role);
    tokens[who] = value;
    lines.push(line);
  }
  writeFileSync(join(dir, "tokens.txt"), lines.join("\n") + "\n");
  const port = await freePort();
  const storeUrl = url ?? `sqlite:///${join(dir, "store.db")}`;
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("CONVOSTORE_")));
  const args = [
    "--url",
    storeUrl,
    "--port",
    String(port),
    "--tokens",
    join(dir, "tokens.txt"),
    "--no-access-log",
    ...extra,
  ];
  const logPath = join(dir, "server.log");
  const { openSync } = await import("node:fs");
  const out = openSync(logPath, "w");
  const child = spawn(SERVER_BIN, args, { cwd: dir, env, stdio: ["ignore", out, out] });
  let exited = null;
  const exit = new Promise((done) => child.once("exit", (code, signal) => done((exited = code ?? signal))));
  const base = `http://127.0.0.1:${port}`;
  // Poll a real endpoint until the app answers (whatever the status) or the process exits.
  for (;;) {
    if (exited !== null) throw new Error(`the server exited (${exited}):\n${readFileSync(logPath, "utf8")}`);
    try {
      const response = await fetch(`${base}/me`);
      if (response.status < 500) break;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    base,
    tokens,
    storeUrl,
    log: () => readFileSync(logPath, "utf8"),
    async stop() {
      if (exited === null) {
        child.kill("SIGTERM");
        await exit;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

let counter = 0;
/** A fresh conversation id. */
export function newId(prefix = "c") {
  counter += 1;
  return `${prefix}-${process.pid}-${counter}-${randomBytes(3).toString("hex")}`;
}
