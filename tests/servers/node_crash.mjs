// An MCP server that crashes on the first message it reads, as a Node server does: an uncaught
// Error with a property, so Node prints the source line, the error, its stack, the property and
// its version footer on stderr, then exits 1.
process.stdin.on("data", () => {
  const error = new Error("ENOENT: no such file or directory, open '/srv/missing.json'");
  error.code = "ENOENT";
  throw error;
});
