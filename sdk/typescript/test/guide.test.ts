// docs/GUIDE.md's browser game, followed as written: its commands make a
// project in a temp dir and install the packed SDK and esbuild into it, its
// files (the code blocks marked file=…) are written there as they are, the
// game is type-checked strictly, built and served by the guide's esbuild
// command, and two players play it in headless Chromium against a real
// realsyncd started with the guide's CORS setting, to a win, with no
// console error. The picture of the finished game (test-output/guide-game.png)
// is the one in the guide (docs/img/guide-game.png).
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, execSync, spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Browser, Page } from "playwright-core";
import { launchChromium, freePort, patience, startServer, type Server } from "./server.js";

const sdk = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const root = path.resolve(sdk, "../..");
const out = path.join(sdk, "test-output");
const guide = readFileSync(path.join(root, "docs/GUIDE.md"), "utf8");

/** section is the guide's text from a "## " heading to the next one. */
function section(heading: string): string {
  const i = guide.indexOf(`\n## ${heading}\n`);
  assert.ok(i >= 0, `no "## ${heading}" in docs/GUIDE.md`);
  const rest = guide.slice(i + 1);
  const j = rest.indexOf("\n## ", 1);
  return j < 0 ? rest : rest.slice(0, j);
}

/** blocks are a section's fenced code blocks: their info string and text. */
function blocks(text: string): { info: string; code: string }[] {
  return [...text.matchAll(/```([^\n]*)\n([\s\S]*?)\n```/g)].map((m) => ({ info: m[1], code: m[2] }));
}

const game = section("3. The browser game");
const shell = blocks(game).filter((b) => b.info === "sh").map((b) => b.code);
const files = blocks(game).filter((b) => /\bfile=/.test(b.info))
  .map((b) => ({ name: /\bfile=(\S+)/.exec(b.info)![1], code: b.code }));

