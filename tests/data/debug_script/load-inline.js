// Requires the compiled TypeScript (inline source map) only after a delay, so it is loaded lazily.
setTimeout(() => {
  require("./ts/out-inline/test.js");
}, 10);
