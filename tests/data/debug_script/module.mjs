// ES module: Node names it by file:// URL. Breakpoint line 7 sees the block-local `upper`.
import { basename } from "node:path";

const seen = [];
for (const word of ["alpha", "beta", basename("/x/gamma")]) {
  const upper = word.toUpperCase();
  seen.push(upper);
}
console.log(seen.join(","));
