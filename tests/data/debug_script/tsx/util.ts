// A TypeScript module that tsx compiles in memory: its generated code is all on one line.
export interface Point {
  x: number;
  y: number;
}

export function scale(point: Point, factor: number): Point {
  const scaled: Point = { x: point.x * factor, y: point.y * factor };
  return scaled;
}
