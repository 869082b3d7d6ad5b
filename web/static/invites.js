// Invites to rooms, from the player's personal stream (LiveMe): each one a
// line with who invites to which room and a Join button, which joins it
// (by its invite code for a private room) and opens the room. An invite
// arrives once per platform, also when it was sent while the player was
// away, so the lobby and the room page both show them.
import { $, el } from "./ui.js";
import { friendly } from "./errors.js";

/** invites shows the invites me (the player's LiveMe) receives in the list #invites. */
export function invites(c, me) {
  const list = $("#invites");
  me.on("invite", (inv) => {
    const who = inv.from.server ? "The game" : inv.from.name || "A player";
    const error = el("span", { class: "form-error", role: "alert" });
    const join = el("button", { type: "button", class: "small", "aria-label": `Join ${inv.name}`,
      onclick: async () => {
        join.disabled = true;
        try {
          await c.acceptInvite(inv);
          location.href = `room.html?id=${encodeURIComponent(inv.roomId)}`;
        } catch (err) {
          error.textContent = friendly(err, "join");
          join.disabled = false;
        }
      } }, "Join");
    list.append(el("li", { "data-room": inv.roomId },
      el("span", { class: "name" }, `${who} invites you to ${inv.name}`),
      el("span", { class: "muted" }, `${inv.mode} · ${inv.region}`), join, error));
    list.closest("section").hidden = false;
  });
}
