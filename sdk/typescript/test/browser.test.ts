// The demo played in headless Chromium against a real realsyncd, each player
// in its own browser context (its own guest). Every page fails the test on
// any console error or warning and any page error, and at every step it must
// fit 390 px without horizontal scroll. Screenshots of every step, at 390 px
// and at desktop width, go to test-output/ (gitignored), with a few clean
// ones for the guide (test-output/guide-*.png).
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import type { Browser, Page } from "playwright-core";
import { RealSync, backoffMaxMs } from "../src/index.js";
import { launchChromium, startServer, type Server } from "./server.js";

let server: Server;
let browser: Browser;
const out = new URL("../../test-output/", import.meta.url).pathname;
const phone = { width: 390, height: 844 };
const desktop = { width: 1280, height: 860 };

before(async () => {
  server = await startServer();
  browser = await launchChromium();
  mkdirSync(out, { recursive: true });
});
after(async () => {
  await browser?.close();
  await server?.stop();
});

/** A player: its page, and every console error or warning and page error it logged. */
interface Player {
  name: string;
  page: Page;
  problems: string[];
}

/** open starts a player in a fresh browser context (its own guest) at url, without naming it yet. */
async function open(name: string, url: string, viewport = desktop): Promise<Player> {
  const context = await browser.newContext({ viewport });
  await context.grantPermissions(["clipboard-read", "clipboard-write"]);
  const page = await context.newPage();
  page.setDefaultTimeout(10000);
  const p: Player = { name, page, problems: [] };
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warning") p.problems.push(`console ${m.type()}: ${m.text()} (${m.location().url})`);
  });
  page.on("pageerror", (e) => p.problems.push(`page error: ${e.message}`));
  page.on("dialog", (d) => {
    p.problems.push(`dialog: ${d.message()}`); // the demo asks in the page, never with a dialog
    void d.dismiss();
  });
  await page.goto(url);
  return p;
}

/** signIn enters the player's name in the page's name form. */
async function signIn(p: Player, button = "Play"): Promise<void> {
  await p.page.getByLabel("Your name").fill(p.name);
  await p.page.getByRole("button", { name: button }).click();
  await p.page.locator(".who").filter({ hasText: p.name }).waitFor();
}

/** player opens the lobby as a new player called name. */
async function player(name: string, viewport = desktop, base = server.url): Promise<Player> {
  const p = await open(name, `${base}/demo/`, viewport);
  await signIn(p);
  return p;
}

/**
 * shoot checks the page fits 390 px (no horizontal scroll) and that its
 * pattern attributes compile under the v flag (as browsers compile them),
 * and saves screenshots of step at 390 px and at desktop width.
 */
async function shoot(p: Player, step: string): Promise<void> {
  const viewport = p.page.viewportSize() ?? desktop;
  await p.page.setViewportSize(phone);
  const width = await p.page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= phone.width, `${p.name} at ${step}: the page is ${width} px wide at 390 px`);
  await p.page.screenshot({ path: `${out}${step}-${p.name}-390.png`, fullPage: true });
  await p.page.setViewportSize(desktop);
  await p.page.screenshot({ path: `${out}${step}-${p.name}-desktop.png`, fullPage: true });
  await p.page.setViewportSize(viewport);
  const bad = await p.page.evaluate(() => Array.from(document.querySelectorAll<HTMLInputElement>("[pattern]")).flatMap((i) => {
    try {
      new RegExp(`^(?:${i.pattern})$`, "v");
      return [];
    } catch (e) {
      return [`${i.name}: ${i.pattern}: ${(e as Error).message}`];
    }
  }));
  assert.deepEqual(bad, [], `${p.name} at ${step}: invalid pattern attributes`);
}

/** clean asserts the players logged no console error or warning and no page error. */
function clean(...players: Player[]): void {
  for (const p of players) assert.deepEqual(p.problems, [], `${p.name} logged problems`);
}

/** roomOf is the id in a room page's URL. */
function roomOf(p: Player): string {
  return new URL(p.page.url()).searchParams.get("id") ?? "";
}

/** guest is a Node client signed in as a new guest (to fill the lobby). */
async function guest(name: string, base = server.url): Promise<RealSync> {
  const c = new RealSync({ baseUrl: base });
  await c.guest(name);
  return c;
}

const row = (p: Player, name: string) => p.page.locator("#players li").filter({ hasText: name });

