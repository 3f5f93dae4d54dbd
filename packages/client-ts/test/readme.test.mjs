// Every ```js block of the README is a complete module that runs as pasted: each is written
// into the package (so it imports "@convostore/client" by name) and run by node, in order,
// against one real server, with the server's address and a token of user u_123.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import { startServer } from "./served.mjs";

const run = promisify(execFile);
const README = readFileSync(new URL("../README.md", import.meta.url), "utf8");
const BLOCKS = [...README.matchAll(/^```js\n(.*?)^```/gms)].map((m) => ({
  line: README.slice(0, m.index).split("\n").length,
  code: m[1],
}));
const DIR = fileURLToPath(new URL("../build/readme/", import.meta.url));

let server;

before(async () => {
  server = await startServer({ users: ["u_123"] });
  mkdirSync(DIR, { recursive: true });
});

after(async () => {
  await server?.stop();
  rmSync(DIR, { recursive: true, force: true });
});

test("the README has its examples", () => {
  assert.ok(BLOCKS.length >= 5);
});

for (const block of BLOCKS) {
  test(`README.md:${block.line} runs as pasted`, async () => {
    const file = `${DIR}block-${block.line}.mjs`;
    writeFileSync(file, block.code);
    const env = { ...process.env, CONVOSTORE_BASE_URL: server.base, CONVOSTORE_TOKEN: server.tokens.u_123 };
    const { stdout } = await run(process.execPath, [file], { env, timeout: 60_000 });
    // What a block says it prints, in a `// ...` comment after a console.log, it prints.
    for (const said of block.code.matchAll(/console\.log\([^\n]*\/\/ (.*)$/gm)) {
      const words = said[1].replace(/\.\.\.$/, "").trim();
      assert.ok(stdout.includes(words), `README.md:${block.line} printed:\n${stdout}\nnot: ${words}`);
    }
  });
}