let server: Server;
let browser: Browser;
let esbuild: ChildProcess | undefined;
let dir: string;

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "realsync-guide-"));
  mkdirSync(out, { recursive: true });
});
function stopEsbuild(): void {
  if (esbuild?.pid && esbuild.exitCode === null) {
    try { process.kill(-esbuild.pid, "SIGKILL"); } catch { /* gone already */ }
  }
}
after(async () => {
  stopEsbuild();
  await browser?.close();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("docs/GUIDE.md, the browser game", () => {
  it("is built as written and two players play it to a win", async () => {
    // The project: the guide packs the SDK in the repository, then makes
    // ../tictactoe and installs the tarball and esbuild there.
    assert.equal(shell.length, 3, "the guide's browser part has three sh blocks: project, server, esbuild");
    const [setup, serverCmd, serve] = shell;
    const lines = setup.split("\n");
    assert.equal(lines[0], "(cd sdk/typescript && npm ci && npm pack)");
    // dist is built (this test runs from it): npm pack's prepack would
    // build it again, the same files
    const tgz = execFileSync("npm", ["pack", "--silent", "--ignore-scripts", "--pack-destination", dir], { cwd: sdk, encoding: "utf8" }).trim().split("\n").pop()!;
    const named = /(\S+\.tgz)/.exec(setup)![1];
    assert.equal(path.basename(named), tgz, "the guide names the tarball npm pack makes");
    const project = path.join(dir, "tictactoe");
    const steps = lines.slice(1).join("\n")
      .replace("mkdir ../tictactoe && cd ../tictactoe", `mkdir ${project} && cd ${project}`)
      .replace(named, path.join(dir, tgz))
      .replace(/^npm install /m, "npm install --prefer-offline --no-audit --no-fund --loglevel=error ");
    execSync(`set -e\n${steps}`, { cwd: root, shell: "/bin/bash", stdio: ["ignore", "ignore", "inherit"] });

    // The files, as written; the page calls the test's server.
    assert.deepEqual(files.map((f) => f.name).sort(), ["game.ts", "public/index.html"]);
    const port = await freePort();
    const origin = `http://127.0.0.1:${port}`;
    assert.match(serverCmd, /^REALSYNC_CORS_ORIGINS=http:\/\/localhost:5173 go run \.\/cmd\/realsyncd$/);
    server = await startServer({ REALSYNC_CORS_ORIGINS: origin });
    for (const f of files) {
      const code = f.name === "game.ts" ? f.code.replace('"http://localhost:8080"', JSON.stringify(server.url)) : f.code;
      assert.ok(f.name !== "game.ts" || code !== f.code, "game.ts calls http://localhost:8080");
      writeFileSync(path.join(project, f.name), code + "\n");
    }

    // Strict types: esbuild strips them without checking.
    execFileSync(process.execPath, [path.join(sdk, "node_modules/typescript/bin/tsc"), "--strict", "--noEmit",
      "--target", "es2022", "--module", "esnext", "--moduleResolution", "bundler", "--lib", "es2022,dom",
      "game.ts"], { cwd: project, stdio: "inherit" });

    // The guide's esbuild command, on a loopback port of the test's.
    assert.match(serve, /--serve=5173$/);
    // Its own process group (npx starts esbuild as a child), and stdin kept
    // open: esbuild's server stops when its stdin closes.
    esbuild = spawn("bash", ["-c", serve.replace("--serve=5173", `--serve=127.0.0.1:${port}`)],
      { cwd: project, stdio: ["pipe", "ignore", "inherit"], detached: true });
    process.on("exit", stopEsbuild);
    for (let i = 0; ; i++) {
      const ok = await fetch(`${origin}/game.js`).then((r) => r.ok, () => false);
      if (ok) break;
      assert.ok(i < 200, "esbuild did not serve the game");
      await new Promise((r) => setTimeout(r, 100));
    }

    browser = await launchChromium();
    const problems: string[] = [];
    const player = async (name: string): Promise<Page> => {
      const page = await (await browser.newContext({ viewport: { width: 420, height: 560 } })).newPage();
      page.setDefaultTimeout(patience);
      page.on("console", (m) => {
        if (m.type() === "error" || m.type() === "warning") problems.push(`${name}: console ${m.type()}: ${m.text()}`);
      });
      page.on("pageerror", (e) => problems.push(`${name}: page error: ${e.message}`));
      await page.goto(origin);
      await page.fill("#name", name);
      await page.click("text=Play");
      return page;
    };
    const status = (page: Page, text: string) => page.waitForSelector(`#status:text-is("${text}")`);

    const x = await player("alice");
    await status(x, "Waiting for an opponent…");
    const o = await player("bob");
    await status(x, "Your turn.");
    await status(o, "Their turn.");
    // X takes the top row; O answers in the middle row.
    for (const [page, other, cell] of [[x, o, 1], [o, x, 4], [x, o, 2], [o, x, 5]] as const) {
      await page.click(`[aria-label="cell ${cell}"]`);
      await status(other, "Your turn.");
    }
    await x.click('[aria-label="cell 3"]');
    await status(x, "X wins!");
    await status(o, "X wins!");
    for (const page of [x, o]) {
      const cells = await page.$$eval("#board button", (bs) => bs.map((b) => b.textContent).join(""));
      assert.equal(cells, "XXXOO", "both players see the same board");
      assert.equal(await page.$$eval("#board button:not([disabled])", (bs) => bs.length), 0, "no move after a win");
    }
    assert.deepEqual(problems, []);

    // The guide's picture: the two windows side by side.
    const shots = await Promise.all([x, o].map(async (p) => (await p.screenshot()).toString("base64")));
    const pair = await (await browser.newContext({ viewport: { width: 860, height: 560 } })).newPage();
    await pair.setContent(`<body style="margin:0;display:flex;gap:20px;background:#888">${
      shots.map((s) => `<img src="data:image/png;base64,${s}" width="420" height="560">`).join("")}</body>`);
    await pair.screenshot({ path: path.join(out, "guide-game.png") });
  });
});
