// A recognizer's character confidence made to mean what it says: the share of characters read
// at that confidence that are right, measured on validation lines (train/calibrate_confidence.ts).
// The map is non-decreasing and piecewise linear between its points, flat beyond the first and
// the last, so the order of confidences, and every rule that compares them, is kept.

/** [model confidence, share right] pairs, both 0..1, in increasing order of both. */
export type CalibrationPoints = readonly (readonly [number, number])[];

export function calibrateConfidence(confidence: number, points: CalibrationPoints): number {
  if (points.length === 0) return confidence;
  if (confidence <= points[0][0]) return points[0][1];
  for (let index = 1; index < points.length; index += 1) {
    const [x1, y1] = points[index];
    if (confidence <= x1) {
      const [x0, y0] = points[index - 1];
      return x1 === x0 ? y1 : y0 + ((confidence - x0) * (y1 - y0)) / (x1 - x0);
    }
  }
  return points[points.length - 1][1];
}
