// The Node transport: the eventsource package over fetch, with the identity
// token in an Authorization header (never in the URL) and the resume point
// in Last-Event-ID. It reads a refused stream's status, problem+json and
// Retry-After, so permanent errors carry their problem code; a 200 that is
// not text/event-stream is refused too (permanent, naming its content type).
// It reports the stream's retry: fields, which the eventsource package keeps
// to itself, by reading the body on its way to the package (retryFields).
// It keeps the heartbeat watchdog (StreamRequest.idleTimeoutMs): a
// connection that brings no byte for that long (a half-open connection
// after a network change, a stalled proxy) is closed and reported dropped;
// undici alone would wait 300 s for the next byte.
import { EventSource } from "eventsource";
import { isProblem, retryAfterMs } from "./client.js";
import type { StreamFailure, Transport } from "./transport.js";

/** nodeTransport connects with the eventsource package, sending headers. */
export const nodeTransport: Transport = {
  auth: "header",
  connect(req, on) {
    let refused: StreamFailure | undefined;
    let done = false;
    let watchdog: ReturnType<typeof setTimeout> | undefined;
    const fail = (f: StreamFailure) => {
      if (done) return;
      done = true;
      clearTimeout(watchdog);
      es.close();
      on.error(f);
    };
    const idleMs = req.idleTimeoutMs;
    // alive (re)starts the watch: at the request, then at every chunk of the body.
    const alive = () => {
      if (!idleMs || done) return;
      clearTimeout(watchdog);
      // setTimeout runs a delay past 2^31−1 ms (24.8 days; Infinity too) at once: never ask it for more.
      watchdog = setTimeout(() => fail({ status: 0, cause: new Error(
        `no byte (event or heartbeat) for ${idleMs} ms: the connection is taken for dead`) }), Math.min(idleMs, 2 ** 31 - 1));
    };
    alive();
    const es = new EventSource(req.url, {
      fetch: async (input, init) => {
        const res = await req.fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), ...req.headers } });
        if (res.status !== 200) {
          const body: unknown = await res.clone().json().catch(() => undefined);
          refused = {
            status: res.status,
            problem: isProblem(body) ? body : undefined,
            retryAfterMs: retryAfterMs(res.headers.get("Retry-After")),
          };
        } else {
          // A 200 that is no event stream (a captive portal, a proxy's page):
          // the eventsource package gives up on it, and so does the stream.
          const type = res.headers.get("Content-Type") ?? "";
          if (!type.startsWith("text/event-stream")) { // the eventsource package's own test
            refused = {
              status: 200,
              cause: new Error(`the server answered 200 with ${type ? `content type ${type}` : "no content type"}, ` +
                "not an event stream (text/event-stream)"),
            };
          } else if (res.body) {
            alive();
            let body = res.body.pipeThrough(new TransformStream<Uint8Array, Uint8Array>({
              transform(chunk, out) {
                alive();
                out.enqueue(chunk);
              },
            }));
            if (on.retry) {
              const report = on.retry.bind(on);
              body = body.pipeThrough(retryFields((ms) => !done && report(ms)));
            }
            return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
          }
        }
        return res;
      },
    });
    es.onopen = () => !done && on.open();
    for (const t of req.types) {
      es.addEventListener(t, (e) => !done && on.event(t, e.data, e.lastEventId));
    }
    es.onerror = (e) => fail(refused ?? { status: 0, cause: new Error(e.message ?? "the event stream dropped") });
    return {
      close() {
        done = true;
        clearTimeout(watchdog);
        es.close();
      },
    };
  },
};

/**
 * retryFields passes an event stream's bytes through unchanged and calls
 * report, in the stream's order, with the reconnection time the stream asks
 * for should it end now: the value of each `retry:` field (the line "retry:"
 * then digits only, one space allowed after the colon: the fields
 * EventSource obeys), then 0 at the first `data` line after it, whose event
 * supersedes it. Lines end with CR, LF or CRLF; a line is read only as far
 * as it may be one of these fields.
 */
export function retryFields(report: (ms: number) => void): TransformStream<Uint8Array, Uint8Array> {
  let line = ""; // the start of the current line, while it may be a retry or data field
  let skip = false; // the rest of the current line does not matter
  let pending = false; // a retry: was reported, and no data line came since
  const ended = () => {
    if (skip) return;
    if (line.startsWith("retry:")) {
      const v = line.slice(6).replace(/^ /, "");
      if (/^[0-9]+$/.test(v)) {
        report(Number(v));
        pending = true;
      }
    } else if (line === "data") {
      data();
    }
  };
  const data = () => {
    if (pending) report(0);
    pending = false;
  };
  return new TransformStream({
    transform(chunk, out) {
      out.enqueue(chunk);
      for (let i = 0; i < chunk.length; i++) {
        if (skip) {
          while (i < chunk.length && chunk[i] !== 0x0a && chunk[i] !== 0x0d) i++;
          if (i === chunk.length) return;
        }
        const b = chunk[i];
        if (b === 0x0a || b === 0x0d) {
          ended();
          line = "";
          skip = false;
          continue;
        }
        line += String.fromCharCode(b);
        if (line === "data:") {
          data();
          skip = true;
        } else if (line.length <= 6) {
          skip = !"retry:".startsWith(line) && !"data:".startsWith(line);
        } else {
          skip = !line.startsWith("retry:") || line.length > 6 + 16; // longer than any delay worth reading
        }
      }
    },
  });
}
