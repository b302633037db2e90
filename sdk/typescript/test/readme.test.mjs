// The README opens with an example that runs as written against a real daemon.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, it } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";

import { Daemon, cleanupBinary } from "./daemon.mjs";

const here = dirname(fileURLToPath(import.meta.url));
let d;

before(async () => {
  d = await (await Daemon.create("readme-token")).start();
});

after(async () => {
  await d?.close();
  cleanupBinary();
});

it("README opens with a runnable example", async () => {
  const readme = readFileSync(join(here, "..", "README.md"), "utf8");
  const m = /```ts\n([\s\S]*?)```/.exec(readme);
  assert.ok(m, "README has no ts example");
  assert.ok(m.index < readme.indexOf("\n## "), "the example is not at the top");
  // The example is plain JavaScript as well as TypeScript; point its import at this checkout.
  const code = m[1].replace('"@relay/client"', JSON.stringify(pathToFileURL(join(here, "..", "dist", "index.js")).href));
  const dir = mkdtempSync(join(tmpdir(), "relay-readme-"));
  try {
    const file = join(dir, "example.mjs");
    writeFileSync(file, code);
    const env = { ...d.env() };
    const { stdout } = await promisify(execFile)(process.execPath, [file], { env, timeout: 60000 });
    assert.match(stdout, /^2 \[ \{ id: 'f1', key: 'phase', value: 'done'/);
    assert.match(stdout, /\n\d+ state\.patched\n$/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
