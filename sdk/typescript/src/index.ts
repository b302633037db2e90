/**
 * @relay/client: the relay memory daemon's REST API (docs/api.md) over the global `fetch`.
 * No runtime dependencies; works in Node >= 18, Deno, Bun and browsers.
 */

import { RelayConnectionError, RelayError, errorFor } from "./errors.js";
import type {
  A2AResult,
  Artifact,
  ArtifactType,
  Capability,
  HeaderDelta,
  InvokeResult,
  PatchOp,
  PatchResult,
  RelayEvent,
  Report,
  State,
  StateHeader,
  Stats,
  Thread,
  ThreadDetail,
  VersionHistory,
} from "./types.js";

export * from "./errors.js";
export type * from "./types.js";

export const DEFAULT_URL = "http://127.0.0.1:7474";
const VERSION = "0.1.0";

export interface ClientOptions {
  /** API token; default: $RELAY_TOKEN, else `token` in $RELAY_HOME/config.json (Node only). */
  token?: string;
  /** Per-request timeout in milliseconds (not applied to `tail`). Default 30000. */
  timeoutMs?: number;
  /** A fetch implementation; default the global `fetch`. */
  fetch?: typeof fetch;
}

export interface TailOptions {
  /** Start after this event id (0 = replay the whole thread). */
  after?: number;
  /** Reconnect with `Last-Event-ID` when the stream drops. Default true. */
  reconnect?: boolean;
  /** Give up after this many consecutive failed reconnects. Default: never. */
  maxRetries?: number;
  /** Treat the stream as dead when nothing (not even a ping) arrives for this long. Default 45000. */
  readTimeoutMs?: number;
  /** Stop tailing. */
  signal?: AbortSignal;
}

export interface ArtifactPutOptions {
  createdBy?: string;
  capability?: string;
  sourceRefs?: string[];
}

type Query = Record<string, string | number | boolean | undefined | null>;

interface NodeProcess {
  env: Record<string, string | undefined>;
}

function nodeProcess(): NodeProcess | undefined {
  const p = (globalThis as { process?: NodeProcess }).process;
  return p && typeof p.env === "object" ? p : undefined;
}

async function readJSONFile(path: string): Promise<Record<string, unknown>> {
  // The specifier is a variable so bundlers for browsers leave it alone.
  const fsName = "node:fs/promises";
  try {
    const fs = await import(fsName);
    const v = JSON.parse(await fs.readFile(path, "utf8"));
    return v && typeof v === "object" ? v : {};
  } catch {
    return {};
  }
}

/**
 * Finds the daemon's URL and token the way the relay CLI does (Node only; elsewhere the default URL):
 * $RELAY_URL, else `url` in $RELAY_HOME/daemon.json (the running daemon's actual port), else
 * `http://127.0.0.1:<config.json port or 7474>`; token from $RELAY_TOKEN, else config.json.
 */
export async function discover(home?: string): Promise<{ url: string; token?: string }> {
  const proc = nodeProcess();
  if (!proc) return { url: DEFAULT_URL };
  const osName = "node:os";
  const os = await import(osName).catch(() => undefined);
  const dir = home ?? proc.env.RELAY_HOME ?? (os ? `${os.homedir()}/.relay` : ".relay");
  const cfg = await readJSONFile(`${dir}/config.json`);
  let url = proc.env.RELAY_URL ?? "";
  if (!url) {
    const d = await readJSONFile(`${dir}/daemon.json`);
    if (typeof d.url === "string") url = d.url;
  }
  if (!url) url = `http://127.0.0.1:${typeof cfg.port === "number" && cfg.port > 0 ? cfg.port : 7474}`;
  const token = proc.env.RELAY_TOKEN || (typeof cfg.token === "string" && cfg.token ? cfg.token : undefined);
  return { url: url.replace(/\/+$/, ""), token };
}

