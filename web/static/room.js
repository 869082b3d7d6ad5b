// The room page (room.html?id=…). A member plays in the live room: players
// with ready toggles (state key player_<id>_ready: the default state policy
// lets each player write only its own player_<id>_ keys), the owner's Start
// and Kick, chat, the shared state, the invite code or link, Leave. A
// visitor (a shared link, or a player removed meanwhile) sees the room's
// public info and a Join button, or for a private room the invite-code form:
// the page never opens a stream the server would refuse.
import { session } from "./session.js";
import { $, Badge, bindForm, copy, el } from "./ui.js";
import { friendly, withReload } from "./errors.js";
import { invites, matches } from "./invites.js";

const roomId = new URLSearchParams(location.search).get("id") ?? "";
const { client: c, rooms: myRooms } = await session();
// The player stays online for friends while in a room: its personal stream
// (platform "web") replaces the lobby page's.
const personal = c.me("web");
personal.ready?.catch(() => {});
invites(c, personal);
matches(c, personal);
const badge = new Badge($("#badge"));

let live; // the LiveRoom, once a member
let me = 0; // the player's playerId in the room
let leaving = false; // the page closes the stream itself: no "ended" panel
let permanent; // the error that made the page close the stream
let leftReason; // the player's own player_left reason (left, kicked)
let closedReason; // the room_closed reason
const names = new Map(); // playerId → name, kept for players who left
const messages = new Map(); // version → message

/** show displays one of the page's views: "loading", "visitor", "ended" or "room". */
function show(view) {
  $("#loading").hidden = view !== "loading";
  for (const id of ["visitor", "ended", "room"]) $(`#${id}`).hidden = id !== view;
  $("#badge").hidden = view !== "room";
}

function ended(title, text) {
  $("#ended-title").textContent = title;
  $("#ended-text").textContent = text;
  document.title = `RealSync demo · ${title}`;
  show("ended");
}

const readyKey = (playerId) => `player_${playerId}_ready`;
const isReady = (playerId) => live.state[readyKey(playerId)] === true;

async function start() {
  if (!roomId) return ended("No room in this link", "Open a room from the lobby, or ask your friend for the link again.");
  const mine = myRooms.find((r) => r.id === roomId);
  if (mine) enterLive(mine.playerId);
  else await visit();
}

/** visit shows the room to a non-member: its public info and Join, or the
 * invite-code form when the server does not show it (private, or gone). */
async function visit(note = "") {
  let room;
  try {
    room = await c.getRoom(roomId);
  } catch (err) {
    if (err.code !== "ROOM_NOT_FOUND") return ended("Can't load the room", friendly(err));
  }
  $("#visitor-note").textContent = note;
  $("#join-error").textContent = "";
  if (!room) {
    $("#visitor-title").textContent = "This room is private or gone";
    $("#visitor-meta").textContent = "If a friend gave you its invite code, enter it to join.";
    $("#visitor-players").replaceChildren();
    $("#join").hidden = true;
    $("#code").hidden = false;
    return show("visitor");
  }
  document.title = `RealSync demo · ${room.name}`;
  $("#visitor-title").textContent = room.name;
  $("#visitor-meta").textContent = `${room.mode} · ${room.region} · ${room.playerCount} / ${room.maxPlayers} players · ${room.status}`;
  $("#visitor-players").replaceChildren(...(room.players ?? []).map((p) =>
    el("li", {}, presence(p), p.name,
      p.playerId === room.ownerPlayerId ? el("span", { class: "chip owner" }, "owner") : null)));
  const join = $("#join");
  join.hidden = false;
  join.disabled = !(room.status === "waiting" && !room.locked && room.playerCount < room.maxPlayers);
  if (join.disabled) {
    $("#join-error").textContent = room.status !== "waiting" || room.locked
      ? "This game has already started: you can't join it now."
      : "This room is full.";
  }
  $("#code").hidden = true;
  show("visitor");
}

$("#join").addEventListener("click", async (e) => {
  e.currentTarget.disabled = true;
  try {
    const j = await c.joinRoom(roomId);
    enterLive(j.playerId);
  } catch (err) {
    $("#join-error").textContent = friendly(err, "join");
    e.currentTarget.disabled = false;
  }
});

bindForm($("#code"), async (f) => {
  const j = await c.joinByCode(f.inviteCode.trim());
  if (j.room.id !== roomId) location.href = `room.html?id=${encodeURIComponent(j.room.id)}`;
  else enterLive(j.playerId);
}, "joinByCode");

