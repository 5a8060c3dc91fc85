// TypeScript source for the source-map test: Node runs dist/test.js, the breakpoint names this file.
interface Point {
  x: number;
  y: number;
}

function norm(point: Point): number {
  const squared: number = point.x * point.x + point.y * point.y;
  return Math.sqrt(squared);
}

const points: Point[] = [
  { x: 3, y: 4 },
  { x: 6, y: 8 },
];
for (const point of points) {
  console.log(norm(point));
}