/** AbortSignal.any where available (Node >= 20.3), else a manual combination for Node 18. */
function anySignal(signals: AbortSignal[]): AbortSignal | undefined {
  if (signals.length <= 1) return signals[0];
  const any = (AbortSignal as { any?: (s: AbortSignal[]) => AbortSignal }).any;
  if (any) return any(signals);
  const ctrl = new AbortController();
  for (const s of signals) {
    if (s.aborted) {
      ctrl.abort(s.reason);
      break;
    }
    s.addEventListener("abort", () => ctrl.abort(s.reason), { once: true });
  }
  return ctrl.signal;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

interface SSEFrame {
  id?: string;
  event?: string;
  data?: string;
  retry?: number;
}

/** Parses a text/event-stream body into frames; `onBytes` is called whenever data arrives. */
export async function* sseFrames(body: ReadableStream<Uint8Array>, onBytes: () => void = () => {}): AsyncGenerator<SSEFrame> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  let frame: SSEFrame = {};
  let data: string[] = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      onBytes();
      buf += decoder.decode(value, { stream: true });
      let nl: number;
      while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
        if (nl === buf.length - 1 && buf[nl] === "\r") break; // a "\n" may follow in the next chunk
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + (buf.startsWith("\r\n", nl) ? 2 : 1));
        if (line === "") {
          if (data.length) frame.data = data.join("\n");
          if (Object.keys(frame).length) yield frame;
          frame = {};
          data = [];
          continue;
        }
        if (line.startsWith(":")) continue; // comment / keep-alive ping
        const i = line.indexOf(":");
        const field = i < 0 ? line : line.slice(0, i);
        let v = i < 0 ? "" : line.slice(i + 1);
        if (v.startsWith(" ")) v = v.slice(1);
        if (field === "data") data.push(v);
        else if (field === "id") frame.id = v;
        else if (field === "event") frame.event = v;
        else if (field === "retry" && /^\d+$/.test(v)) frame.retry = Number(v);
      }
    }
  } finally {
    reader.releaseLock();
  }
}

/**
 * Client for one relay daemon. Every method resolves to the decoded JSON of the response and
 * rejects with a subclass of {@link RelayError}.
 *
 * ```ts
 * const client = new RelayClient();                 // url and token from $RELAY_HOME (Node)
 * const { thread_id } = await client.threadNew("my-run");
 * ```
 */
export class RelayClient {
  private baseURL: string | undefined;
  private token: string | undefined;
  private readonly timeoutMs: number;
  private readonly fetchFn: typeof fetch;
  private resolving: Promise<void> | undefined;

  constructor(url?: string, options: ClientOptions = {}) {
    this.baseURL = url ? url.replace(/\/+$/, "") : undefined;
    this.token = options.token;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    const f = options.fetch ?? globalThis.fetch;
    if (typeof f !== "function") throw new Error("@relay/client needs a global fetch (Node >= 18) or options.fetch");
    this.fetchFn = f.bind(globalThis);
  }

  /** The daemon's base URL (after discovery). */
  async url(): Promise<string> {
    await this.resolve();
    return this.baseURL as string;
  }

  private resolve(): Promise<void> {
    if (this.baseURL !== undefined && this.token !== undefined) return Promise.resolve();
    this.resolving ??= discover().then((d) => {
      this.baseURL ??= d.url;
      this.token ??= d.token ?? "";
    });
    return this.resolving;
  }

