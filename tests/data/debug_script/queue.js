// Line 4 runs once per item; the tests' expression takes from the queue.
const queue = ["{not json", "{\"ok\": 1}", "[2]"];
for (let round = 0; round < 2; round++) {
  console.log("round", round, queue.length);
}
console.log("left", queue.length);
