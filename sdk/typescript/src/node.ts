// The Node transport: the eventsource package over fetch, with the identity
// token in an Authorization header (never in the URL) and the resume point
// in Last-Event-ID. It reads a refused stream's status, problem+json and
// Retry-After, so permanent errors carry their problem code; a 200 that is
// not text/event-stream is refused too (permanent, naming its content type).
import { EventSource } from "eventsource";
import { isProblem, retryAfterMs } from "./client.js";
import type { StreamFailure, Transport } from "./transport.js";

/** nodeTransport connects with the eventsource package, sending headers. */
export const nodeTransport: Transport = {
  auth: "header",
  connect(req, on) {
    let refused: StreamFailure | undefined;
    let done = false;
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
          }
        }
        return res;
      },
    });
    es.onopen = () => !done && on.open();
    for (const t of req.types) {
      es.addEventListener(t, (e) => !done && on.event(t, e.data, e.lastEventId));
    }
    es.onerror = (e) => {
      if (done) return;
      done = true;
      es.close();
      on.error(refused ?? { status: 0, cause: new Error(e.message ?? "the event stream dropped") });
    };
    return {
      close() {
        done = true;
        es.close();
      },
    };
  },
};
