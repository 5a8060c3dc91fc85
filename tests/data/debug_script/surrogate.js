// Line 4 holds a string with half of a surrogate pair (an emoji cut in two).
const s = "\ud83d\ude00".slice(0, 1);
const holder = { [s]: s, whole: "\ud83d\ude00" };
console.log(s.length, Object.keys(holder).length);
