/** Typed errors thrown by RelayClient: one class per HTTP status the API documents. */

export interface ErrorDetails {
  code?: string;
  message?: string;
  [key: string]: unknown;
}

/** Any failure talking to the relay daemon. `status` is 0 when the daemon could not be reached. */
export class RelayError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details: ErrorDetails;

  constructor(message: string, status = 0, code = "", details: ErrorDetails = {}) {
    super(message);
    this.name = new.target.name;
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

/** The daemon is not running or not reachable at the URL. */
export class RelayConnectionError extends RelayError {}
/** 400: malformed JSON, an invalid patch or state, bad arguments. */
export class BadRequestError extends RelayError {}
/** 401: the API token is missing or wrong. */
export class AuthError extends RelayError {}
/** 403: a cross-site request was refused. */
export class ForbiddenError extends RelayError {}
/** 404: unknown thread, version, artifact ref or route. */
export class NotFoundError extends RelayError {}

/** 409: the state moved on (`version_conflict`) or a JSON Patch `test` failed (`test_failed`). */
export class ConflictError extends RelayError {
  /** For `version_conflict`: the version the state is at now (re-read, then retry). */
  get currentVersion(): number | undefined {
    const v = this.details.current_version;
    return typeof v === "number" ? v : undefined;
  }
  get stateRef(): string | undefined {
    const v = this.details.state_ref;
    return typeof v === "string" ? v : undefined;
  }
}

/** 413: the request body (or the resulting state) is over the route's cap. */
export class PayloadTooLargeError extends RelayError {
  get limit(): number | undefined {
    const v = this.details.limit;
    return typeof v === "number" ? v : undefined;
  }
}

/** 5xx: a daemon bug, a storage failure, or the daemon shutting down. */
export class ServerError extends RelayError {}

const byStatus: Record<number, new (m: string, s: number, c: string, d: ErrorDetails) => RelayError> = {
  400: BadRequestError,
  401: AuthError,
  403: ForbiddenError,
  404: NotFoundError,
  409: ConflictError,
  413: PayloadTooLargeError,
};

/** Builds the typed error for an HTTP status and its (possibly non-JSON) body. */
export function errorFor(status: number, body: unknown, fallback = ""): RelayError {
  let details: ErrorDetails = {};
  if (body && typeof body === "object" && "error" in body) {
    const e = (body as { error: unknown }).error;
    if (e && typeof e === "object") details = e as ErrorDetails;
  }
  const code = typeof details.code === "string" ? details.code : "";
  let message = typeof details.message === "string" && details.message ? details.message : fallback || `HTTP ${status}`;
  if (status === 401 && !details.message) {
    message = "the relay daemon needs an API token: pass { token } or set RELAY_TOKEN";
  }
  const Cls = byStatus[status] ?? (status >= 500 ? ServerError : RelayError);
  return new Cls(message, status, code, details);
}
