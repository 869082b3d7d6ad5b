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
 * the resume point as Last-Event-ID; "url" — a stream token (for one
 * stream, which it opens once within 60 s: a new one for each connection)
 * as ?token=, the resume point as ?lastEventId= (EventSource cannot set
 * headers). A transport never reconnects by itself: on any drop it
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
 * CONNECTING), the transport asks the same URL once more with fetch (a
 * refused opening does not use its stream token) to read the refusal: its status, problem+json and Retry-After, so that a
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
            if (done) {
              // closed meanwhile: a fetch that ignored its signal left it open
              void r.body?.cancel().catch(() => undefined);
              return;
            }
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
 * answer (or signal aborted it), or the stream came without a body.
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
      if (type.startsWith("text/event-stream")) {
        if (!res.body) return undefined; // a stream that ended before it began: dropped
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
 * readEvents reads an event stream's answer as EventSource does (WHATWG
 * HTML, "event stream interpretation": lines end with CR, LF or CRLF; the
 * event's type, data lines and id, the id kept from event to event and
 * reset by an empty one, one holding NUL ignored; an event dispatched at
 * its blank line, one without data not at all, nor one the answer ends
 * in; comments and retry fields skipped), reporting each event of types,
 * until the answer ends, signal aborts it or event throws; returns why it
 * ended. The answer's body is cancelled however it ends: its connection is
 * not left open (the server would keep counting the stream).
 */
async function readEvents(res: Response, types: string[], signal: AbortSignal, event: (type: string, data: string, id: string) => void): Promise<unknown> {
  const reader = res.body!.getReader();
  const stop = () => void reader.cancel().catch(() => undefined);
  signal.addEventListener("abort", stop, { once: true });
  if (signal.aborted) stop(); // closed before this began (from on.open)
  const text = new TextDecoder(); // UTF-8, a leading BOM skipped, characters split across chunks joined
  let line = ""; // the start of the current line
  let cr = false; // the last line ended with a CR: an LF that follows it is part of that line end
  let id = "";
  let type = "";
  let data: string[] = [];
  const field = (ln: string) => {
    if (ln === "") {
      const t = type || "message";
      if (data.length > 0 && types.includes(t)) event(t, data.join("\n"), id);
      type = "";
      data = [];
      return;
    }
    const colon = ln.indexOf(":");
    if (colon === 0) return; // a comment (heartbeat)
    const name = colon < 0 ? ln : ln.slice(0, colon);
    let v = colon < 0 ? "" : ln.slice(colon + 1);
    if (v.startsWith(" ")) v = v.slice(1);
    if (name === "event") type = v;
    else if (name === "data") data.push(v);
    else if (name === "id" && !v.includes("\0")) id = v;
  };
  const ends = /[\r\n]/g;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return new Error("the stream ended");
      const s = text.decode(value, { stream: true });
      if (s === "") continue;
      let i = cr && s[0] === "\n" ? 1 : 0; // a CRLF split by the read
      cr = false;
      for (;;) {
        ends.lastIndex = i;
        const m = ends.exec(s);
        if (!m) {
          line += s.slice(i);
          break;
        }
        const j = m.index;
        const l = line + s.slice(i, j);
        line = "";
        i = j + 1;
        if (s[j] === "\r") {
          if (i === s.length) cr = true;
          else if (s[i] === "\n") i++;
        }
        field(l);
      }
    }
  } catch (err) {
    return err;
  } finally {
    signal.removeEventListener("abort", stop);
    stop(); // a no-op once it ended by itself
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
