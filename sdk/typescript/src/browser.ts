// The browser bundle (web/static/realsync.js): the SDK, using the
// browser's EventSource.
export * from "./index.js";
