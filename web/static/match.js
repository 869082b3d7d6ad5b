// The "Find match" panel of the lobby: a matchmaking ticket of a mode and
// region with the player's rating; while it searches, the time waited and
// the rating window (which widens with the wait) every second, and Cancel.
// The match arrives as match_found on the player's personal stream (also
// polled on the ticket, should the stream be away): the page joins the
// match's room, where a seat is held for the player, and opens it.
import { $, bindForm } from "./ui.js";
import { friendly } from "./errors.js";

/** findMatch runs the panel for client c and its LiveMe me. */
export function findMatch(c, me) {
  const form = $("#match");
  const status = $("#match-status");
  const cancel = $("#match-cancel");
  let ticket; // the searching ticket
  let timer;

  function show(text) {
    status.textContent = text;
    status.hidden = text === "";
  }

  function stop() {
    clearInterval(timer);
    ticket = undefined;
    cancel.hidden = true;
    form.querySelector("button").disabled = false;
  }

  async function matched(roomId) {
    stop();
    show("Match found! Joining…");
    try {
      if (!(await c.myRooms()).some((r) => r.id === roomId)) await c.joinRoom(roomId);
      location.href = `room.html?id=${encodeURIComponent(roomId)}`;
    } catch (err) {
      show(friendly(err, "join"));
    }
  }

  async function poll() {
    if (!ticket) return;
    try {
      const t = await c.getTicket(ticket.ticketId);
      if (!ticket) return;
      if (t.status === "matched" && t.roomId) return matched(t.roomId);
      if (t.status !== "searching") {
        stop();
        return show(t.status === "expired" ? "No match found in time. Try again." : "Search cancelled.");
      }
      show(`Searching… ${Math.round(t.waitedSeconds ?? 0)} s, rating window ±${Math.round(t.window ?? 0)}`);
    } catch (err) {
      show(friendly(err));
    }
  }

  bindForm(form, async (f) => {
    ticket = await c.createTicket({ mode: f.mode, regions: [f.region], rating: Number(f.rating) });
    form.querySelector("button").disabled = true;
    cancel.hidden = false;
    show("Searching… 0 s");
    timer = setInterval(poll, 1000);
  });

  cancel.addEventListener("click", async () => {
    const t = ticket;
    if (!t) return;
    try {
      await c.cancelTicket(t.ticketId);
      stop();
      show("Search cancelled.");
    } catch (err) {
      if (err?.code === "TICKET_MATCHED") return poll(); // just matched: the room opens
      show(friendly(err));
    }
  });

  me.on("match_found", (m) => {
    if (ticket && m.ticketId === ticket.ticketId) void matched(m.roomId);
  });
}
