// The correction step's public surface: the page pipeline builds its corrector with
// `createCorrector(config.correction)`; the HTTP intake validates `preset` with `isPreset`.
export { createCorrector, NO_PROVIDER_WARNING } from './create-corrector.ts';
export { DEFAULT_PRESET, isPreset, PRESETS, type Preset } from './presets.ts';
