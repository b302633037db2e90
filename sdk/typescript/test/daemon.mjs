// Starts a real relay daemon for the SDK tests: built from this repository, temp RELAY_HOME, free port.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, closeSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

let builtBin;
let buildDir;

export function repoRoot() {
  let d = dirname(fileURLToPath(import.meta.url));
  while (d !== dirname(d)) {
    if (existsSync(join(d, "go.mod"))) return d;
    d = dirname(d);
  }
  throw new Error("go.mod not found above the test; run the tests inside the relay repository");
}

/** $RELAY_BIN, else `go build ./cmd/relay` into a temp dir (once per process). */
export function relayBinary() {
  if (process.env.RELAY_BIN) return process.env.RELAY_BIN;
  if (builtBin) return builtBin;
  buildDir = mkdtempSync(join(tmpdir(), "relay-sdk-bin-"));
  const out = join(buildDir, "relay");
  execFileSync("go", ["build", "-o", out, "./cmd/relay"], { cwd: repoRoot(), stdio: "inherit" });
  builtBin = out;
  return out;
}

export function cleanupBinary() {
  if (buildDir) rmSync(buildDir, { recursive: true, force: true });
  buildDir = builtBin = undefined;
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** One `relay up --foreground` process; restartable on the same home and port. */
export class Daemon {
  static async create(token = "test-token-123") {
    const d = new Daemon();
    d.home = mkdtempSync(join(tmpdir(), "relay-sdk-home-"));
    d.port = await freePort();
    d.token = token;
    d.url = `http://127.0.0.1:${d.port}`;
    writeFileSync(join(d.home, "config.json"), JSON.stringify({ token, port: d.port }));
    return d;
  }

  env() {
    const env = { ...process.env, RELAY_HOME: this.home };
    delete env.RELAY_URL;
    delete env.RELAY_TOKEN;
    return env;
  }

  async start(timeoutMs = 20000) {
    const fd = openSync(join(this.home, "test-daemon.out"), "a");
    // relay up always makes a token; a daemon without one is asked for explicitly (loopback only).
    const args = ["up", "--foreground", "--port", String(this.port)];
    if (!this.token) args.push("--no-auth");
    this.proc = spawn(relayBinary(), args, {
      env: this.env(),
      stdio: ["ignore", fd, fd],
    });
    closeSync(fd);
    let exited = false;
    this.proc.once("exit", () => (exited = true));
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (exited) throw new Error(`relay up exited: ${this.output()}`);
      try {
        const r = await fetch(this.url + "/health", { signal: AbortSignal.timeout(1000) });
        if (r.ok) return this;
      } catch {
        await sleep(50);
      }
    }
    await this.stop();
    throw new Error(`relay daemon not healthy within ${timeoutMs} ms: ${this.output()}`);
  }

  async stop() {
    const p = this.proc;
    this.proc = undefined;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const done = new Promise((r) => p.once("exit", r));
    p.kill("SIGTERM");
    const t = setTimeout(() => p.kill("SIGKILL"), 10000);
    await done;
    clearTimeout(t);
  }

  output() {
    try {
      return readFileSync(join(this.home, "test-daemon.out"), "utf8").slice(-2000);
    } catch {
      return "";
    }
  }

  async close() {
    await this.stop();
    rmSync(this.home, { recursive: true, force: true });
  }
}
