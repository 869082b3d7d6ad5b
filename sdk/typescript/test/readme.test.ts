// The README's TypeScript SDK example is true: its code block, taken from
// README.md as written, type-checks strictly against the built package and
// runs against a real realsyncd, printing what its comments say, twice in a
// row (the second run joins the first one's room as a player who is not the owner).
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startServer, type Server } from "./server.js";

const sdk = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const root = path.resolve(sdk, "../..");

let server: Server;
before(async () => (server = await startServer()));
after(async () => server.stop());

/** example is the first ts block of the README's "TypeScript SDK" section. */
function example(): string {
  const readme = readFileSync(path.join(root, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("## TypeScript SDK\n"));
  const m = /```ts\n([\s\S]*?)\n```/.exec(section.slice(0, section.indexOf("\n## ", 1)));
  assert.ok(m, "no ts block in the README's TypeScript SDK section");
  return m[1];
}

describe("the README's TypeScript SDK example", () => {
  it("compiles strictly and runs as its comments say", () => {
    const code = example();
    assert.ok(code.includes('"http://localhost:8080"'));
    const dir = path.join(sdk, "test-output", "readme");
    mkdirSync(dir, { recursive: true });
    const file = path.join(dir, "example.ts");
    writeFileSync(file, code.replace('"http://localhost:8080"', JSON.stringify(server.url)));
    // "@realsync/sdk" resolves to this package (its exports: dist/src), as for a game that installed it.
    execFileSync(process.execPath, [path.join(sdk, "node_modules/typescript/bin/tsc"), "--strict", "--target", "es2022",
      "--module", "nodenext", "--moduleResolution", "nodenext", "--types", "node", "--rootDir", dir, "--outDir", dir, file], { stdio: "inherit" });
    // Run twice, as a newcomer does: the second run quick-joins the first run's
    // room as player 2, a player who is not the owner (its state patch must
    // still be allowed by the default state policy).
    // (execFileSync throws when the example fails, e.g. a 403 on that patch.)
    for (const run of [1, 2]) {
      const out = execFileSync(process.execPath, [path.join(dir, "example.js")], { encoding: "utf8", timeout: 30000 });
      for (const want of [`Quick match ${run}`, "404 ROOM_NOT_FOUND", "[ 'Quick match' ]", "closed: closed"]) {
        assert.ok(out.includes(want), `run ${run}: no ${JSON.stringify(want)} in the output:\n${out}`);
      }
    }
  });
});
