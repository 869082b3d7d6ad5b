// A tiny HTTP proxy in front of a realsyncd for the tests: it records every
// request (method, URL, headers) and may answer some itself (intercept), so
// a test can count a client's requests, see where its token travels, and
// make the server seem to refuse.
import http from "node:http";

export interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
}

/** A response the proxy sends instead of forwarding. */
export interface Canned {
  status: number;
  headers?: Record<string, string>;
  /** JSON, or a string sent as it is. */
  body?: unknown;
}

export interface Proxy {
  url: string;
  /** Every request received, in order. */
  seen: Seen[];
  /** Answers a request itself when it returns a response. */
  intercept?: (req: Seen) => Canned | undefined;
  /** drop cuts every connection through the proxy (open streams end). */
  drop(): void;
  stop(): Promise<void>;
}

export async function startProxy(target: string): Promise<Proxy> {
  const to = new URL(target);
  const proxy: Proxy = { url: "", seen: [], drop: () => undefined, stop: async () => undefined };
  const server = http.createServer((req, res) => {
    const seen: Seen = { method: req.method ?? "", url: req.url ?? "", headers: req.headers };
    proxy.seen.push(seen);
    const canned = proxy.intercept?.(seen);
    if (canned) {
      res.writeHead(canned.status, { "Content-Type": "application/problem+json", ...canned.headers });
      res.end(canned.body === undefined ? "" : typeof canned.body === "string" ? canned.body : JSON.stringify(canned.body));
      return;
    }
    const up = http.request({ host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers },
      (ures) => {
        res.writeHead(ures.statusCode ?? 502, ures.headers);
        ures.pipe(res);
      });
    up.on("error", () => res.destroy());
    res.on("close", () => up.destroy());
    req.pipe(up);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  proxy.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  proxy.drop = () => server.closeAllConnections();
  proxy.stop = () => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
  return proxy;
}

/** problem is a problem+json body as the server writes it. */
export function problem(status: number, code: string, detail: string): Canned["body"] {
  return { type: `https://realsync.dev/problems/${code.toLowerCase()}`, title: code, status, code, detail };
}