/** enterLive opens the live room as player playerId. */
function enterLive(playerId) {
  me = playerId;
  permanent = leftReason = closedReason = undefined;
  live = c.live(roomId, { playerId });
  badge.follow(live);
  live.ready?.catch(() => {}); // the closed handler says why
  live.on("change", render);
  live.on("message", (e) => addMessage({ ...e.message, version: e.version }));
  live.on("player_left", (e) => { if (e.playerId === me) leftReason = e.reason; });
  live.on("room_closed", (e) => { closedReason = e.reason; });
  live.on("error", (err) => {
    // Not (or no longer) a member, or the room is gone: the page ends the
    // stream itself, whatever the SDK would do next.
    if (err?.code && (err.status === 403 || err.status === 404)) {
      permanent = err;
      live.close();
    }
  });
  live.on("closed", onClosed);
  c.messages(roomId, { limit: 50 }).then((ms) => ms.forEach(addMessage), () => {});
  show("loading");
}

const closedTexts = {
  closed: "The owner closed it.",
  empty: "Everyone left.",
  expired: "It sat idle for too long.",
  finished: "The game is over.",
  gone: "It is gone.",
};

function onClosed(e) {
  if (leaving) return;
  const reason = permanent ? "error" : (e?.reason ?? (closedReason ? "room_closed" : leftReason ? "left" : "closed"));
  const err = permanent ?? e?.error;
  if (reason === "room_closed") return ended("This room has closed", closedTexts[closedReason] ?? "");
  if (reason === "left") {
    return leftReason === "kicked"
      ? ended("You were removed from the room", "The owner removed you. Find another room in the lobby.")
      : ended("You left this room", "You left it from another tab or window.");
  }
  if (err?.code === "NOT_A_MEMBER") return visit("You're not a member of this room any more.");
  if (err?.status === 404) return ended("This room is gone", "It closed, or it never existed.");
  // a refused token ends the session: the personal stream stops asking too
  if (err?.status === 401) personal.close();
  if (err) return ended("Live updates stopped", withReload(err));
}

function addMessage(m) {
  if (messages.has(m.version)) return;
  messages.set(m.version, m);
  const chat = $("#chat");
  const stick = chat.scrollTop + chat.clientHeight >= chat.scrollHeight - 4;
  chat.replaceChildren(...[...messages.values()].sort((a, b) => a.version - b.version).map(messageItem));
  if (stick) chat.scrollTop = chat.scrollHeight;
}

function messageItem(m) {
  const who = m.from === me ? "you" : (names.get(m.from) ?? `player ${m.from}`);
  const text = m.type === "chat" && typeof m.data?.text === "string" ? m.data.text : `${m.type}: ${JSON.stringify(m.data)}`;
  return el("li", { class: m.from === me ? "mine" : "" }, el("strong", {}, `${who}: `), text);
}

function render() {
  const r = live.room;
  if (!r) return;
  show("room");
  const owner = r.ownerPlayerId === me;
  const players = r.players ?? [];
  for (const p of players) names.set(p.playerId, p.name);
  document.title = `RealSync demo · ${r.name}`;
  $("#room-title").textContent = r.name;
  $("#room-meta").replaceChildren(...[r.mode, r.region, r.visibility, r.status].map((t) => el("span", { class: `chip ${t}` }, t)),
    el("span", { class: "muted" }, `${r.playerCount} / ${r.maxPlayers} players`));

  const banner = $("#banner");
  banner.hidden = r.status === "waiting";
  banner.textContent = r.status === "playing" ? "Game on! The owner started the game." : "This game is over.";

  renderInvite(r);
  renderActions(r, owner, players);
  $("#players").replaceChildren(...players.map((p) => playerItem(r, p, owner)));
  renderState(owner);
  // Names may have arrived after the chat history.
  $("#chat").replaceChildren(...[...messages.values()].sort((a, b) => a.version - b.version).map(messageItem));
}

function renderInvite(r) {
  const code = r.inviteCode;
  $("#invite").hidden = false;
  $("#invite-label").textContent = code ? "Invite code" : "Room link";
  $("#invite-value").textContent = code ?? location.href;
  $("#copy").setAttribute("aria-label", code ? "Copy invite code" : "Copy room link");
}

