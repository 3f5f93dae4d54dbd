// The web view's copy of the client: the server package's web/client/, which the view (/ui)
// loads, is what `npm run build:web` makes of src/ today, file for file and byte for byte. A
// change to src/ that was not built into it (or an edit made there by hand) fails here.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";

const PACKAGE = fileURLToPath(new URL("..", import.meta.url));
const SHIPPED = fileURLToPath(new URL("../../server/src/convostore_server/web/client/", import.meta.url));

test("web/client is a fresh build of src/ (npm run build:web)", () => {
  const fresh = mkdtempSync(join(tmpdir(), "client-ts-web-"));
  try {
    execFileSync(join(PACKAGE, "node_modules", ".bin", "tsc"), ["-p", "tsconfig.web.json", "--outDir", fresh], {
      cwd: PACKAGE,
    });
    const built = readdirSync(fresh).sort();
    const hint = "run `npm run build:web` in packages/client-ts and commit web/client/";
    assert.deepEqual(readdirSync(SHIPPED).sort(), built, hint);
    assert.ok(built.includes("index.js") && built.every((name) => name.endsWith(".js")));
    for (const name of built) {
      assert.equal(readFileSync(join(SHIPPED, name), "utf8"), readFileSync(join(fresh, name), "utf8"), `${name}: ${hint}`);
    }
  } finally {
    rmSync(fresh, { recursive: true, force: true });
  }
});
