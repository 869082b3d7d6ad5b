import { client, el, showError } from "./common.js";

const params = new URLSearchParams(location.search);
const roomId = params.get("id");
const playerId = Number(params.get("player"));
const c = await client();
const live = c.live(roomId, { playerId });
const names = new Map();

function render() {
  const r = live.room;
  if (!r) return;
  document.querySelector("#title").textContent = `RealSync · ${r.name}`;
  document.querySelector("#state").textContent = JSON.stringify(live.state, null, 2);
  document.querySelector("#players").replaceChildren(...(r.players ?? []).map((p) => {
    names.set(p.playerId, p.name);
    return el("li", { "data-player": p.playerId }, el("span", { class: p.connected ? "dot on" : "dot" }),
      `${p.name}${p.playerId === r.ownerPlayerId ? " (owner)" : ""}${p.playerId === playerId ? " · you" : ""}`);
  }));
  document.querySelector("#meta").textContent = `${r.mode} · ${r.region} · ${r.status} · version ${r.version}`;
}

function say(m) {
  const who = names.get(m.from) ?? `player ${m.from}`;
  const text = typeof m.data === "object" && m.data !== null ? m.data.text : String(m.data);
  const chat = document.querySelector("#chat");
  chat.append(el("li", {}, el("strong", {}, who + ": "), text ?? ""));
  chat.scrollTop = chat.scrollHeight;
}

live.on("change", render);
live.on("message", (e) => say(e.message));
live.on("closed", () => { document.querySelector(".error").textContent = "This room is closed for you."; });
c.messages(roomId, { limit: 50 }).then((ms) => ms.reverse().forEach(say)).catch(showError);

document.querySelector("#patch").addEventListener("submit", async (e) => {
  e.preventDefault();
  const f = new FormData(e.target);
  let value = null;
  const raw = String(f.get("value") ?? "").trim();
  if (raw !== "") {
    try { value = JSON.parse(raw); } catch { value = raw; }
  }
  try {
    await c.patchState(roomId, { [f.get("key")]: value });
    showError(null);
  } catch (err) {
    showError(err);
  }
});

document.querySelector("#say").addEventListener("submit", async (e) => {
  e.preventDefault();
  const f = new FormData(e.target);
  try {
    await c.sendMessage(roomId, { type: "chat", data: { text: f.get("text") } });
    e.target.reset();
  } catch (err) {
    showError(err);
  }
});

document.querySelector("#leave").addEventListener("submit", async (e) => {
  e.preventDefault();
  live.close();
  await c.leaveRoom(roomId).catch(() => {});
  location.href = "./";
});
