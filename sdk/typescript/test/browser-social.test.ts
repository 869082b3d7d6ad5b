// The demo in a browser, around rooms: friends, invites, matchmaking, parties, a
// device clock a day ahead, and the server's errors as sentences. The
// players, pages and checks are test/demo.ts's.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { patience, startServer } from "./server.js";
import { type Player, clean, guest, nameForm, newContext, phone, player, roomOf, row, server, shoot, signIn } from "./demo.js";

describe("the demo in a browser: friends, invites, matchmaking, parties, errors", () => {
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
    for (const until = Date.now() + patience; (await code.inputValue()) !== "" && Date.now() < until;) {
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
    try {
      await ola.page.waitForURL(/room\.html\?id=/);
      await pia.page.waitForURL(/room\.html\?id=/);
    } catch (e) {
      // say where each player was, and what the server said of tickets:
      // a bare navigation timeout does not tell a ticket refused from a
      // match not made
      const where = async (p: Player) =>
        p.page.url().includes("room.html") ? "in a room" : await p.page.locator("#match-status").textContent().catch(() => "?");
      const said = server.logs().split("\n")
        .filter((l) => /level=(WARN|ERROR)|msg="?matchmaking|status=[45]\d\d|method=(POST|DELETE) path=\/v1\/matchmaking/.test(l)).slice(-40);
      throw new Error(`${(e as Error).message}\nola: ${await where(ola)}\npia: ${await where(pia)}\nthe server's log:\n${said.join("\n")}`);
    }
    assert.equal(new URL(ola.page.url()).searchParams.get("id"), new URL(pia.page.url()).searchParams.get("id"), "one room");
    await row(ola, "pia").waitFor();
    await row(pia, "ola").waitFor();
    clean(ola, pia);
  });

  it("party: a friend joins a player's party from the friends list; the leader's Find match takes both to the match's room; the friend leaves", async () => {
    const rex = await player("rex");
    const sue = await player("sue", phone);
    const rexCode = (await rex.page.locator("#my-code").textContent()) ?? "";
    const sueCode = (await sue.page.locator("#my-code").textContent()) ?? "";
    await rex.page.locator("#no-members").waitFor();

    const join = sue.page.locator("#party-join");
    await join.getByLabel("Leader's friend code").fill(sueCode);
    await join.getByRole("button", { name: "Join party" }).click();
    await join.locator(".form-error").filter({ hasText: "your own code" }).waitFor();
    await join.getByLabel("Leader's friend code").fill("");
    const follow = sue.page.locator("#follow");
    await follow.getByLabel("Friend code").fill(rexCode);
    await follow.getByLabel("Name").fill("Rex");
    await follow.getByRole("button", { name: "Follow" }).click();
    await sue.page.getByRole("button", { name: "Join Rex's party" }).click();
    await sue.page.locator("#party-in").filter({ hasText: "You are in Rex's party." }).waitFor();
    assert.equal(await join.locator(".form-error").textContent(), "", "the refusal is gone once in a party");
    // the leader's list is read every 5 s; a stranger joins too, whom
    // rex does not follow: marked, and left out of rex's Find match
    const stranger = await guest("zed");
    await stranger.joinParty(rexCode);
    await rex.page.locator(`#party-members li[data-user="${sueCode}"]`).filter({ hasText: "not a friend" }).waitFor();
    const rexFollow = rex.page.locator("#follow");
    await rexFollow.getByLabel("Friend code").fill(sueCode);
    await rexFollow.getByLabel("Name").fill("Sue");
    await rexFollow.getByRole("button", { name: "Follow" }).click();
    await rex.page.locator(`#party-members li[data-user="${sueCode}"]`).filter({ hasText: "Sue" }).filter({ hasNotText: "not a friend" }).waitFor();
    assert.equal(await rex.page.locator("#party-members li").filter({ hasText: "not a friend" }).count(), 1, "the stranger is marked");
    assert.equal(await rex.page.locator("#no-members").isVisible(), false);
    await shoot(sue, "36-party");
    await shoot(rex, "37-party-leader");

    // By default a mode's match is 2 players: the party of two is a match of its own.
    const form = rex.page.locator("#match");
    await form.getByLabel("Mode").fill(`duo${Date.now() % 100000}`);
    await form.getByRole("button", { name: "Find match" }).click();
    await rex.page.waitForURL(/room\.html\?id=/);
    await sue.page.waitForURL(/room\.html\?id=/);
    assert.equal(roomOf(rex), roomOf(sue), "one room");
    await row(rex, "sue").waitFor();
    await row(sue, "rex").waitFor();
    assert.equal(await rex.page.locator("#players li").count(), 2, "the stranger was not queued");
    const first = roomOf(rex);

    // Rex queues the party again from the lobby while sue stays in the
    // room: her room page offers the new match.
    await rex.page.goto(`${server.url}/demo/`);
    await form.getByLabel("Mode").fill(`duo${Date.now() % 100000}`);
    await form.getByRole("button", { name: "Find match" }).click();
    await rex.page.waitForURL(/room\.html\?id=/);
    assert.notEqual(roomOf(rex), first, "a new match's room");
    const offer = sue.page.locator(`#invites li[data-room="${roomOf(rex)}"]`);
    await offer.filter({ hasText: "A match is ready for you" }).waitFor();
    await offer.getByRole("button", { name: "Join the match" }).click();
    await sue.page.waitForURL(new RegExp(`room\\.html\\?id=${roomOf(rex)}`));
    await row(sue, "rex").waitFor();

    // Back in the lobby, sue is still in the party, and leaves it.
    await sue.page.goto(`${server.url}/demo/`);
    await sue.page.locator("#party-in").filter({ hasText: "You are in Rex's party." }).waitFor();
    await sue.page.getByRole("button", { name: "Leave party" }).click();
    await sue.page.locator("#party-in").filter({ hasText: "You are in no party." }).waitFor();
    await stranger.leaveParty();
    await rex.page.goto(`${server.url}/demo/`);
    await rex.page.locator("#no-members").waitFor();
    assert.equal(await rex.page.locator("#party-members li").count(), 0);
    clean(rex, sue);
  });

  it("a device clock a day ahead: the player stays signed in across pages (the server judges the token)", async () => {
    const context = await newContext();
    try {
      const page = await context.newPage();
      page.setDefaultTimeout(patience);
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
      // the lobby's filter alike: the refused mode marked on the filter (a
      // tester's find: the sentence came above the rooms, no field marked)
      const filter = hana.page.locator("#filter");
      await filter.getByLabel("Mode").fill("race");
      await filter.getByRole("button", { name: "Filter" }).click();
      await hana.page.locator("#filter-mode-error").filter({ hasText: "Choose one of: battle, coop." }).waitFor();
      await filter.getByLabel("Mode").fill("");
      await filter.getByRole("button", { name: "Filter" }).click();

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
      // server's does at each start): the page asks for a name again. The
      // token goes into the tab's sessionStorage as the lobby's document
      // starts, before its scripts, not from the room page before leaving
      // it: the room page's SDK writes the same key (onToken) whenever it
      // renews hana's token, and a renewal answered between the test's
      // write and the navigation would put back a token this server
      // accepts (the lobby opens as hana, no name form).
      const foreign = (await guest("old", server.url)).token ?? "";
      const plant = await hana.page.addInitScript((t) => sessionStorage.setItem("token", t), foreign);
      await hana.page.goto(`${strict.url}/demo/`);
      await plant.dispose();
      await nameForm(hana);
      await hana.page.getByRole("heading", { name: "Welcome!" }).waitFor();
      await signIn(hana);

      // The browser logs each refused request; nothing else may appear.
      const refused = hana.problems.map((m) => {
        const hit = /^console error: Failed to load resource: the server responded with a status of (\d+) .*\((.+)\)$/.exec(m);
        return hit ? `${hit[1]} ${new URL(hit[2]).pathname.replace(made.room.id, "ID")}` : m;
      });
      // The lobby stream's refusal comes as a run: the EventSource's, then
      // the read of its problem, and a CI run once logged a third (the
      // browser's attempts are its own): which requests were refused is
      // what this checks, so a run of the same refusal counts once.
      const distinct = refused.filter((m, i) => m !== "422 /v1/lobby/events" || refused[i - 1] !== m);
      assert.ok(refused.filter((m) => m === "422 /v1/lobby/events").length >= 2, `the lobby's refusal and its problem's read: ${refused}`);
      assert.deepEqual(distinct, ["422 /v1/rooms", "422 /v1/lobby/events", "404 /v1/rooms/join-by-code", "404 /v1/rooms/ID", "403 /v1/rooms/ID/state",
        "401 /v1/me/rooms"]);
    } finally {
      await strict.stop();
    }
  });
});
