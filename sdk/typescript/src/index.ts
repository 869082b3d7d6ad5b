// @realsync/sdk: the REST client generated from openapi.yaml, typed errors,
// and live rooms and lobby over Server-Sent Events.
export * from "./client.js";
export * from "./live.js";
export type { components, paths } from "./schema.js";
