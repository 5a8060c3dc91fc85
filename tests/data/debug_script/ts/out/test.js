function norm(point) {
    const squared = point.x * point.x + point.y * point.y;
    return Math.sqrt(squared);
}
const points = [
    { x: 3, y: 4 },
    { x: 6, y: 8 },
];
for (const point of points) {
    console.log(norm(point));
}
//# sourceMappingURL=test.js.map