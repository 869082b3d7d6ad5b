// The demo in headless Chromium against a real realsyncd: what the browser
// test files share. Each file that imports it gets its own server and
// browser (before and after hooks registered here), so each file stays well
// inside the run's per-file timeout. Each player is in its own browser
// context (its own guest). Every page fails the test on any console error or
// warning and any page error, and at every step it must fit 390 px without
// horizontal scroll. The browser contexts a test opened are closed after
// it: a page left open goes on following its streams (and retrying those
// of a server the test stopped) through the tests after it. Screenshots of every step, at 390 px and at desktop
// width, go to test-output/ (gitignored), with a few clean ones for the
// guide (test-output/guide-*.png).
import { after, afterEach, before } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { RealSync } from "../src/index.js";
import { launchChromium, patience, startServer, type Server } from "./server.js";

export let server: Server;
let browser: Browser;
export const out = new URL("../../test-output/", import.meta.url).pathname;
export const phone = { width: 390, height: 844 };
export const desktop = { width: 1280, height: 860 };

before(async () => {
  server = await startServer();
  browser = await launchChromium();
  mkdirSync(out, { recursive: true });
});
afterEach(async () => {
  await Promise.all([...contexts].map((c) => c.close()));
  contexts.clear();
});
after(async () => {
  await browser?.close();
  await server?.stop();
});

/** A player: its page, and every console error or warning and page error it logged. */
export interface Player {
  name: string;
  page: Page;
  problems: string[];
}

const contexts = new Set<BrowserContext>();

/** newContext is a fresh browser context (a guest of its own) of the given viewport, closed after the test. */
export async function newContext(viewport = desktop): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport });
  contexts.add(context);
  return context;
}

/** open starts a player in a fresh browser context (its own guest) at url, without naming it yet. */
export async function open(name: string, url: string, viewport = desktop): Promise<Player> {
  const context = await newContext(viewport);
  await context.grantPermissions(["clipboard-read", "clipboard-write"]);
  const page = await context.newPage();
  page.setDefaultTimeout(patience);
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

/**
 * nameForm waits for the page's name form (#welcome, shown by session.js
 * when the tab has no token the server accepts). Should the page show
 * something else instead, it fails at once saying what: the page's own
 * view (#app: it signed in with a token it kept) or its "Can't start"
 * alert (the server's first answer was not a 401: its sentence says
 * which). Should it show nothing at all within patience, the page's
 * problems say why (a script that did not load is a console error). A
 * bare timeout on the form's field told none of this.
 */
export async function nameForm(p: Player): Promise<void> {
  const form = p.page.locator("#welcome:visible");
  const signedIn = p.page.locator("#app:visible");
  const halted = p.page.locator("body > section[role=alert]:visible");
  const page = () => `${p.page.url()}; the page logged: ${p.problems.join(" | ") || "nothing"}`;
  try {
    await form.or(signedIn).or(halted).first().waitFor();
  } catch (e) {
    throw new Error(`${p.name}: no name form (${(e as Error).message.split("\n")[0]}) at ${page()}`);
  }
  if (await form.isVisible()) return;
  const instead = await halted.isVisible()
    ? `its "Can't start" alert: ${(await halted.innerText()).replace(/\s*\n\s*/g, ": ")}`
    : `the signed-in page of ${JSON.stringify(await p.page.locator(".who").textContent())} (a token it kept was accepted)`;
  throw new Error(`${p.name}: no name form, the page showed ${instead} at ${page()}`);
}

/** signIn enters the player's name in the page's name form (see nameForm). */
export async function signIn(p: Player, button = "Play"): Promise<void> {
  await nameForm(p);
  await p.page.getByLabel("Your name").fill(p.name);
  await p.page.getByRole("button", { name: button }).click();
  await p.page.locator(".who").filter({ hasText: p.name }).waitFor();
}

/** player opens the lobby as a new player called name. */
export async function player(name: string, viewport = desktop, base = server.url): Promise<Player> {
  const p = await open(name, `${base}/demo/`, viewport);
  await signIn(p);
  return p;
}

/**
 * shoot checks the page fits 390 px (no horizontal scroll) and that its
 * pattern attributes compile under the v flag (as browsers compile them),
 * and saves screenshots of step at 390 px and at desktop width.
 */
export async function shoot(p: Player, step: string): Promise<void> {
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
export function clean(...players: Player[]): void {
  for (const p of players) assert.deepEqual(p.problems, [], `${p.name} logged problems`);
}

/** roomOf is the id in a room page's URL. */
export function roomOf(p: Player): string {
  return new URL(p.page.url()).searchParams.get("id") ?? "";
}

/** guest is a Node client signed in as a new guest (to fill the lobby). */
export async function guest(name: string, base = server.url): Promise<RealSync> {
  const c = new RealSync({ baseUrl: base });
  await c.guest(name);
  return c;
}

export const row = (p: Player, name: string) => p.page.locator("#players li").filter({ hasText: name });
