function neverCalled() {
  console.log("never");
}
function called(n) {
  const y = n + 1;
  return y;
}
console.log(called(1));
