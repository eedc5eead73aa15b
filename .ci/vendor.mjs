// Copies the browser files package.json names under "vendor" from node_modules (installed by
// `npm ci` from package-lock.json) into static/vendor/. A source ending in "*.ext" copies every
// file of that extension in its folder into the destination folder.
import { copyFileSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const here = join(root, "static", "vendor");
const { vendor } = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));

for (const [source, dest] of Object.entries(vendor)) {
  const from = join(root, "node_modules", source);
  if (source.includes("*")) {
    const folder = dirname(from);
    const ext = source.split("*")[1];
    mkdirSync(join(here, dest), { recursive: true });
    for (const name of readdirSync(folder).filter((n) => n.endsWith(ext))) {
      copyFileSync(join(folder, name), join(here, dest, name));
    }
  } else {
    mkdirSync(dirname(join(here, dest)), { recursive: true });
    copyFileSync(from, join(here, dest));
  }
}
console.log(`static/vendor: ${Object.keys(vendor).length} entries copied`);