describe("the demo in a browser", () => {
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
      await lou.page.getByRole("heading", { name: "Live updates stopped" }).waitFor();
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

  it("friends: follow by friend code, see a friend come online on the web and go offline, kept across a reload", async () => {
    const kim = await player("kim");
    const lee = await player("lee", phone);
    const leeCode = (await lee.page.locator("#my-code").textContent()) ?? "";
    assert.match(leeCode, /^g_[0-9a-f]{24}$/, "the friend code is the player's user id");
    await lee.page.getByRole("button", { name: "Copy" }).click();
    assert.equal(await lee.page.evaluate(() => navigator.clipboard.readText()), leeCode);

    const follow = kim.page.locator("#follow");
    await follow.getByLabel("Friend code").fill((await kim.page.locator("#my-code").textContent()) ?? "");
    await follow.getByRole("button", { name: "Follow" }).click();
    await follow.locator(".form-error").filter({ hasText: "your own code" }).waitFor();

    await follow.getByLabel("Friend code").fill(leeCode);
    await follow.getByLabel("Name").fill("Lee");
    await follow.getByRole("button", { name: "Follow" }).click();
    const friend = kim.page.locator(`#friends li[data-user="${leeCode}"]`);
    await friend.filter({ hasText: "Lee" }).filter({ hasText: "online · web" }).locator(".dot.on").waitFor();
    // the form is reset when the PUT answers, which may come after the
    // friend's status reached the list (the personal stream): wait for it
    const code = follow.getByLabel("Friend code");
    for (const until = Date.now() + 10000; (await code.inputValue()) !== "" && Date.now() < until;) {
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(await code.inputValue(), "", "the form is cleared once followed");
    await shoot(kim, "30-friends");

    // A reload keeps the list; lee is still online.
    await kim.page.reload();
    await friend.filter({ hasText: "online · web" }).waitFor();

    // Lee closes the demo: kim sees lee go offline, live.
    clean(lee);
    await lee.page.context().close();
    await friend.filter({ hasText: "offline" }).waitFor();
    assert.equal(await friend.locator(".dot.on").count(), 0);

    await friend.getByRole("button", { name: "Unfollow Lee" }).click();
    await friend.waitFor({ state: "detached" });
    await kim.page.locator("#no-friends").waitFor();
    clean(kim);
  });

  it("invites: a member invites a friend by code from a private room; the friend, in another browser's lobby, joins from the invite", async () => {
    const moe = await player("moe");
    const ned = await player("ned", phone);
    const nedCode = (await ned.page.locator("#my-code").textContent()) ?? "";
    const create = moe.page.locator("#create");
    await create.getByLabel("Room name").fill("Moe's den");
    await create.getByLabel("Private: invite code only").check();
    await create.getByRole("button", { name: "Create room" }).click();
    await moe.page.waitForURL(/room\.html\?id=/);
    await row(moe, "moe").waitFor();
    const roomId = new URL(moe.page.url()).searchParams.get("id") ?? "";

    const form = moe.page.locator("#invite-friend");
    await form.getByLabel("Invite by friend code").fill(nedCode);
    await form.getByRole("button", { name: "Invite" }).click();
    await moe.page.locator("#invite-sent").filter({ hasText: `Invite sent to ${nedCode}.` }).waitFor();

    const invite = ned.page.locator(`#invites li[data-room="${roomId}"]`);
    await invite.filter({ hasText: "moe invites you to Moe's den" }).waitFor();
    await shoot(ned, "34-invite");
    await invite.getByRole("button", { name: "Join Moe's den" }).click();
    await ned.page.waitForURL(new RegExp(`room\\.html\\?id=${roomId}`));
    await row(ned, "ned").waitFor();
    await row(moe, "ned").waitFor();
    assert.deepEqual(moe.problems, []);
    assert.deepEqual(ned.problems, []);
    clean(moe, ned);
  });

  it("find match: two players of close ratings queue from two browsers, see the wait, and land in one room", async () => {
    const ola = await player("ola");
    const pia = await player("pia", phone);
    const mode = `duel${Date.now() % 100000}`;
    for (const [p, rating] of [[ola, "1500"], [pia, "1560"]] as const) {
      const form = p.page.locator("#match");
      await form.getByLabel("Mode").fill(mode);
      await form.getByLabel("Rating").fill(rating);
    }
    await ola.page.locator("#match").getByRole("button", { name: "Find match" }).click();
    await ola.page.locator("#match-status").filter({ hasText: /Searching… \d+ s, rating window ±\d+/ }).waitFor();
    await shoot(ola, "35-searching");
    // Cancel, then queue again: a cancelled ticket is no match.
    await ola.page.getByRole("button", { name: "Cancel" }).click();
    await ola.page.locator("#match-status").filter({ hasText: "Search cancelled." }).waitFor();
    await ola.page.locator("#match").getByRole("button", { name: "Find match" }).click();
    await pia.page.locator("#match").getByRole("button", { name: "Find match" }).click();
    await ola.page.waitForURL(/room\.html\?id=/, { timeout: 20000 });
    await pia.page.waitForURL(/room\.html\?id=/, { timeout: 20000 });
    assert.equal(new URL(ola.page.url()).searchParams.get("id"), new URL(pia.page.url()).searchParams.get("id"), "one room");
    await row(ola, "pia").waitFor();
    await row(pia, "ola").waitFor();
    assert.deepEqual(ola.problems, []);
    assert.deepEqual(pia.problems, []);
    clean(ola, pia);
  });

  it("a device clock a day ahead: the player stays signed in across pages (the server judges the token)", async () => {
    const context = await browser.newContext({ viewport: desktop });
    try {
      const page = await context.newPage();
      page.setDefaultTimeout(10000);
      await page.clock.install({ time: new Date(Date.now() + 24 * 3600 * 1000) }); // time flows, a day ahead
      const p: Player = { name: "ahead", page, problems: [] };
      page.on("pageerror", (e) => p.problems.push(`page error: ${e.message}`));
      await page.goto(`${server.url}/demo/`);
      await signIn(p);
      await page.locator("#create").getByRole("button", { name: "Create room" }).click();
      await row(p, "ahead").waitFor(); // the room page: a page of its own, signed in afresh
      await page.reload();
      await row(p, "ahead").waitFor();
      assert.equal(await page.getByRole("heading", { name: "Welcome!" }).isVisible(), false);
      clean(p);
    } finally {
      await context.close();
    }
  });

  it("errors the server sends are sentences, by field where they have one", async () => {
    // A deployment that accepts only some modes: the server's field error names them.
    const strict = await startServer({ REALSYNC_MODES: "battle,coop", REALSYNC_JWT_SECRET: "another-secret" });
    try {
      const hana = await player("hana", phone, strict.url);
      const create = hana.page.locator("#create");
      await create.getByLabel("Mode").fill("race"); // the right form, not an allowed mode
      await create.getByRole("button", { name: "Create room" }).click();
      await hana.page.locator("#create-mode-error").filter({ hasText: "Choose one of: battle, coop." }).waitFor();
      await hana.page.locator("#create .form-error").filter({ hasText: "Please check the fields marked below." }).waitFor();

      const join = hana.page.locator("#code");
      await join.getByLabel("Invite code").fill("ZZZZ-ZZZZ-ZZZZ");
      await join.getByRole("button", { name: "Join" }).click();
      await join.locator(".form-error").filter({ hasText: "No room has that invite code." }).waitFor();
      await shoot(hana, "21-errors");

      // A private room's link opened by a non-member: the invite-code form, which joins.
      const owner = await guest("ivan", strict.url);
      const made = await owner.createRoom({ name: "Hidden", mode: "coop", region: "eu", visibility: "private" });
      await hana.page.goto(`${strict.url}/demo/room.html?id=${made.room.id}`);
      await hana.page.locator("#visitor-title").filter({ hasText: "private or gone" }).waitFor();
      await hana.page.locator("#code").getByLabel("Invite code").fill(made.room.inviteCode ?? "");
      await hana.page.locator("#code").getByRole("button", { name: "Join" }).click();
      await row(hana, "ivan").waitFor();

      // A key that is not hers: the state policy, in words.
      await hana.page.locator("#patch").getByLabel("Key").fill("score");
      await hana.page.locator("#patch").getByLabel("Value").fill("1");
      await hana.page.locator("#patch").getByRole("button", { name: "Set" }).click();
      await hana.page.locator("#patch .form-error").filter({ hasText: "That key isn't yours" }).waitFor();
      await shoot(hana, "22-state-forbidden");

      // A token this server does not know (its secret changed, as a dev
      // server's does at each start): the page asks for a name again.
      const foreign = (await guest("old", server.url)).token ?? "";
      await hana.page.evaluate((t) => sessionStorage.setItem("token", t), foreign);
      await hana.page.goto(`${strict.url}/demo/`);
      await hana.page.getByRole("heading", { name: "Welcome!" }).waitFor();
      await signIn(hana);

      // The browser logs each refused request; nothing else may appear.
      const refused = hana.problems.map((m) => {
        const hit = /^console error: Failed to load resource: the server responded with a status of (\d+) .*\((.+)\)$/.exec(m);
        return hit ? `${hit[1]} ${new URL(hit[2]).pathname.replace(made.room.id, "ID")}` : m;
      });
      assert.deepEqual(refused, ["422 /v1/rooms", "404 /v1/rooms/join-by-code", "404 /v1/rooms/ID", "403 /v1/rooms/ID/state",
        "401 /v1/me/rooms"]);
    } finally {
      await strict.stop();
    }
  });
});
