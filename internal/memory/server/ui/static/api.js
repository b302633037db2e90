// The daemon API as the UI uses it: bearer token (asked once, kept in the browser), typed errors,
// and an SSE reader over fetch (EventSource cannot send the Authorization header).

const TOKEN_KEY = "relay.token";

export class APIError extends Error {
  constructor(status, code, message, details = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

export function storedToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY) || localStorage.getItem(TOKEN_KEY) || "";
  } catch {
    return "";
  }
}

export function saveToken(token, remember) {
  try {
    sessionStorage.removeItem(TOKEN_KEY);
    localStorage.removeItem(TOKEN_KEY);
    if (token) (remember ? localStorage : sessionStorage).setItem(TOKEN_KEY, token);
  } catch {
    /* storage disabled: the token lives for this page only */
  }
  memToken = token;
}

let memToken = storedToken();
let asking = null; // one token prompt at a time, shared by concurrent requests
let askHook = async () => null;

/** onTokenNeeded registers the UI's prompt: (reason) => Promise<{token, remember} | null>. */
export function onTokenNeeded(fn) {
  askHook = fn;
}

async function askToken(reason) {
  asking ??= askHook(reason).finally(() => (asking = null));
  const got = await asking;
  if (!got || !got.token) return false;
  saveToken(got.token, got.remember);
  return true;
}

function authHeaders(extra = {}) {
  const h = { Accept: "application/json", ...extra };
  if (memToken) h.Authorization = `Bearer ${memToken}`;
  return h;
}

/** request performs one API call, prompting for the token on 401 and retrying once it is given. */
export async function request(method, path, { body, query, headers, signal, raw } = {}) {
  let url = path;
  if (query) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
    if ([...q].length) url += "?" + q;
  }
  for (let attempt = 0; ; attempt++) {
    const sentToken = memToken;
    const init = { method, headers: authHeaders(headers), signal, credentials: "omit", cache: "no-store" };
    if (body !== undefined) {
      init.body = typeof body === "string" ? body : JSON.stringify(body);
      init.headers["Content-Type"] = "application/json";
    }
    let res;
    try {
      res = await fetch(url, init);
    } catch (e) {
      if (signal?.aborted) throw e;
      throw new APIError(0, "unreachable", "cannot reach the relay daemon; is `relay up` still running?");
    }
    if (res.status === 401 && attempt < 5) {
      // Another request may already have obtained a fresh token.
      if (memToken !== sentToken && memToken) continue;
      const ok = await askToken(sentToken ? "That token was refused. Check it and try again." : "");
      if (ok) continue;
    }
    if (!res.ok) {
      let err = {};
      try {
        err = (await res.json()).error || {};
      } catch {
        /* not JSON */
      }
      throw new APIError(res.status, err.code || "", err.message || `HTTP ${res.status}`, err);
    }
    if (raw) return res;
    if (res.status === 204) return null;
    const ct = res.headers.get("Content-Type") || "";
    return ct.includes("json") ? res.json() : res.text();
  }
}

/**
 * takeSigninCode removes a one-time sign-in code (from `relay open`) from the address bar and
 * returns it: "#code=X" or "#/t/<id>?code=X". The fragment never reaches the daemon.
 */
