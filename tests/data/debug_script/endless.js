// Runs forever without reaching line 11; writes its pid to argv[2] so a test can check it is gone.
const fs = require("node:fs");
if (process.argv[2]) fs.writeFileSync(process.argv[2], String(process.pid));

let ticks = 0;
setInterval(() => {
  ticks += 1;
}, 20);

function never() {
  return ticks;
}
module.exports = { never };
