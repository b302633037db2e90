/** Shapes of the relay daemon's JSON (docs/api.md). Unknown extra fields may appear. */

export type JSONValue = null | boolean | number | string | JSONValue[] | { [key: string]: JSONValue };

export interface Thread {
  thread_id: string;
  name: string;
  created_at: string;
  updated_at: string;
  version: number;
  state_ref: string;
  artifact_count: number;
  last_event_id: number;
}

export interface ThreadDetail extends Thread {
  header: StateHeader;
  event_count: number;
}

export interface Metrics {
  cache_hits?: number;
  cache_misses?: number;
  tokens_estimate?: number;
  tokens_avoided?: number;
  hop_count?: number;
  [key: string]: number | undefined;
}

export interface State {
  $schema: string;
  thread_id: string;
  version: number;
  updated_at: string;
  facts: Array<{ id: string; key?: string; value?: JSONValue; at?: string }>;
  constraints: Array<{ id: string; description: string; severity?: "hard" | "soft" }>;
  open_questions: Array<{ id: string; question: string; status?: "open" | "resolved" }>;
  decisions: Array<{
    id: string;
    description: string;
    reason_codes?: string[];
    evidence_refs?: string[];
    confidence?: number;
    at?: string;
  }>;
  plan: Array<{ id: string; step: string; status?: "pending" | "done" | "skipped" }>;
  artifacts: Array<{ ref: string; type: string; name?: string }>;
  last_actions: Array<{ at: string; description: string; result_ref?: string }>;
  metrics: Metrics;
  [key: string]: unknown;
}

/**
 * The bounded header agents read on every hop, encoded for few tokens: short member names,
 * empty lists and counters that are not positive left out. `refs` items are "<ref> <name>",
 * with the one ref relay shows for an artifact (6 hex characters), accepted wherever a ref is.
 */
export interface StateHeader {
  /** First 8 characters of the thread id. */
  t: string;
  /** State version (state_ref "v" + v). */
  v: number;
  facts?: State["facts"];
  constraints?: State["constraints"];
  questions?: State["open_questions"];
  next?: State["plan"];
  refs?: string[];
  actions?: State["last_actions"];
  /** How many items a list was chosen from, for lists that show fewer. */
  n?: Record<string, number>;
  /** Present only when the 2 KB cap dropped entries: count per list. */
  cut?: Record<string, number>;
  /** Non-zero counters only: cache hits and tokens avoided. */
  m?: { hits?: number; saved?: number };
}

/**
 * What changed in the header since version `since`: each changed member's new value, `null` when
 * it is gone, or `{drop, add}` for a list that lost `drop` items at the front and gained `add`.
 */
export interface HeaderDelta {
  since: number;
  v: number;
  [member: string]: unknown;
}

/** One RFC 6902 operation. */
export type PatchOp =
  | { op: "add" | "replace" | "test"; path: string; value: unknown }
  | { op: "remove"; path: string }
  | { op: "move" | "copy"; from: string; path: string };

export interface PatchResult {
  thread_id: string;
  version: number;
  state_ref: string;
  event_id: number;
}

export interface VersionInfo {
  version: number;
  state_ref: string;
  created_at: string;
  author?: string;
  event_id?: number;
  patch: PatchOp[];
}

export interface VersionHistory {
  versions: VersionInfo[];
  current_version: number;
}

export type ArtifactType = "markdown" | "json" | "html" | "text" | "binary" | "tool_output" | "email";

export interface Artifact {
  /** The one ref relay shows for this artifact (6 hex characters; a full 26-digit ref also resolves). */
  ref: string;
  thread_id: string;
  type: ArtifactType;
  mime: string;
  name: string;
  size: number;
  hash: string;
  preview: { text: string; line_count: number; truncated: boolean; size: number };
  provenance: { created_by?: string; created_at?: string; source_refs?: string[]; capability?: string };
  created_at: string;
  deduplicated?: boolean;
}

export interface RelayEvent {
  /** Store-wide and increasing: the cursor for `after` and SSE reconnects. */
  id: number;
  /** Position in its thread, from 1 (absent from daemons older than this field). */
  seq?: number;
  thread_id: string;
  type: string;
  at: string;
  data: Record<string, unknown>;
}

export interface Capability {
  name: string;
  description: string;
  args_schema: JSONValue;
  cacheable: boolean;
  cache_ttl_sec: number;
}

export interface InvokeResult {
  capability: string;
  thread_id: string;
  preview: JSONValue;
  artifact_ref: string;
  cached: boolean;
  event_id?: number;
}

/** A typed agent message, `com.relay.a2a.envelope.v1`. */
export interface A2AEnvelope {
  msg_id: string;
  thread_id: string;
  from: string;
  to_capability?: string;
  type: "request" | "response" | "event" | "error";
  schema: "com.relay.a2a.envelope.v1";
  payload: JSONValue;
  idempotency_key?: string;
  timestamp: string;
  ttl?: number;
  in_reply_to?: string;
}

/** What POST /a2a answers: the response envelope (its payload is the InvokeResult). */
export interface A2AResult {
  response: A2AEnvelope;
  /** true when the idempotency key was seen before: the first response, nothing ran again */
  replayed: boolean;
  hops: number;
}

export interface Stats {
  artifacts: number;
  naive_tokens: number;
  actual_tokens: number;
  tokens_avoided: number;
  cache_hits: number;
  session_cache_hits: number;
  [key: string]: unknown;
}

export interface Report {
  token_savings: { avoided_tokens: number; [key: string]: unknown };
  [key: string]: unknown;
}