export function takeSigninCode() {
  const m = location.hash.match(/[#?&]code=([A-Za-z0-9_-]{1,200})/);
  if (!m) return "";
  let rest = location.hash.slice(0, m.index) + location.hash.slice(m.index + m[0].length);
  if (rest === "" || rest === "#") rest = "";
  else if (m[0][0] === "#") rest = "#" + rest.replace(/^[&?]/, "");
  history.replaceState(history.state, "", location.pathname + location.search + rest);
  return m[1];
}

/** tradeSigninCode trades a one-time code for the token and keeps it as a typed token would be. */
export async function tradeSigninCode(code) {
  let res;
  try {
    res = await fetch("/auth/code", {
      method: "POST",
      headers: { Accept: "application/json", "Content-Type": "application/json" },
      body: JSON.stringify({ code }),
      credentials: "omit",
      cache: "no-store",
    });
  } catch {
    throw new APIError(0, "unreachable", "cannot reach the relay daemon; is `relay up` still running?");
  }
  let body = {};
  try {
    body = await res.json();
  } catch {
    /* not JSON */
  }
  if (!res.ok) {
    const err = body.error || {};
    throw new APIError(res.status, err.code || "", err.message || `HTTP ${res.status}`, err);
  }
  saveToken(body.token || "", true);
}

export const api = {
  threads: (limit = 200) => request("GET", "/threads", { query: { limit } }).then((r) => r.threads || []),
  thread: (id) => request("GET", `/threads/${encodeURIComponent(id)}`),
  state: (id, version) => request("GET", `/threads/${encodeURIComponent(id)}/state`, { query: { version } }),
  header: (id) => request("GET", `/threads/${encodeURIComponent(id)}/state/header`),
  versions: (id, after = 0, limit = 1000) => request("GET", `/threads/${encodeURIComponent(id)}/state/versions`, { query: { after, limit } }),
  artifacts: (id) => request("GET", `/threads/${encodeURIComponent(id)}/artifacts`, { query: { limit: 1000 } }).then((r) => r.artifacts || []),
  artifact: (id, ref) => request("GET", `/threads/${encodeURIComponent(id)}/artifacts/${encodeURIComponent(ref)}`),
  artifactRaw: (id, ref, signal) => request("GET", `/threads/${encodeURIComponent(id)}/artifacts/${encodeURIComponent(ref)}`, { query: { raw: 1 }, headers: { Accept: "*/*" }, raw: true, signal }),
  events: (id, after = 0, limit = 1000) => request("GET", `/threads/${encodeURIComponent(id)}/events`, { query: { after, limit } }),
  stats: (id) => request("GET", `/threads/${encodeURIComponent(id)}/stats`),
  caps: () => request("GET", "/cap/list").then((r) => r.capabilities || []),
  invoke: (threadId, capability, args) => request("POST", "/cap/invoke", { body: { thread_id: threadId, capability, args } }),
  version: () => request("GET", "/version"),
};

/**
 * follow streams a thread's events: onEvent(ev) for each, onStatus("live"|"reconnecting"|"error", msg).
 * Reconnects with Last-Event-ID after a drop. Returns a function that stops it.
 */
export function follow(threadId, after, onEvent, onStatus) {
  const ctrl = new AbortController();
  let lastId = after || 0;
  let retryMs = 2000;
  (async () => {
    let failures = 0;
    while (!ctrl.signal.aborted) {
      try {
        const res = await request("GET", `/threads/${encodeURIComponent(threadId)}/events/stream`, {
          query: lastId ? { after: lastId } : undefined,
          headers: { Accept: "text/event-stream", "Last-Event-ID": String(lastId) },
          signal: ctrl.signal,
          raw: true,
        });
        onStatus("live");
        failures = 0;
        const reader = res.body.getReader();
        const dec = new TextDecoder();
        let buf = "";
        let data = [];
        let id = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += dec.decode(value, { stream: true });
          let nl;
          while ((nl = buf.indexOf("\n")) >= 0) {
            const line = buf.slice(0, nl).replace(/\r$/, "");
            buf = buf.slice(nl + 1);
            if (line === "") {
              if (data.length) {
                try {
                  const ev = JSON.parse(data.join("\n"));
                  const n = Number(id || ev.id);
                  if (!(n <= lastId)) {
                    if (Number.isFinite(n)) lastId = n;
                    onEvent(ev);
                  }
                } catch {
                  /* a malformed frame is skipped, not fatal */
                }
              }
              data = [];
              id = "";
            } else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
            else if (line.startsWith("id:")) id = line.slice(3).trim();
            else if (line.startsWith("retry:")) retryMs = Number(line.slice(6)) || retryMs;
          }
        }
      } catch (e) {
        if (ctrl.signal.aborted) return;
        if (e instanceof APIError && e.status >= 400 && e.status < 500) {
          onStatus("error", e.message);
          return;
        }
      }
      if (ctrl.signal.aborted) return;
      failures++;
      onStatus("reconnecting");
      await new Promise((r) => setTimeout(r, Math.min(retryMs * failures, 15000)));
    }
  })();
  return () => ctrl.abort();
}
