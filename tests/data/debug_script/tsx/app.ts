// Breakpoint lines used by the tests: util.ts line 9 (code) and line 2 (an interface).
import { scale } from "./util.ts";

const points = [1, 2, 3].map((n) => scale({ x: n, y: n * 2 }, 10));
console.log(JSON.stringify(points));
