// The "Find match" panel of the lobby: a matchmaking ticket of a mode and
// region with the player's rating, naming the friends in the player's party
// (party.js); while it searches, the time waited and the rating window
// (which widens with the wait) every second, and Cancel. The match arrives
// as match_found on the player's personal stream (also polled on the
// ticket, should the stream be away): the page joins the match's room,
// where a seat is held for the player, and opens it. A party member's page
// does the same with the match_found of its leader's ticket.
import { $, bindForm } from "./ui.js";
import { friendly } from "./errors.js";

/** findMatch runs the panel for client c, its LiveMe me and its party (party.js). */
export function findMatch(c, me, party) {
  const form = $("#match");
  const find = form.querySelector("button");
  const status = $("#match-status");
  const cancel = $("#match-cancel");
  let ticket; // the searching ticket
  let company = ""; // "with your party of n" while a party searches
  let going = false; // a match's room is being joined and opened
  let queueing = false; // a ticket's create has not answered yet
  let timer;

  function show(text) {
    status.textContent = text;
    status.hidden = text === "";
  }

  function stop() {
    clearInterval(timer);
    ticket = undefined;
    cancel.hidden = true;
    find.hidden = false;
  }

  async function matched(roomId, text = "Match found! Joining…") {
    if (going) return;
    going = true;
    stop();
    show(text);
    try {
      if (!(await c.myRooms()).some((r) => r.id === roomId)) await c.joinRoom(roomId);
      location.href = `room.html?id=${encodeURIComponent(roomId)}`;
    } catch (err) {
      going = false;
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
      show(`Searching${company}… ${Math.round(t.waitedSeconds ?? 0)} s, rating window ±${Math.round(t.window ?? 0)}`);
    } catch (err) {
      show(friendly(err));
    }
  }

  bindForm(form, async (f) => {
    const members = await party.friends();
    queueing = true;
    try {
      ticket = await c.createTicket({ mode: f.mode, regions: [f.region], rating: Number(f.rating),
        partyUserIds: members.length > 0 ? members : undefined });
    } finally {
      queueing = false;
    }
    if (going) return; // matched before the answer came (a party may be a match of its own)
    company = members.length > 0 ? ` with your party of ${members.length + 1}` : "";
    find.hidden = true; // hidden, not disabled: bindForm enables the form's buttons once this returns
    cancel.hidden = false;
    show(`Searching${company}… 0 s`);
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

  // A match_found of another ticket is the player's party's: its leader's
  // ticket named the player (a user is in one active ticket at a time);
  // or the player's own, come before its create's answer.
  me.on("match_found", (m) => {
    if (ticket && m.ticketId === ticket.ticketId) void matched(m.roomId);
    else if (!ticket) void matched(m.roomId, queueing ? undefined : "Your party found a match! Joining…");
  });
}
