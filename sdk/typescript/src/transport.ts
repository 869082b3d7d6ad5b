// How a live stream connects: one connection at a time, opened by the
// live clients (live.ts), which decide on every reconnect themselves.
import type { Problem } from "./client.js";

/** One connection to open: its URL, headers, and the event types to listen to. */
export interface StreamRequest {
  url: string;
  /** Authorization and Last-Event-ID for transports that send headers (auth "header"). */
  headers: Record<string, string>;
  /** The SSE event types to report (EventSource reports only named types it listens to). */
  types: string[];
  /** The fetch to use, for transports that fetch (the client's RealSyncOptions.fetch). */
  fetch: typeof fetch;
  /**
   * The heartbeat watchdog (LiveOptions.idleTimeoutMs): a transport that
   * sees the stream's bytes reports a connection that brought none (no
   * answer, no event, no `: ping` heartbeat) for this long as dropped
   * (error, status 0). EventSource shows neither comments nor a half-open
   * connection: its transports cannot keep this watch.
   */
  idleTimeoutMs?: number;
}

/** Why a connection ended: a refused stream (status, and the problem and
 * Retry-After when the transport could read them), or a dropped or failed
 * connection (status 0). */
export interface StreamFailure {
  status: number;
  problem?: Problem;
  retryAfterMs?: number;
  cause?: unknown;
}

/** What a transport reports about one connection. After error, it reports nothing more. */
export interface StreamHandlers {
  open(): void;
  event(type: string, data: string, id: string): void;
  /** The reconnection time (ms) the stream asks for should it end now: a
   * `retry:` field's value as it arrives, then 0 once an event follows it.
   * Reported by transports that can read it (the Node transport; EventSource
   * keeps its retry field to itself). */
  retry?(ms: number): void;
  error(failure: StreamFailure): void;
}

/** One open connection; close ends it and silences its handlers. */
export interface StreamConnection {
  close(): void;
}

/**
 * Transport opens the connections of live streams. Its auth says where the
 * credential goes: "header" — the identity token as Authorization: Bearer,
 * the resume point as Last-Event-ID; "url" — a stream token (valid 60 s, for
 * one stream) as ?token=, the resume point as ?lastEventId= (EventSource
 * cannot set headers). A transport never reconnects by itself: on any drop it
 * reports error, and the live stream decides.
 */
export interface Transport {
  readonly auth: "header" | "url";
  connect(req: StreamRequest, on: StreamHandlers): StreamConnection;
}

/** The part of EventSource the transports use (browsers' and the eventsource package's). */
export interface EventSourceLike {
  readonly readyState: number;
  addEventListener(type: string, listener: (e: { data: string; lastEventId: string }) => void): void;
  onerror: ((e: unknown) => void) | null;
  onopen: ((e: unknown) => void) | null;
  close(): void;
}
export type EventSourceFactory = (url: string) => EventSourceLike;

/**
 * eventSourceTransport is a "url" transport over an EventSource factory.
 * EventSource does not tell why it failed: a refused stream is reported as
 * status 0, and the live stream learns a permanent refusal from the next
 * stream-token request (403, 404, …).
 */
export function eventSourceTransport(factory: EventSourceFactory): Transport {
  return {
    auth: "url",
    connect(req, on) {
      const es = factory(req.url);
      let done = false;
      const finish = (f: StreamFailure) => {
        if (done) return;
        done = true;
        es.close();
        on.error(f);
      };
      es.onopen = () => !done && on.open();
      for (const t of req.types) {
        es.addEventListener(t, (e) => !done && on.event(t, e.data, e.lastEventId));
      }
      es.onerror = (e) => finish({ status: 0, cause: e });
      return {
        close() {
          done = true;
          es.close();
        },
      };
    },
  };
}

/** browserTransport uses the global EventSource (browsers), with stream tokens in URLs. */
export const browserTransport: Transport = {
  auth: "url",
  connect(req, on) {
    const ES = (globalThis as { EventSource?: new (url: string) => EventSourceLike }).EventSource;
    if (!ES) {
      throw new Error("no global EventSource: in Node import @realsync/sdk (not /browser), or pass a transport");
    }
    return eventSourceTransport((url) => new ES(url)).connect(req, on);
  },
};
