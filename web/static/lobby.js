// The lobby: the live list of rooms (a LiveLobby for the joinable ones; with
// "only joinable" off, the public waiting and playing rooms, listed again
// whenever the live list moves and every 10 s), the player's own rooms,
// create, join by invite code and quick join; the friends panel, fed by the
// player's personal stream (platform "web", open while the page is); the
// party panel and find match.
import { session } from "./session.js";
import { friends } from "./friends.js";
import { invites } from "./invites.js";
import { findMatch } from "./match.js";
import { party } from "./party.js";
import { $, Badge, bindForm, el, showProblem } from "./ui.js";
import { friendly, withReload } from "./errors.js";

const { client: c, userId, rooms: myRooms } = await session();
const badge = new Badge($("#badge"));
$("#badge").hidden = false;

let mine = new Map(); // roomId → the player's room (with its playerId)
let lobby; // the LiveLobby of the current filter
let unfollow = () => {};
let filter = { mode: undefined, region: undefined };
let joinableOnly = true;
let listed = []; // the public rooms of the filter, when not only joinable
let refreshTimer;
let refreshEvery;

function enter(roomId) {
  location.href = `room.html?id=${encodeURIComponent(roomId)}`;
}

/** joinable is whether a player could join r now. */
function joinable(r) {
  return r.status === "waiting" && !r.locked && r.playerCount < r.maxPlayers;
}

function statusText(r) {
  if (r.status !== "waiting") return r.status;
  if (r.locked) return "locked";
  return r.playerCount >= r.maxPlayers ? "full" : "open";
}

async function join(r, button) {
  button.disabled = true;
  $("#rooms-error").textContent = "";
  try {
    await c.joinRoom(r.id);
    enter(r.id);
  } catch (err) {
    $("#rooms-error").textContent = friendly(err, "join");
    button.disabled = false;
  }
}

/** card is a room's card: name, mode and region, fill, and Join (or Open for the player's own rooms). */
function card(r) {
  const member = mine.has(r.id);
  const action = member
    ? el("a", { class: "button", href: `room.html?id=${encodeURIComponent(r.id)}` }, "Open")
    : el("button", { type: "button", disabled: !joinable(r), "aria-label": `Join ${r.name}`,
      onclick: (e) => join(r, e.currentTarget) }, "Join");
  const fill = Math.round((100 * r.playerCount) / r.maxPlayers);
  return el("article", { class: "card", "data-room": r.id },
    el("h3", {}, r.name),
    el("p", { class: "muted" }, `${r.mode} · ${r.region}`, r.visibility === "private" ? " · private" : ""),
    el("div", { class: "fill", style: `--fill: ${fill}%`, role: "img", "aria-label": `${r.playerCount} of ${r.maxPlayers} players` },
      el("span", {})),
    el("div", { class: "card-foot" },
      el("span", { class: "players" }, `${r.playerCount} / ${r.maxPlayers} players`),
      el("span", { class: `chip ${statusText(r)}` }, statusText(r)),
      action));
}

function render() {
  const rooms = joinableOnly ? (lobby?.list() ?? []) : listed;
  $("#rooms").replaceChildren(...rooms.map(card));
  $("#none").hidden = rooms.length > 0;
}

function renderMine() {
  $("#mine").replaceChildren(...[...mine.values()].map(card));
  $("#mine-panel").hidden = mine.size === 0;
}

/** refresh lists the public waiting and playing rooms of the filter (only joinable off). */
async function refresh() {
  if (joinableOnly) return;
  try {
    const page = await c.listRooms({ status: "waiting,playing", mode: filter.mode, region: filter.region, sort: "newest", limit: 50 });
    if (joinableOnly) return;
    listed = page.rooms;
    render();
  } catch (err) {
    roomsError(err, friendly(err));
  }
}

/**
 * roomsError shows an error of the list or the live lobby: a refused filter
 * (a mode or region the server does not know) on the filter's fields, else
 * sentence above the rooms.
 */
function roomsError(err, sentence) {
  if (err?.code === "VALIDATION_FAILED") showProblem($("#filter"), err);
  else $("#rooms-error").textContent = sentence;
}

function refreshSoon() {
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(refresh, 300);
}

/** watch follows the live lobby of the filter (the previous one is closed). */
function watch() {
  unfollow();
  lobby?.close();
  lobby = c.lobby(filter);
  const stops = [badge.follow(lobby),
    lobby.on("change", () => (joinableOnly ? render() : refreshSoon())),
    lobby.on("closed", (e) => {
      const err = e?.error;
      if (err) roomsError(err, withReload(err, "Reload the page to see live rooms again."));
    })];
  unfollow = () => stops.forEach((stop) => stop());
  lobby.ready?.catch(() => {}); // shown by the closed handler
  clearInterval(refreshEvery);
  if (!joinableOnly) {
    refresh();
    refreshEvery = setInterval(refresh, 10000);
  }
  render();
}

bindForm($("#filter"), (f) => {
  filter = { mode: f.mode || undefined, region: f.region || undefined };
  joinableOnly = f.joinable === "on";
  $("#rooms-error").textContent = "";
  watch();
});
$("#filter").addEventListener("change", (e) => e.currentTarget.requestSubmit());

bindForm($("#create"), async (f) => {
  const j = await c.createRoom({ name: f.name.trim(), mode: f.mode, region: f.region,
    maxPlayers: Number(f.maxPlayers), visibility: f.visibility });
  enter(j.room.id);
});
$("#create").elements.name.value = `${sessionStorage.getItem("name") ?? "My"}'s room`;

bindForm($("#code"), async (f) => {
  const j = await c.joinByCode(f.inviteCode.trim());
  enter(j.room.id);
}, "joinByCode");

bindForm($("#quick"), async (f) => {
  const q = await c.quickJoin({ mode: f.mode, regions: [f.region],
    create: { name: `${f.mode} match`, maxPlayers: 4 } });
  enter(q.room.id);
});

const me = c.me("web");
const myParty = party(c, userId);
friends(c, userId, me, myParty.join);
invites(c, me);
findMatch(c, me, myParty);
mine = new Map(myRooms.map((r) => [r.id, r]));
renderMine();
watch();
