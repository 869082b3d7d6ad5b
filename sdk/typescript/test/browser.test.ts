// Two headless Chromium pages play the demo against a real realsyncd: one
// creates a room, the other finds it in the live lobby and joins, a state
// edit in one shows up in the other. Screenshots go to test-output/.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { chromium, type Browser, type Page } from "playwright-core";
import { startServer, type Server } from "./server.js";

let server: Server;
let browser: Browser;
const out = new URL("../../test-output/", import.meta.url).pathname;

before(async () => {
  server = await startServer();
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  mkdirSync(out, { recursive: true });
});
after(async () => {
  await browser?.close();
  await server?.stop();
});

/** player opens the demo in a fresh context (its own guest) named name. */
async function player(name: string): Promise<Page> {
  const page = await (await browser.newContext()).newPage();
  page.on("dialog", (d) => d.accept(name));
  page.on("pageerror", (e) => assert.fail(`${name}: page error ${e.message}`));
  await page.goto(`${server.url}/demo/`);
  await page.locator(".who").filter({ hasText: name }).waitFor();
  return page;
}

describe("the demo in a browser", () => {
  it("create, find in the live lobby, join, edit state, chat", async () => {
    const alice = await player("alice");
    const bob = await player("bob");

    await alice.fill("#create [name=name]", "Browser Arena");
    await alice.click("#create button");
    await alice.waitForURL(/room\.html/);
    await alice.locator("#players li").filter({ hasText: "alice" }).waitFor();

    const row = bob.locator("#rooms tr").filter({ hasText: "Browser Arena" });
    await row.waitFor(); // arrived through the live lobby, no reload
    await row.getByRole("button", { name: "Join" }).click();
    await bob.waitForURL(/room\.html/);
    await alice.locator("#players li").filter({ hasText: "bob" }).locator(".dot.on").waitFor();

    await alice.fill("#patch [name=key]", "score");
    await alice.fill("#patch [name=value]", "42");
    await alice.click("#patch button");
    await bob.locator("#state").filter({ hasText: '"score": 42' }).waitFor();

    await bob.fill("#say [name=text]", "gl hf");
    await bob.click("#say button");
    await alice.locator("#chat li").filter({ hasText: "bob: gl hf" }).waitFor();

    await alice.screenshot({ path: out + "room-alice.png", fullPage: true });
    await bob.screenshot({ path: out + "room-bob.png", fullPage: true });
    assert.match(await bob.locator("#state").textContent() ?? "", /"score": 42/);
  });
});
