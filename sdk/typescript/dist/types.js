/** Shapes of the relay daemon's JSON (docs/api.md). Unknown extra fields may appear. */
export {};
