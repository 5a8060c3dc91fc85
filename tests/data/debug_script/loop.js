// CommonJS loop: the breakpoint line (21) sees one value of every JavaScript type.
const circular = { name: "loop" };
circular.self = circular;

const values = [
  42,
  "text",
  { a: 1, nested: { b: [1, 2] } },
  [1, "two", null],
  null,
  undefined,
  circular,
  function greet() { return "hi"; },
  10n ** 20n,
  true,
  Symbol("tag"),
];

function visit(value, index) {
  const onlyHere = `item-${index}`;
  return onlyHere;
}

for (let i = 0; i < values.length; i++) {
  visit(values[i], i);
}
