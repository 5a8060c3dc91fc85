// Counts from 0 to argv[2] (default 3); with 0 the breakpoint line (5) is never reached.
const limit = Number(process.argv[2] ?? 3);
let total = 0;
for (let i = 0; i < limit; i++) {
  total += i;
}
console.log(`total ${total}`);
