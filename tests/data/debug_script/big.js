// Line 5 runs argv[3] times (default 1) with a string of argv[2] characters (default 6 MiB).
const size = Number(process.argv[2] ?? 6 * 1024 * 1024);
const text = "x".repeat(size);
for (let i = 0; i < Number(process.argv[3] ?? 1); i++) {
  console.log(text.length + i);
}