  private async raw(method: string, path: string, init: { query?: Query; body?: BodyInit; headers?: Record<string, string>; signal?: AbortSignal; timeout?: boolean } = {}): Promise<Response> {
    await this.resolve();
    let url = this.baseURL + path;
    if (init.query) {
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(init.query)) if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
      const s = q.toString();
      if (s) url += "?" + s;
    }
    const headers: Record<string, string> = { Accept: "application/json", ...init.headers };
    if (nodeProcess()) headers["User-Agent"] = `relay-client-js/${VERSION}`;
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    const signals: AbortSignal[] = [];
    if (init.signal) signals.push(init.signal);
    if (init.timeout !== false) signals.push(AbortSignal.timeout(this.timeoutMs));
    let res: Response;
    try {
      res = await this.fetchFn(url, {
        method,
        headers,
        body: init.body,
        signal: anySignal(signals),
      });
    } catch (e) {
      if (init.signal?.aborted) throw e;
      const why = e instanceof Error ? (e.cause instanceof Error ? e.cause.message : e.message) : String(e);
      throw new RelayConnectionError(`cannot reach the relay daemon at ${this.baseURL} (${why}); start it with \`relay up\` or set RELAY_URL`);
    }
    if (!res.ok) {
      const text = await res.text().catch(() => "");
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        body = undefined;
      }
      throw errorFor(res.status, body, text.slice(0, 200));
    }
    return res;
  }

  private async json<T>(method: string, path: string, body?: unknown, query?: Query): Promise<T> {
    const res = await this.raw(method, path, {
      query,
      body: body === undefined ? undefined : JSON.stringify(body),
      headers: body === undefined ? {} : { "Content-Type": "application/json" },
    });
    const ct = res.headers.get("Content-Type") ?? "";
    if (ct.includes("json")) return (await res.json()) as T;
    return (await res.text()) as T;
  }

  private t(id: string): string {
    return `/threads/${encodeURIComponent(id)}`;
  }

  // -- daemon -----------------------------------------------------------------------

  health(): Promise<{ status: string }> {
    return this.json("GET", "/health");
  }

  version(): Promise<Record<string, unknown>> {
    return this.json("GET", "/version");
  }

  // -- threads ----------------------------------------------------------------------

  /** Creates a thread; resolves to it with `thread_id` and `state_ref`. */
  threadNew(name?: string): Promise<Thread> {
    return this.json("POST", "/threads", name ? { name } : {});
  }

  /** Threads, most recently updated first. */
  async threads(limit = 50): Promise<Thread[]> {
    return (await this.json<{ threads: Thread[] }>("GET", "/threads", undefined, { limit })).threads;
  }

  /** One thread with its state header and event count. */
  thread(threadId: string): Promise<ThreadDetail> {
    return this.json("GET", this.t(threadId));
  }

  // -- state ------------------------------------------------------------------------

  /** The full state document, latest or at `version`. */
  state(threadId: string, version?: number): Promise<State> {
    return this.json("GET", `${this.t(threadId)}/state`, undefined, { version });
  }

  /** The bounded (≤ 2 KB) header: what an agent should put in a prompt. */
  stateHeader(threadId: string): Promise<StateHeader> {
    return this.json("GET", `${this.t(threadId)}/state/header`);
  }

  /**
   * What changed in the header since version `since` (7 or "v7"): `{since, v, …changed members}`
   * (see {@link HeaderDelta}; {@link applyHeaderDelta} applies it), or the full header when that
   * would not be smaller or the version is unknown. Tell them apart with `"since" in r`.
   */
  stateHeaderSince(threadId: string, since: number | string): Promise<HeaderDelta | StateHeader> {
    const v = String(since).replace(/^[vV]/, "");
    if (!/^[0-9]+$/.test(v)) throw new TypeError(`since=${String(since)} is not a version like 7 or "v7"`);
    return this.json("GET", `${this.t(threadId)}/state/header?since=v${v}`);
  }

  /**
   * Applies an RFC 6902 JSON Patch atomically. Pass `expectedVersion` (the version the patch was
   * made against): when the state moved on it rejects with {@link ConflictError} and applies nothing.
   */
  statePatch(threadId: string, ops: PatchOp[], opts: { expectedVersion?: number; author?: string } = {}): Promise<PatchResult> {
    const body: Record<string, unknown> = { patch: ops };
    if (opts.expectedVersion !== undefined) body.expected_version = opts.expectedVersion;
    if (opts.author) body.author = opts.author;
    return this.json("POST", `${this.t(threadId)}/state/patch`, body);
  }

  /** Version history, oldest first, with each version's patch. */
  stateVersions(threadId: string, opts: { after?: number; limit?: number } = {}): Promise<VersionHistory> {
    return this.json("GET", `${this.t(threadId)}/state/versions`, undefined, { after: opts.after, limit: opts.limit });
  }

  // -- artifacts ----------------------------------------------------------------------

  /**
   * Stores content and resolves to its metadata with `ref` (never the content). Strings are sent as
   * UTF-8 text, bytes as a raw body. `type` is detected by the daemon when omitted.
   */
  artifactPut(threadId: string, name: string, content: string | Uint8Array | ArrayBuffer | Blob, type?: ArtifactType, opts: ArtifactPutOptions = {}): Promise<Artifact> {
    const path = `${this.t(threadId)}/artifacts`;
    if (typeof content === "string") {
      const body: Record<string, unknown> = { name, content };
      if (type) body.type = type;
      if (opts.createdBy) body.created_by = opts.createdBy;
      if (opts.capability) body.capability = opts.capability;
      if (opts.sourceRefs?.length) body.source_refs = opts.sourceRefs;
      return this.json("POST", path, body);
    }
    const query: Query = {
      name,
      type,
      created_by: opts.createdBy,
      capability: opts.capability,
      source_refs: opts.sourceRefs?.join(","),
    };
    return this.raw("POST", path, {
      query,
      body: content as BodyInit,
      headers: { "Content-Type": "application/octet-stream" },
    }).then((r) => r.json() as Promise<Artifact>);
  }

  /** Artifact metadata, oldest first. */
  async artifacts(threadId: string, opts: { type?: ArtifactType; after?: string; limit?: number } = {}): Promise<Artifact[]> {
    return (await this.json<{ artifacts: Artifact[] }>("GET", `${this.t(threadId)}/artifacts`, undefined, opts)).artifacts;
  }

  /** A ref names one artifact in the whole store: without a thread, the store-wide route. */
  private artifactPath(threadId: string | null | undefined, ref: string): string {
    return threadId ? `${this.t(threadId)}/artifacts/${encodeURIComponent(ref)}` : `/artifacts/${encodeURIComponent(ref)}`;
  }

  /**
   * One artifact's metadata and preview (not its content). `ref` is the ref relay shows
   * (6 hex characters) or a full one; `threadId` may be null: the answer's `thread_id` says where it is.
   */
  artifact(threadId: string | null, ref: string): Promise<Artifact> {
    return this.json("GET", this.artifactPath(threadId, ref));
  }

  /** The artifact's exact bytes (`threadId` may be null, as for `artifact`). */
  async artifactGet(threadId: string | null, ref: string): Promise<Uint8Array> {
    const res = await this.raw("GET", this.artifactPath(threadId, ref), {
      query: { raw: 1 },
      headers: { Accept: "*/*" },
    });
    return new Uint8Array(await res.arrayBuffer());
  }

  /** The artifact's content decoded as UTF-8. */
  async artifactText(threadId: string | null, ref: string): Promise<string> {
    return new TextDecoder().decode(await this.artifactGet(threadId, ref));
  }

  // -- events -------------------------------------------------------------------------

  /** Stored events with id greater than `after`, oldest first. */
  async events(threadId: string, opts: { after?: number; limit?: number } = {}): Promise<RelayEvent[]> {
    return (await this.json<{ events: RelayEvent[] }>("GET", `${this.t(threadId)}/events`, undefined, opts)).events;
  }

  /**
   * Follows the thread's events live over Server-Sent Events: replays stored events after
   * `opts.after`, then yields new ones as they happen. When the connection drops it reconnects
   * with `Last-Event-ID`, so nothing is lost or repeated. Stop with `break` or `opts.signal`.
   */
  async *tail(threadId: string, opts: TailOptions = {}): AsyncGenerator<RelayEvent, void, undefined> {
    let lastId = opts.after ?? 0;
    let retryMs = 1000;
    let failures = 0;
    const reconnect = opts.reconnect ?? true;
    const readTimeoutMs = opts.readTimeoutMs ?? 45_000;
    const outer = opts.signal;
    while (!outer?.aborted) {
      const ctrl = new AbortController();
      const stop = () => ctrl.abort();
      outer?.addEventListener("abort", stop, { once: true });
      let timer: ReturnType<typeof setTimeout> | undefined;
      const arm = () => {
        clearTimeout(timer);
        timer = setTimeout(stop, readTimeoutMs);
      };
      try {
        arm();
        const res = await this.raw("GET", `${this.t(threadId)}/events/stream`, {
          query: lastId ? { after: lastId } : undefined,
          headers: { Accept: "text/event-stream", "Last-Event-ID": String(lastId) },
          signal: ctrl.signal,
          timeout: false,
        });
        if (!res.body) throw new RelayConnectionError("the event stream has no body");
        for await (const frame of sseFrames(res.body, arm)) {
          failures = 0;
          if (frame.retry) retryMs = frame.retry;
          if (frame.data === undefined) continue;
          let ev: RelayEvent;
          try {
            ev = JSON.parse(frame.data);
          } catch {
            continue;
          }
          const id = Number(frame.id ?? ev.id);
          if (Number.isFinite(id)) {
            if (id <= lastId) continue; // already delivered before a reconnect
            lastId = id;
          }
          yield ev;
        }
      } catch (e) {
        if (outer?.aborted) return;
        // A 4xx (bad token, unknown thread) will not fix itself by retrying.
        if (e instanceof RelayError && e.status >= 400 && e.status < 500) throw e;
        if (!reconnect) throw e;
      } finally {
        clearTimeout(timer);
        outer?.removeEventListener("abort", stop);
        ctrl.abort();
      }
      if (!reconnect || outer?.aborted) return;
      failures++;
      if (opts.maxRetries !== undefined && failures > opts.maxRetries) {
        throw new RelayConnectionError(`lost the event stream of thread ${threadId} and could not reconnect to ${this.baseURL}; is \`relay up\` running?`);
      }
      await sleep(failures > 1 ? Math.min(retryMs * (failures - 1), 10_000) : 50, outer);
    }
  }

  // -- capabilities, reports, stats ------------------------------------------------------

  /** Available capabilities with their argument schemas. */
  async capList(): Promise<Capability[]> {
    return (await this.json<{ capabilities: Capability[] }>("GET", "/cap/list")).capabilities;
  }

  /** Invokes a capability: resolves to a small `preview` plus the full result's `artifact_ref`. */
  capInvoke(threadId: string, capability: string, args: Record<string, unknown> = {}, opts: { noCache?: boolean } = {}): Promise<InvokeResult> {
    return this.json("POST", "/cap/invoke", { thread_id: threadId, capability, args, ...(opts.noCache ? { no_cache: true } : {}) });
  }

  /** Sends a typed A2A envelope (`com.relay.a2a.envelope.v1`); the answer wraps the response envelope. */
  a2a(envelope: Record<string, unknown>): Promise<A2AResult> {
    return this.json("POST", "/a2a", envelope);
  }

  /** The thread's report: an object for `json`, Markdown text for `md`. */
  report(threadId: string, format: "json"): Promise<Report>;
  report(threadId: string, format: "md"): Promise<string>;
  report(threadId: string): Promise<Report>;
  report(threadId: string, format: "json" | "md" = "json"): Promise<Report | string> {
    return this.json("POST", `/reports/${encodeURIComponent(threadId)}`, { format });
  }

  /** Token-savings figures: naive vs actual tokens, tokens avoided, cache hits. */
  stats(threadId: string): Promise<Stats> {
    return this.json("GET", `${this.t(threadId)}/stats`);
  }
}

/**
 * Applies a delta from {@link RelayClient.stateHeaderSince} to the header held at `delta.since`
 * and returns the header at `delta.v`.
 */
export function applyHeaderDelta(header: StateHeader, delta: HeaderDelta): StateHeader {
  const out: Record<string, unknown> = { ...header };
  for (const [k, v] of Object.entries(delta)) {
    if (k === "since") continue;
    const cur = out[k];
    if (v === null) {
      delete out[k];
    } else if (Array.isArray(cur) && isWindow(v)) {
      out[k] = [...cur.slice(v.drop ?? 0), ...(v.add ?? [])];
    } else {
      out[k] = v;
    }
  }
  return out as unknown as StateHeader;
}

function isWindow(v: unknown): v is { drop?: number; add?: unknown[] } {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
  const keys = Object.keys(v);
  return keys.length > 0 && keys.every((k) => k === "drop" || k === "add");
}
