// The demo in a browser, rooms: create, join by code or link, ready, start,
// chat, kick, leave, keyboard only, and server restarts. The players, pages
// and checks are test/demo.ts's; the friends, invites, matchmaking and error
// pages are in browser-social.test.ts.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { backoffMaxMs } from "../src/index.js";
import { startServer } from "./server.js";
import { clean, guest, open, out, phone, player, roomOf, row, server, shoot, signIn } from "./demo.js";

describe("the demo in a browser: rooms", () => {
  it("two players: a private room joined by code, ready, start, chat both ways, leave", async () => {
    const alice = await player("alice");
    const bob = await player("bob", phone);
    await shoot(alice, "01-lobby");
    await shoot(bob, "01-lobby");

    // Client-side checks speak plainly, by field, and send nothing.
    const create = alice.page.locator("#create");
    await create.getByLabel("Mode").fill("Battle Royale!");
    await create.getByLabel("Max players").fill("500");
    await create.getByRole("button", { name: "Create room" }).click();
    await alice.page.locator("#create-mode-error").filter({ hasText: "Lowercase letters" }).waitFor();
    await alice.page.locator("#create-maxPlayers-error").filter({ hasText: "between 1 and 100" }).waitFor();
    assert.doesNotMatch(await create.textContent() ?? "", /\^|\{0,31\}/, "no regex shown to the player");
    await shoot(alice, "02-create-errors");

    await create.getByLabel("Room name").fill("Alice's secret room");
    await create.getByLabel("Mode").fill("battle");
    await create.getByLabel("Max players").fill("4");
    await create.getByLabel("Private: invite code only").check();
    await create.getByRole("button", { name: "Create room" }).click();
    await alice.page.waitForURL(/room\.html\?id=/);
    await row(alice, "alice").filter({ hasText: "owner" }).waitFor();
    const code = (await alice.page.locator("#invite-value").textContent()) ?? "";
    assert.match(code, /^[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}$/, "a member of a private room sees its invite code");
    assert.equal(await alice.page.locator("#invite-label").textContent(), "Invite code");
    assert.ok(await alice.page.locator("#start").isDisabled(), "no start alone");
    await alice.page.getByRole("button", { name: "Copy invite code" }).click();
    await alice.page.locator("#copy").filter({ hasText: "Copied!" }).waitFor();
    assert.equal(await alice.page.evaluate(() => navigator.clipboard.readText()), code);
    await shoot(alice, "03-created");

    // The code, typed in lower case: codes are case-insensitive.
    const join = bob.page.locator("#code");
    await join.getByLabel("Invite code").fill(code.toLowerCase());
    await join.getByRole("button", { name: "Join" }).click();
    await bob.page.waitForURL(/room\.html\?id=/);
    assert.equal(roomOf(bob), roomOf(alice));
    await row(bob, "alice").waitFor();
    await row(alice, "bob").locator(".dot.on").waitFor(); // bob has the room open
    assert.equal(await bob.page.locator("#start").isVisible(), false, "only the owner starts");
    assert.equal(await row(bob, "alice").getByRole("button", { name: /Kick/ }).count(), 0, "only the owner kicks");
    assert.equal(await row(alice, "bob").getByRole("button", { name: "Kick bob" }).count(), 1);
    await shoot(bob, "04-joined");

    // Ready: each player writes its own player_<id>_ready key.
    await alice.page.getByRole("button", { name: "I'm ready" }).click();
    await row(bob, "alice").locator(".chip.ready").waitFor();
    assert.ok(await alice.page.locator("#start").isDisabled(), "bob is not ready yet");
    await bob.page.getByRole("button", { name: "I'm ready" }).click();
    await bob.page.locator("#ready[aria-pressed=true]").waitFor();
    await row(alice, "bob").locator(".chip.ready").waitFor();
    await alice.page.locator("#start:enabled").waitFor();
    await bob.page.locator("#state tr").filter({ hasText: "player_2_ready" }).waitFor();
    await alice.page.screenshot({ path: `${out}guide-room-ready.png` });
    await shoot(alice, "05-ready");
    await shoot(bob, "05-ready");

    await alice.page.getByRole("button", { name: "Start game" }).click();
    await bob.page.locator("#banner").filter({ hasText: "Game on!" }).waitFor();
    await bob.page.locator("#room-meta .chip.playing").waitFor();
    await alice.page.getByRole("button", { name: "Back to the waiting room" }).waitFor();
    await shoot(bob, "06-started");

    await alice.page.locator("#say").getByRole("textbox").fill("gl hf");
    await alice.page.locator("#say").getByRole("button", { name: "Send" }).click();
    await bob.page.locator("#chat li").filter({ hasText: "alice: gl hf" }).waitFor();
    await bob.page.locator("#say").getByRole("textbox").fill("you too!");
    await bob.page.locator("#say").getByRole("button", { name: "Send" }).click();
    await alice.page.locator("#chat li").filter({ hasText: "bob: you too!" }).waitFor();
    await bob.page.locator("#chat li").filter({ hasText: "you: you too!" }).waitFor();

    // Bob writes his own key; alice sees it.
    await bob.page.locator("#patch").getByLabel("Key").fill("player_2_score");
    await bob.page.locator("#patch").getByLabel("Value").fill("7");
    await bob.page.locator("#patch").getByRole("button", { name: "Set" }).click();
    await alice.page.locator("#state tr").filter({ hasText: "player_2_score" }).filter({ hasText: "7" }).waitFor();
    await bob.page.evaluate(() => scrollTo(0, 0));
    await bob.page.screenshot({ path: `${out}guide-phone.png` });
    await shoot(alice, "07-chat");
    await shoot(bob, "07-chat");

    await bob.page.getByRole("button", { name: "Leave room" }).click();
    await bob.page.waitForURL(/\/demo\/$/);
    await row(alice, "bob").waitFor({ state: "detached" });
    await alice.page.locator("#start-hint, #banner").first().waitFor();
    await shoot(bob, "08-left");
    await shoot(alice, "08-left");
    clean(alice, bob);
  });

  it("a shared room link shows a non-member the room and Join; the live lobby follows; the owner kicks", async () => {
    const dana = await player("dana");
    const frank = await player("frank"); // watches the live lobby
    const filler = await guest("gwen");
    await filler.createRoom({ name: "Friday Night Race", mode: "race", region: "us-east", maxPlayers: 6 });
    await filler.createRoom({ name: "Coop Dungeon", mode: "coop", region: "eu", maxPlayers: 3 });

    await dana.page.locator("#create").getByLabel("Room name").fill("Open Arena");
    await dana.page.locator("#create").getByRole("button", { name: "Create room" }).click();
    await dana.page.waitForURL(/room\.html\?id=/);
    const link = dana.page.url();
    await dana.page.locator("#invite-label").filter({ hasText: "Room link" }).waitFor();
    assert.equal(await dana.page.locator("#invite-value").textContent(), link, "a public room's link is shown to share");

    const card = frank.page.locator(".card").filter({ hasText: "Open Arena" });
    await card.filter({ hasText: "1 / 4 players" }).waitFor(); // arrived through the live lobby, no reload
    await frank.page.locator(".card").filter({ hasText: "Coop Dungeon" }).waitFor();
    await frank.page.screenshot({ path: `${out}guide-lobby.png` });
    await shoot(frank, "11-lobby");

    // Filters: another mode hides the room; only-joinable off shows playing rooms too.
    await frank.page.locator("#filter").getByLabel("Mode").fill("coop");
    await frank.page.locator("#filter").getByLabel("Mode").press("Enter");
    await card.waitFor({ state: "detached" });
    await frank.page.locator(".card").filter({ hasText: "Coop Dungeon" }).waitFor();
    await frank.page.locator("#filter").getByLabel("Mode").fill("");
    await frank.page.locator("#filter").getByLabel("Mode").press("Enter");
    await card.waitFor();

    // A shared link opened by a new player: the name form, then the room and Join (no stream, no 403).
    const erin = await open("erin", link, phone);
    await erin.page.getByRole("heading", { name: "You're invited!" }).waitFor();
    await signIn(erin, "Continue");
    await erin.page.locator("#visitor-title").filter({ hasText: "Open Arena" }).waitFor();
    await erin.page.locator("#visitor-players li").filter({ hasText: "dana" }).waitFor();
    await shoot(erin, "12-shared-link");
    await erin.page.getByRole("button", { name: "Join this room" }).click();
    await row(erin, "erin").filter({ hasText: "you" }).waitFor();
    await row(dana, "erin").waitFor();
    await card.filter({ hasText: "2 / 4 players" }).waitFor(); // the live lobby follows
    await shoot(erin, "13-joined");

    // The room starts: the lobby (only joinable) drops it; with only-joinable off it shows as playing.
    await dana.page.getByRole("button", { name: "I'm ready" }).click();
    await erin.page.getByRole("button", { name: "I'm ready" }).click();
    await dana.page.getByRole("button", { name: "Start game" }).click();
    await card.waitFor({ state: "detached" });
    await frank.page.locator("#filter").getByLabel("Only joinable").uncheck();
    await card.filter({ hasText: "playing" }).waitFor();
    assert.ok(await card.getByRole("button", { name: "Join Open Arena" }).isDisabled(), "a playing room is not joinable");
    await shoot(frank, "14-lobby-all");

    await row(dana, "erin").getByRole("button", { name: "Kick erin" }).click();
    await erin.page.getByRole("heading", { name: "You were removed from the room" }).waitFor();
    await row(dana, "erin").waitFor({ state: "detached" });
    await shoot(erin, "15-kicked");

    // Quick join: the only battle room in eu is playing, so a new one is made.
    await erin.page.getByRole("link", { name: "Back to the lobby" }).click();
    const quick = erin.page.locator("#quick");
    await quick.getByLabel("Mode").fill("battle");
    await quick.getByLabel("Region").fill("eu");
    await quick.getByRole("button", { name: "Quick join" }).click();
    await erin.page.locator("#room-title").filter({ hasText: "battle match" }).waitFor();
    await row(erin, "erin").filter({ hasText: "owner" }).waitFor();
    await shoot(erin, "16-quick-join");
    clean(dana, frank, erin);
  });

  it("the owner leaves: the next player owns the room, and both pages follow (Start, Kick, the state note)", async () => {
    const olga = await guest("olga");
    const made = await olga.createRoom({ name: "Handover", mode: "battle", region: "eu", maxPlayers: 4 });
    const link = `${server.url}/demo/room.html?id=${made.room.id}`;
    const [pia, quin] = [await open("pia", link, phone), await open("quin", link)];
    for (const p of [pia, quin]) {
      await signIn(p, "Continue");
      await p.page.getByRole("button", { name: "Join this room" }).click();
      await row(p, p.name).filter({ hasText: "you" }).waitFor();
    }
    await row(pia, "quin").waitFor();
    assert.equal(await row(pia, "quin").getByRole("button", { name: "Kick quin" }).count(), 0, "pia does not own it yet");

    await olga.leaveRoom(made.room.id);
    await row(pia, "olga").waitFor({ state: "detached" });
    await row(pia, "pia").filter({ hasText: "owner" }).waitFor(); // the first to join after olga
    await row(pia, "quin").getByRole("button", { name: "Kick quin" }).waitFor();
    assert.ok(await pia.page.locator("#start").isVisible(), "the new owner has Start");
    await pia.page.locator("#state-note").filter({ hasText: "You may set any key." }).waitFor();
    await row(quin, "pia").filter({ hasText: "owner" }).waitFor();
    assert.equal(await quin.page.locator("#start").isVisible(), false, "quin does not own it");
    assert.equal(await row(quin, "pia").getByRole("button", { name: /Kick/ }).count(), 0, "quin kicks nobody");
    await shoot(pia, "25-owner-left");
    clean(pia, quin);
  });

  it("keyboard only: name, create, ready, chat and leave with Tab and Enter", async () => {
    const kai = await open("kai", `${server.url}/demo/`, phone);
    const k = kai.page.keyboard;
    /** tabTo presses Tab until the element of selector has the focus (at most 40 times). */
    const tabTo = async (selector: string) => {
      for (let i = 0; i < 40; i++) {
        if (await kai.page.evaluate((sel) => document.activeElement === document.querySelector(sel), selector)) return;
        await k.press("Tab");
      }
      assert.fail(`Tab never reached ${selector}`);
    };
    await tabTo("#name-form input");
    await k.type("kai");
    await k.press("Enter");
    await kai.page.locator(".who").filter({ hasText: "kai" }).waitFor();
    await tabTo("#create button");
    await k.press("Enter"); // the form's defaults: kai's room, battle, eu, 4
    await kai.page.waitForURL(/room\.html\?id=/);
    await row(kai, "kai").waitFor();
    await tabTo("#ready");
    await k.press("Enter");
    await kai.page.locator("#ready[aria-pressed=true]").waitFor();
    await tabTo("#say input");
    await k.type("typed, not clicked");
    await k.press("Enter");
    await kai.page.locator("#chat li").filter({ hasText: "you: typed, not clicked" }).waitFor();
    await shoot(kai, "26-keyboard");
    await tabTo("#leave");
    await k.press("Enter");
    await kai.page.waitForURL(/\/demo\/$/);
    clean(kai);
  });

  // restarting says whether a page's console error is what a server
  // restart shows: connections refused while it is down, and the 503
  // STORE_UNAVAILABLE an instance answers a stream token request with once
  // it listens but has not yet connected to its store (the page retries).
  const restarting = (m: string) =>
    /Failed to load resource: net::ERR_CONNECTION_REFUSED/.test(m) ||
    /Failed to load resource: the server responded with a status of 503 .*\/v1\/(me|rooms\/[^/]+)\/stream-token\)/.test(m);

  it("a server restart: the badge says reconnecting, then a room that is gone ends the page's stream", async () => {
    let flaky = await startServer();
    try {
      const kim = await player("kim", phone, flaky.url);
      await kim.page.locator("#create").getByRole("button", { name: "Create room" }).click();
      await row(kim, "kim").waitFor();
      await kim.page.locator("#badge[data-state=live]").waitFor();

      const addr = new URL(flaky.url).host;
      await flaky.stop();
      await kim.page.locator("#badge[data-state=reconnecting]").waitFor();
      await shoot(kim, "31-reconnecting");
      // The same address, an empty embedded store: the room is gone.
      flaky = await startServer({ REALSYNC_ADDR: addr });
      // The page's next attempt comes after the SDK's backoff, which grows
      // with the attempts made while the server was down (full jitter, up
      // to backoffMaxMs): under load the restart took long enough for a
      // wait past the default 10 s (CI, once in 19 runs).
      await kim.page.getByRole("heading", { name: "This room is gone" }).waitFor({ timeout: backoffMaxMs() + 5000 });
      await shoot(kim, "32-gone");

      // The room's stream stays ended: no more stream tokens asked for it
      // (the SDK reopens after 2 s when it retries). The player's personal
      // stream reconnects to the new server, as it should.
      const asked: string[] = [];
      kim.page.on("request", (r) => { if (/\/v1\/rooms\/[^/]+\/stream-token/.test(r.url())) asked.push(r.url()); });
      await new Promise((r) => setTimeout(r, 3000));
      assert.deepEqual(asked, [], "the page asked for the room's stream tokens after the room was gone");
      const unexpected = kim.problems.filter((m) => !restarting(m) &&
        !/Failed to load resource: the server responded with a status of 404 .*\/v1\/rooms\/[^/]+\/(stream-token|events)/.test(m));
      assert.deepEqual(unexpected, []);
      assert.ok(kim.problems.some((m) => /status of 404 .*\/stream-token/.test(m)), "the room's stream token was refused");
    } finally {
      await flaky.stop();
    }
  });

  it("a restart with a new secret (a dev server without REALSYNC_JWT_SECRET): the room page says so once, no loop", async () => {
    let flaky = await startServer();
    try {
      const lou = await player("lou", phone, flaky.url);
      await lou.page.locator("#create").getByRole("button", { name: "Create room" }).click();
      await row(lou, "lou").waitFor();
      await lou.page.locator("#badge[data-state=live]").waitFor();
      const addr = new URL(flaky.url).host;
      await flaky.stop();
      await lou.page.locator("#badge[data-state=reconnecting]").waitFor();
      flaky = await startServer({ REALSYNC_ADDR: addr, REALSYNC_JWT_SECRET: "a-new-secret" });
      // after the SDK's backoff, as in the test above
      await lou.page.getByRole("heading", { name: "Live updates stopped" }).waitFor({ timeout: backoffMaxMs() + 5000 });
      const said = (await lou.page.locator("#ended-text").textContent()) ?? "";
      assert.equal(said, "Your session has ended (it expired, or the server restarted). Reload the page to play again.");
      await shoot(lou, "33-new-secret");
      const asked: string[] = [];
      lou.page.on("request", (r) => { if (r.url().includes("/stream-token")) asked.push(r.url()); });
      await new Promise((r) => setTimeout(r, 3000));
      assert.deepEqual(asked, [], "the page asked for stream tokens after its token was refused");
      // Reloading asks for a name again (a new guest on this server).
      await lou.page.goto(`${flaky.url}/demo/`);
      await lou.page.getByRole("heading", { name: "Welcome!" }).waitFor();
      const unexpected = lou.problems.filter((m) => !restarting(m) &&
        !/Failed to load resource: the server responded with a status of 401 /.test(m));
      assert.deepEqual(unexpected, []);
    } finally {
      await flaky.stop();
    }
  });
});
