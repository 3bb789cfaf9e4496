// Writes test/fixtures/ctc-score/lines.json: the output frames (raw logits) of a few real lines,
// as the service's recognizer computed them for a val page of htr-pages, with texts to score:
// the recognised text, the ground truth aligned under it, and that ground truth cut short and
// padded with words. train/ctc_reference.py then adds PyTorch's ctc_loss for each text, the
// reference test/unit/recognition-ctc-score.test.ts checks the scorer against. Run once:
//
//   node bench/correction-guards.ts            # reads the pages and keeps their frames in /tmp/hwr-correction-guards
//   node train/ctc_fixture.ts && python3 train/ctc_reference.py test/fixtures/ctc-score/lines.json
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { alignedTruth } from '../bench/lib/aligned-truth.ts';
import { DEFAULT_HTR_PAGES, pagesFromDataset } from '../bench/lib/htr-pages.ts';
import { recognisedPages } from '../bench/lib/recognised-pages.ts';
import { allLines } from '../src/recognition/page/page-result.ts';

const CACHE = '/tmp/hwr-correction-guards';
const PAGE = 'hooker_JDH_2_16_85_002';
const pages = pagesFromDataset(DEFAULT_HTR_PAGES, 'val', path.join(CACHE, 'images')).filter((page) => page.name === PAGE);
const [page] = await recognisedPages(pages, path.join(CACHE, 'read-beam'), (message) => console.error(message));
const lines = allLines(page.page);
const truth = alignedTruth(
  lines.map((line) => line.text),
  page.groundTruth,
);
const chosen = lines
  .map((line, index) => ({ line, truth: truth[index], frames: page.lineFrames.get(line.id) }))
  .filter((entry) => entry.frames && entry.frames.steps <= 160 && entry.truth.length > 8)
  .slice(0, 3);
const classes = chosen[0].frames!.classes;
writeFileSync(
  path.resolve(import.meta.dirname, '../test/fixtures/ctc-score/lines.json'),
  `${JSON.stringify(
    {
      source: `htr-pages val page ${PAGE} (CC-BY-SA-4.0, images (c) RBG Kew), read by models/default (hwr-htr 3.3, beam decoder)`,
      classes: { symbols: classes.symbols, blank: classes.blank, space: classes.space },
      lines: chosen.map(({ line, truth: text, frames }) => ({
        id: line.id,
        steps: frames!.steps,
        logits: Buffer.from(frames!.scores.buffer, frames!.scores.byteOffset, frames!.scores.byteLength).toString('base64'),
        texts: [line.text, text, text.replace('e', 'c'), text.split(' ').slice(0, -2).join(' '), `${text} and the`],
      })),
    },
    null,
    1,
  )}\n`,
);
