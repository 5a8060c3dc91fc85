// Line 4 is a comment and line 5 blank: a breakpoint there stops at line 6.
function step(i) {
  const doubled = i * 2;
  // the next line is blank

  return doubled;
}
for (let i = 0; i < 2; i++) step(i);
