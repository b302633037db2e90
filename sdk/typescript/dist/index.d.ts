/**
 * @relay/client: the relay memory daemon's REST API (docs/api.md) over the global `fetch`.
 * No runtime dependencies; works in Node >= 18, Deno, Bun and browsers.
 */
import type { A2AResult, Artifact, ArtifactType, Capability, HeaderDelta, InvokeResult, PatchOp, PatchResult, RelayEvent, Report, State, StateHeader, Stats, Thread, ThreadDetail, VersionHistory } from "./types.js";
export * from "./errors.js";
export type * from "./types.js";
export declare const DEFAULT_URL = "http://127.0.0.1:7474";
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
/**
 * Finds the daemon's URL and token the way the relay CLI does (Node only; elsewhere the default URL):
 * $RELAY_URL, else `url` in $RELAY_HOME/daemon.json (the running daemon's actual port), else
 * `http://127.0.0.1:<config.json port or 7474>`; token from $RELAY_TOKEN, else config.json.
 */
export declare function discover(home?: string): Promise<{
    url: string;
    token?: string;
}>;
interface SSEFrame {
    id?: string;
    event?: string;
    data?: string;
    retry?: number;
}
/** Parses a text/event-stream body into frames; `onBytes` is called whenever data arrives. */
export declare function sseFrames(body: ReadableStream<Uint8Array>, onBytes?: () => void): AsyncGenerator<SSEFrame>;
/**
 * Client for one relay daemon. Every method resolves to the decoded JSON of the response and
 * rejects with a subclass of {@link RelayError}.
 *
 * ```ts
 * const client = new RelayClient();                 // url and token from $RELAY_HOME (Node)
 * const { thread_id } = await client.threadNew("my-run");
 * ```
 */
export declare class RelayClient {
    private baseURL;
    private token;
    private readonly timeoutMs;
    private readonly fetchFn;
    private resolving;
    constructor(url?: string, options?: ClientOptions);
    /** The daemon's base URL (after discovery). */
    url(): Promise<string>;
    private resolve;
    private raw;
    private json;
    private t;
    health(): Promise<{
        status: string;
    }>;
    version(): Promise<Record<string, unknown>>;
    /** Creates a thread; resolves to it with `thread_id` and `state_ref`. */
    threadNew(name?: string): Promise<Thread>;
    /** Threads, most recently updated first. */
    threads(limit?: number): Promise<Thread[]>;
    /** One thread with its state header and event count. */
    thread(threadId: string): Promise<ThreadDetail>;
    /** The full state document, latest or at `version`. */
    state(threadId: string, version?: number): Promise<State>;
    /** The bounded (≤ 2 KB) header: what an agent should put in a prompt. */
    stateHeader(threadId: string): Promise<StateHeader>;
    /**
     * What changed in the header since version `since` (7 or "v7"): `{since, v, …changed members}`
     * (see {@link HeaderDelta}; {@link applyHeaderDelta} applies it), or the full header when that
     * would not be smaller or the version is unknown. Tell them apart with `"since" in r`.
     */
    stateHeaderSince(threadId: string, since: number | string): Promise<HeaderDelta | StateHeader>;
    /**
     * Applies an RFC 6902 JSON Patch atomically. Pass `expectedVersion` (the version the patch was
     * made against): when the state moved on it rejects with {@link ConflictError} and applies nothing.
     */
    statePatch(threadId: string, ops: PatchOp[], opts?: {
        expectedVersion?: number;
        author?: string;
    }): Promise<PatchResult>;
    /** Version history, oldest first, with each version's patch. */
    stateVersions(threadId: string, opts?: {
        after?: number;
        limit?: number;
    }): Promise<VersionHistory>;
    /**
     * Stores content and resolves to its metadata with `ref` (never the content). Strings are sent as
     * UTF-8 text, bytes as a raw body. `type` is detected by the daemon when omitted.
     */
    artifactPut(threadId: string, name: string, content: string | Uint8Array | ArrayBuffer | Blob, type?: ArtifactType, opts?: ArtifactPutOptions): Promise<Artifact>;
    /** Artifact metadata, oldest first. */
    artifacts(threadId: string, opts?: {
        type?: ArtifactType;
        after?: string;
        limit?: number;
    }): Promise<Artifact[]>;
    /** A ref names one artifact in the whole store: without a thread, the store-wide route. */
    private artifactPath;
    /**
     * One artifact's metadata and preview (not its content). `ref` is the ref relay shows
     * (6 hex characters) or a full one; `threadId` may be null: the answer's `thread_id` says where it is.
     */
    artifact(threadId: string | null, ref: string): Promise<Artifact>;
    /** The artifact's exact bytes (`threadId` may be null, as for `artifact`). */
    artifactGet(threadId: string | null, ref: string): Promise<Uint8Array>;
    /** The artifact's content decoded as UTF-8. */
    artifactText(threadId: string | null, ref: string): Promise<string>;
    /** Stored events with id greater than `after`, oldest first. */
    events(threadId: string, opts?: {
        after?: number;
        limit?: number;
    }): Promise<RelayEvent[]>;
    /**
     * Follows the thread's events live over Server-Sent Events: replays stored events after
     * `opts.after`, then yields new ones as they happen. When the connection drops it reconnects
     * with `Last-Event-ID`, so nothing is lost or repeated. Stop with `break` or `opts.signal`.
     */
    tail(threadId: string, opts?: TailOptions): AsyncGenerator<RelayEvent, void, undefined>;
    /** Available capabilities with their argument schemas. */
    capList(): Promise<Capability[]>;
    /** Invokes a capability: resolves to a small `preview` plus the full result's `artifact_ref`. */
    capInvoke(threadId: string, capability: string, args?: Record<string, unknown>, opts?: {
        noCache?: boolean;
    }): Promise<InvokeResult>;
    /** Sends a typed A2A envelope (`com.relay.a2a.envelope.v1`); the answer wraps the response envelope. */
    a2a(envelope: Record<string, unknown>): Promise<A2AResult>;
    /** The thread's report: an object for `json`, Markdown text for `md`. */
    report(threadId: string, format: "json"): Promise<Report>;
    report(threadId: string, format: "md"): Promise<string>;
    report(threadId: string): Promise<Report>;
    /** Token-savings figures: naive vs actual tokens, tokens avoided, cache hits. */
    stats(threadId: string): Promise<Stats>;
}
/**
 * Applies a delta from {@link RelayClient.stateHeaderSince} to the header held at `delta.since`
 * and returns the header at `delta.v`.
 */
export declare function applyHeaderDelta(header: StateHeader, delta: HeaderDelta): StateHeader;
