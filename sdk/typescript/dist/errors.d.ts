/** Typed errors thrown by RelayClient: one class per HTTP status the API documents. */
export interface ErrorDetails {
    code?: string;
    message?: string;
    [key: string]: unknown;
}
/** Any failure talking to the relay daemon. `status` is 0 when the daemon could not be reached. */
export declare class RelayError extends Error {
    readonly status: number;
    readonly code: string;
    readonly details: ErrorDetails;
    constructor(message: string, status?: number, code?: string, details?: ErrorDetails);
}
/** The daemon is not running or not reachable at the URL. */
export declare class RelayConnectionError extends RelayError {
}
/** 400: malformed JSON, an invalid patch or state, bad arguments. */
export declare class BadRequestError extends RelayError {
}
/** 401: the API token is missing or wrong. */
export declare class AuthError extends RelayError {
}
/** 403: a cross-site request was refused. */
export declare class ForbiddenError extends RelayError {
}
/** 404: unknown thread, version, artifact ref or route. */
export declare class NotFoundError extends RelayError {
}
/** 409: the state moved on (`version_conflict`) or a JSON Patch `test` failed (`test_failed`). */
export declare class ConflictError extends RelayError {
    /** For `version_conflict`: the version the state is at now (re-read, then retry). */
    get currentVersion(): number | undefined;
    get stateRef(): string | undefined;
}
/** 413: the request body (or the resulting state) is over the route's cap. */
export declare class PayloadTooLargeError extends RelayError {
    get limit(): number | undefined;
}
/** 5xx: a daemon bug, a storage failure, or the daemon shutting down. */
export declare class ServerError extends RelayError {
}
/** Builds the typed error for an HTTP status and its (possibly non-JSON) body. */
export declare function errorFor(status: number, body: unknown, fallback?: string): RelayError;
