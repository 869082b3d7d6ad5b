// How a live stream connects: one connection at a time, opened by the
// live clients (live.ts), which decide on every reconnect themselves.
import { isProblem, retryAfterMs, type Problem } from "./client.js";

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
 * EventSource does not tell why it failed. When it failed the connection
 * before it opened (readyState CLOSED: the server answered with a status
 * other than 200, or not with an event stream; a network error leaves it
 * CONNECTING), the transport asks the same URL once more with fetch (the
 * stream token opens its stream any number of times within its minute) to
 * read the refusal: its status, problem+json and Retry-After, so that a
 * 409 SESSION_EXISTS or a 429 STREAM_LIMIT is reported as such, and waited
 * for as the server asks. Should that answer be the stream itself (the
 * refusal passed meanwhile), it is the connection from then on, read as
 * EventSource would (readEvents): what the server wrote to it counts as
 * delivered (a personal stream's waiting messages), so it must not be
 * dropped. One that fails or takes longer than refusalTimeoutMs to answer
 * is reported as a dropped connection (status 0).
 */
export function eventSourceTransport(factory: EventSourceFactory): Transport {
  return {
    auth: "url",
    connect(req, on) {
      const es = factory(req.url);
      let done = false;
      let opened = false;
      let asking: AbortController | undefined;
      const finish = (f: StreamFailure) => {
        if (done) return;
        done = true;
        es.close();
        on.error(f);
      };
      es.onopen = () => {
        if (done) return;
        opened = true;
        on.open();
      };
      for (const t of req.types) {
        es.addEventListener(t, (e) => !done && on.event(t, e.data, e.lastEventId));
      }
      es.onerror = (e) => {
        if (done || asking) return;
        if (opened || es.readyState !== eventSourceClosed) {
          finish({ status: 0, cause: e });
          return;
        }
        es.close(); // refused: it would not reconnect by itself anyway
        asking = new AbortController();
        const signal = asking.signal;
        void refusal(req, signal).then(async (r) => {
          if (r instanceof Response) {
            // the stream opened this time: read it until it ends
            if (done) return;
            opened = true;
            on.open();
            const cause = await readEvents(r, req.types, signal, (t, data, id) => !done && on.event(t, data, id));
            finish({ status: 0, cause });
            return;
          }
          finish(r ?? { status: 0, cause: e });
        });
      };
      return {
        close() {
          done = true;
          asking?.abort();
          es.close();
        },
      };
    },
  };
}

/** eventSourceClosed is EventSource.CLOSED: the readyState of a connection the browser failed and will not retry. */
const eventSourceClosed = 2;

/** refusalTimeoutMs bounds the request that reads why a stream was refused (see eventSourceTransport). */
const refusalTimeoutMs = 10000;

/**
 * refusal requests a stream's URL that EventSource was refused, and returns
 * the refusal: status, problem and Retry-After of an answer that is not
 * 200; status 200 for a 200 that is not an event stream (a captive portal,
 * a proxy's page: permanent, as the Node transport reports it); the answer
 * itself when it is the stream (it opened this time; signal ends it);
 * undefined when the request failed or took over refusalTimeoutMs to
 * answer (or signal aborted it).
 */
async function refusal(req: StreamRequest, signal: AbortSignal): Promise<StreamFailure | Response | undefined> {
  const ctl = new AbortController();
  const stop = () => ctl.abort();
  signal.addEventListener("abort", stop, { once: true });
  const timer = setTimeout(stop, refusalTimeoutMs);
  let stream = false;
  try {
    const f = req.fetch; // called as req's method, a browser's fetch throws (Illegal invocation)
    const res = await f(req.url, { headers: { Accept: "text/event-stream" }, cache: "no-store", signal: ctl.signal });
    clearTimeout(timer);
    if (res.status === 200) {
      const type = res.headers.get("Content-Type") ?? "";
      if (type.startsWith("text/event-stream") && res.body) {
        stream = true; // signal's abort ends it
        return res;
      }
      ctl.abort(); // a page came: not kept
      return {
        status: 200,
        cause: new Error(`the server answered 200 with ${type ? `content type ${type}` : "no content type"}, ` +
          "not an event stream (text/event-stream)"),
      };
    }
    const body: unknown = await res.json().catch(() => undefined);
    return { status: res.status, problem: isProblem(body) ? body : undefined, retryAfterMs: retryAfterMs(res.headers.get("Retry-After")) };
  } catch {
    return undefined;
  } finally {
    clearTimeout(timer);
    if (!stream) signal.removeEventListener("abort", stop);
  }
}

/**
 * readEvents reads an event stream's answer as EventSource does (the
 * event's type, data lines and id, the id kept from event to event;
 * comments and retry fields skipped), reporting each event of types, until
 * the answer ends or signal aborts it; returns why it ended.
 */
async function readEvents(res: Response, types: string[], signal: AbortSignal, event: (type: string, data: string, id: string) => void): Promise<unknown> {
  const reader = res.body!.getReader();
  const stop = () => void reader.cancel().catch(() => undefined);
  signal.addEventListener("abort", stop, { once: true });
  const text = new TextDecoder();
  let buf = "";
  let id = "";
  let type = "";
  let data: string[] = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return new Error("the stream ended");
      buf += text.decode(value, { stream: true });
      for (let nl = buf.search(/\r\n|[\r\n]/); nl >= 0; nl = buf.search(/\r\n|[\r\n]/)) {
        if (buf[nl] === "\r" && nl + 1 === buf.length) break; // a \r\n split by the read
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + (buf.startsWith("\r\n", nl) ? 2 : 1));
        if (line === "") {
          const t = type || "message";
          if (data.length > 0 && types.includes(t)) event(t, data.join("\n"), id);
          type = "";
          data = [];
          continue;
        }
        const colon = line.indexOf(":");
        if (colon === 0) continue; // a comment (heartbeat)
        const field = colon < 0 ? line : line.slice(0, colon);
        let v = colon < 0 ? "" : line.slice(colon + 1);
        if (v.startsWith(" ")) v = v.slice(1);
        if (field === "event") type = v;
        else if (field === "data") data.push(v);
        else if (field === "id" && !v.includes("\0")) id = v;
      }
    }
  } catch (err) {
    return err;
  } finally {
    signal.removeEventListener("abort", stop);
  }
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