function renderActions(r, owner, players) {
  const ready = isReady(me);
  const btn = $("#ready");
  btn.setAttribute("aria-pressed", String(ready));
  btn.textContent = ready ? "Ready ✓" : "I'm ready";
  btn.hidden = r.status !== "waiting";

  const readyCount = players.filter((p) => isReady(p.playerId)).length;
  const canStart = players.length >= 2 && readyCount === players.length;
  $("#start").hidden = !owner || r.status !== "waiting";
  $("#start").disabled = !canStart;
  $("#again").hidden = !owner || r.status !== "playing";
  const hint = $("#start-hint");
  hint.hidden = r.status !== "waiting";
  hint.textContent = players.length < 2
    ? "Waiting for another player to join."
    : canStart
      ? (owner ? "Everyone is ready: start the game!" : "Everyone is ready: waiting for the owner to start.")
      : `${readyCount} of ${players.length} players ready.`;
}

/** presence is a player's online dot, named for screen readers. */
function presence(p) {
  const state = p.connected ? "online" : "away";
  return el("span", { class: p.connected ? "dot on" : "dot", role: "img", "aria-label": state, title: state });
}

function playerItem(r, p, owner) {
  const ready = isReady(p.playerId);
  return el("li", { "data-player": p.playerId },
    presence(p),
    el("span", { class: "name" }, p.name),
    p.playerId === r.ownerPlayerId ? el("span", { class: "chip owner" }, "owner") : null,
    p.playerId === me ? el("span", { class: "chip you" }, "you") : null,
    el("span", { class: ready ? "chip ready" : "chip not-ready" }, ready ? "ready" : "not ready"),
    owner && p.playerId !== me && r.status !== "finished"
      ? el("button", { type: "button", class: "ghost small danger", "aria-label": `Kick ${p.name}`,
        onclick: (e) => act(e.currentTarget, () => c.kick(roomId, p.playerId), "kick") }, "Kick")
      : null);
}

function renderState(owner) {
  const entries = Object.entries(live.state).sort(([a], [b]) => a.localeCompare(b));
  $("#state").replaceChildren(...entries.map(([k, v]) => el("tr", {}, el("th", { scope: "row" }, k), el("td", {}, JSON.stringify(v)))));
  $("#state-empty").hidden = entries.length > 0;
  const key = $("#patch").elements.key;
  if (!key.value) key.placeholder = `player_${me}_score`;
  $("#state-note").textContent = owner || live.room.statePolicy === "open"
    ? "You may set any key."
    : `You may set keys that start with player_${me}_ (the owner may set any).`;
}

/** act runs an action of a button, showing its error under the room's actions. */
async function act(button, fn, context) {
  button.disabled = true;
  $("#room-error").textContent = "";
  try {
    await fn();
  } catch (err) {
    $("#room-error").textContent = friendly(err, context);
  } finally {
    button.disabled = false;
    if (live.room) render(); // the start button's state depends on the room
  }
}

$("#ready").addEventListener("click", (e) =>
  act(e.currentTarget, () => c.patchState(roomId, { [readyKey(me)]: isReady(me) ? null : true })));

$("#start").addEventListener("click", (e) => act(e.currentTarget, () => c.updateRoom(roomId, { status: "playing" })));

$("#again").addEventListener("click", (e) => act(e.currentTarget, async () => {
  // A new round: everyone readies up again.
  const clear = Object.fromEntries((live.room.players ?? []).map((p) => [readyKey(p.playerId), null]));
  await c.updateRoom(roomId, { status: "waiting" });
  await c.patchState(roomId, clear);
}));

$("#leave").addEventListener("click", (e) => act(e.currentTarget, async () => {
  leaving = true;
  try {
    await c.leaveRoom(roomId);
  } catch (err) {
    leaving = false;
    throw err;
  }
  live.close();
  location.href = "./";
}));

$("#copy").addEventListener("click", async (e) => {
  const button = e.currentTarget;
  const copied = await copy($("#invite-value").textContent, $("#invite-value"));
  button.textContent = copied ? "Copied!" : "Selected: copy it";
  setTimeout(() => (button.textContent = "Copy"), 2000);
});

bindForm($("#say"), async (f, form) => {
  await c.sendMessage(roomId, { type: "chat", data: { text: f.text } });
  form.reset();
});

bindForm($("#invite-friend"), async (f, form) => {
  const who = f.userId.trim();
  await c.invite(roomId, who);
  form.reset();
  $("#invite-sent").textContent = `Invite sent to ${who}.`;
}, "invite");

bindForm($("#patch"), async (f, form) => {
  let value = null; // empty deletes the key
  const raw = f.value.trim();
  if (raw !== "") {
    try { value = JSON.parse(raw); } catch { value = raw; }
  }
  await c.patchState(roomId, { [f.key]: value });
  form.reset();
}, "patch");

await start();
