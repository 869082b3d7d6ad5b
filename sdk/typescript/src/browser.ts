// @realsync/sdk/browser (and the demo's bundle, web/static/realsync.js): the
// SDK with the browser's EventSource and stream tokens in URLs, without the
// Node eventsource package.
export * from "./client.js";
export * from "./live.js";
export * from "./transport.js";
export * from "./backoff.js";
export type { components, paths } from "./schema.js";
