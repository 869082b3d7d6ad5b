import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { RealSync } from "../src/index.js";
import { eventually, startServer, type Server } from "./server.js";

let server: Server;
before(async () => (server = await startServer()));
after(async () => server.stop());

async function player(name: string): Promise<{ c: RealSync; userId: string }> {
  const c = new RealSync({ baseUrl: server.url });
  const g = await c.guest(name);
  return { c, userId: g.userId };
}

describe("personal stream", () => {
  it("a follower sees the followed user come online and go offline, with its platforms", async () => {
    const alice = await player("alice");
    const bob = await player("bob");
    assert.deepEqual(await alice.c.setFollowing([bob.userId, bob.userId]), [bob.userId]);
    const a = alice.c.me("web");
    try {
      await a.ready;
      assert.ok(a.session);
      await eventually(() => a.presence.get(bob.userId)?.online === false, "bob offline");
      const b = bob.c.me("pc");
      await b.ready;
      await eventually(() => a.presence.get(bob.userId)?.online === true, "bob online");
      assert.deepEqual(a.presence.get(bob.userId)?.platforms, ["pc"]);
      const [p] = await alice.c.getPresence([bob.userId]);
      assert.equal(p?.online, true);
      assert.deepEqual(p?.platforms, ["pc"]);
      b.close();
      await eventually(() => a.presence.get(bob.userId)?.online === false, "bob offline again");
    } finally {
      a.close();
    }
  });

  it("a second session on the same platform replaces the first, which ends as left", async () => {
    const carol = await player("carol");
    const first = carol.c.me("mobile");
    await first.ready;
    const ended = new Promise((resolve) => first.on("closed", resolve));
    const second = carol.c.me("mobile");
    try {
      await second.ready;
      assert.deepEqual(await ended, { reason: "left" });
      assert.equal(second.closed, false);
    } finally {
      second.close();
    }
  });

  it("a bad platform is a permanent error: ready rejects with INVALID_PLATFORM", async () => {
    const dave = await player("dave");
    const s = dave.c.me("tv" as "pc");
    await assert.rejects(s.ready, (e: { code?: string }) => e.code === "INVALID_PLATFORM");
    assert.equal(s.closed, true);
  });
});
