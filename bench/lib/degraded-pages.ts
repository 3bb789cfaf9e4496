// Harder readings of the same pages: the correction guards' thresholds are chosen on the tune half
// of the val pages (bench/correction-guards.ts), whose hands our recognizer reads far better than
// the held-out half's (11 % against 21 % CER), so the tune half holds few of the lines read so wrong
// that only the image can judge their correction. Each variant here degrades a page's image the way
// a poor scan or a faint hand does (blurred, scanned small, faded), so that the recognizer reads
// the same hands worse; the ground truth stays the page's own. Deterministic (sharp, no randomness).
// Measured (docs/correction.md, "Guard evaluation"): they are read worse (blurred 47.6 %, small
// 34.5 %, faded 19.0 % CER against 11.2 %) but not the way an unfamiliar hand is: the recognizer is
// unsure on them where it is confidently wrong on a new hand, so their true lines lose little and
// they add constraints (any text is cheap on flat frames), not the lines the guard refuses. Used by
// `bench:correction-guards --degraded …`, not by default.
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import type { EvalPage } from './htr-pages.ts';

export const DEGRADATIONS = ['blurred', 'small', 'faded'] as const;
export type Degradation = (typeof DEGRADATIONS)[number];

/** The pages with their images degraded (written once to `imageDir`), named `PAGE~degradation`. */
export async function degradedPages(pages: readonly EvalPage[], degradation: Degradation, imageDir: string): Promise<EvalPage[]> {
  mkdirSync(imageDir, { recursive: true });
  const out: EvalPage[] = [];
  for (const page of pages) {
    const name = `${page.name}~${degradation}`;
    const imagePath = path.join(imageDir, `${name}.jpg`);
    if (!existsSync(imagePath))
      await sharp(await degrade(page, degradation))
        .jpeg({ quality: 85 })
        .toFile(imagePath);
    out.push({ ...page, name, imagePath });
  }
  return out;
}

async function degrade(page: EvalPage, degradation: Degradation): Promise<Buffer> {
  const image = sharp(page.imagePath).grayscale();
  switch (degradation) {
    // a soft focus: strokes run together, thin ones fade
    case 'blurred':
      return image.blur(3.5).png().toBuffer();
    // scanned at a fifth of the resolution and scaled back: letters lose their detail
    case 'small': {
      const small = await image
        .resize({ width: Math.round(page.width * 0.2) })
        .png()
        .toBuffer();
      return sharp(small).resize({ width: page.width }).png().toBuffer();
    }
    // pale ink on a light, soft page: contrast cut to under a third
    case 'faded':
      return image.linear(0.3, 165).blur(1.6).png().toBuffer();
  }
}
