import { client, el, showError } from "./common.js";

const c = await client();
let lobby;

function enter(roomId, playerId) {
  location.href = `room.html?id=${encodeURIComponent(roomId)}&player=${playerId}`;
}

async function join(roomId) {
  try {
    const j = await c.joinRoom(roomId);
    enter(j.room.id, j.playerId);
  } catch (e) {
    showError(e);
  }
}

function render() {
  const rows = lobby.list().map((r) =>
    el("tr", { "data-room": r.id },
      el("td", {}, r.name), el("td", {}, r.mode), el("td", {}, r.region),
      el("td", {}, `${r.playerCount} / ${r.maxPlayers}`),
      el("td", {}, el("button", { class: "ghost", onclick: () => join(r.id) }, "Join"))));
  document.querySelector("#rooms").replaceChildren(...rows);
  document.querySelector("#none").hidden = rows.length > 0;
}

function watch(filter) {
  lobby?.close();
  lobby = c.lobby(filter);
  lobby.on("change", render);
  render();
}

document.querySelector("#filter").addEventListener("submit", (e) => {
  e.preventDefault();
  const f = new FormData(e.target);
  watch({ mode: f.get("mode") || undefined, region: f.get("region") || undefined });
});

document.querySelector("#create").addEventListener("submit", async (e) => {
  e.preventDefault();
  const f = new FormData(e.target);
  try {
    const j = await c.createRoom({ name: f.get("name"), mode: f.get("mode"), region: f.get("region"),
      maxPlayers: Number(f.get("maxPlayers")), statePolicy: "open" });
    enter(j.room.id, j.playerId);
  } catch (err) {
    showError(err);
  }
});

document.querySelector("#quick").addEventListener("submit", async (e) => {
  e.preventDefault();
  const f = new FormData(e.target);
  try {
    const q = await c.quickJoin({ mode: f.get("mode"), regions: [f.get("region")],
      create: { name: "Quick match", maxPlayers: 4, statePolicy: "open" } });
    enter(q.room.id, q.playerId);
  } catch (err) {
    showError(err);
  }
});

watch({});
