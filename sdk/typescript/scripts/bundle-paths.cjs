// bundle-paths rewrites the module-path comments esbuild writes in a
// bundle ("// <path>/node_modules/<package>/...") to start at
// node_modules/, so that the bundle is the same wherever node_modules is
// (a worktree that links to another checkout's, a machine's own path):
// CI checks that the committed bundle is what a clean checkout builds.
const fs = require("fs");
const file = process.argv[2];
const text = fs.readFileSync(file, "utf8");
fs.writeFileSync(file, text.replace(/^\/\/ [^\n]*?\/node_modules\//gm, "// node_modules/"));
