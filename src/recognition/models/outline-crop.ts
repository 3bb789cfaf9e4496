// The default crop height of an outlined line, apart from the code that crops: the model
// manifest (models/model-manifest.ts) fills the segmenter's `cropHeight` from it and
// outlined-line.ts uses it for uploaded lines; this module imports nothing, so the manifest does
// not depend on the layout code through it.

/**
 * The height of the piece read for an outlined line, as a share of its outline's extent across
 * the writing (the piece stays centred on the outline). Outlines drawn in eScriptorium or
 * Transkribus hold the ascenders and descenders and reach towards the next line, and the
 * recognizers then add their own context (`cropHeightScale`, 1.2 for ours), so reading the
 * whole extent gives a crop much taller than the detected lines the recognizers were tuned on.
 * Chosen on the 52 htr-pages val pages (docs/accuracy.md, "Whole pages"): with `hwr-htr` 3 our
 * CER on their ground-truth lines is 16.7 % at 1, 15.8 % at 0.833, 17.0 % at 0.7.
 */
export const OUTLINE_CROP_HEIGHT = 0.833;
