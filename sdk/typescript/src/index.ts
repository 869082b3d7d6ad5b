// @realsync/sdk for Node (and other runtimes without a browser EventSource):
// the REST client generated from openapi.yaml, typed errors, and live rooms
// and lobby over Server-Sent Events whose identity token travels in an
// Authorization header (the eventsource package). Browsers: @realsync/sdk/browser.
import { RealSync as Client, type RealSyncOptions } from "./client.js";
import { nodeTransport } from "./node.js";

export * from "./client.js";
export * from "./live.js";
export * from "./transport.js";
export * from "./backoff.js";
export { nodeTransport } from "./node.js";
export type { components, paths } from "./schema.js";

/** RealSync is the REST client; its live streams use nodeTransport unless options.transport says otherwise. */
export class RealSync extends Client {
  constructor(opts: RealSyncOptions) {
    super({ transport: nodeTransport, ...opts });
  }
}
