// Invites to rooms, from the player's personal stream (LiveMe): each one a
// line with who invites to which room and a Join button, which joins it
// (by its invite code for a private room) and opens the room. An invite
// arrives once per platform, also when it was sent while the player was
// away, so the lobby and the room page both show them. The room page shows
// a party's match alike.
import { $, el } from "./ui.js";
import { friendly } from "./errors.js";

/** invites shows the invites me (the player's LiveMe) receives in the list #invites. */
export function invites(c, me) {
  me.on("invite", (inv) => {
    const who = inv.from.server ? "The game" : inv.from.name || "A player";
    offer(inv.roomId, `${who} invites you to ${inv.name}`, `${inv.mode} · ${inv.region}`,
      `Join ${inv.name}`, () => c.acceptInvite(inv));
  });
}

/**
 * matches shows, in the same list, the matches found for the player while
 * away from the lobby (whose Find match opens them itself): on the room
 * page, a party's leader may queue its members again.
 */
export function matches(c, me) {
  me.on("match_found", (m) => {
    offer(m.roomId, "A match is ready for you", `${m.mode} · ${m.region}`, "Join the match", () => c.joinRoom(m.roomId));
  });
}

/** offer adds a line to #invites whose button runs accept and opens room roomId. */
function offer(roomId, text, detail, label, accept) {
  const list = $("#invites");
  const error = el("span", { class: "form-error", role: "alert" });
  const join = el("button", { type: "button", class: "small", "aria-label": label,
    onclick: async () => {
      join.disabled = true;
      try {
        await accept();
        location.href = `room.html?id=${encodeURIComponent(roomId)}`;
      } catch (err) {
        error.textContent = friendly(err, "join");
        join.disabled = false;
      }
    } }, "Join");
  list.append(el("li", { "data-room": roomId },
    el("span", { class: "name" }, text), el("span", { class: "muted" }, detail), join, error));
  list.closest("section").hidden = false;
}
