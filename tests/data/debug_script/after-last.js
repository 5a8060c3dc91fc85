let n = 0;
setInterval(() => { n++; }, 10);
function never() {
  return 1;
}
