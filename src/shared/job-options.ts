// The choices a job is submitted with, as lists the server and the client share: the domain
// checks a submission against them and records them in JobQueued (domain/events.ts), the
// correction step has a prompt per preset (recognition/correction/presets.ts), and the client
// offers and checks them (src/client/types.ts, `hwr submit`).

/** The steps a job runs, in order; `pipeline_steps` is always a prefix ending with export. */
export const PIPELINE_STEPS = ['layout', 'recognition', 'correction', 'export'] as const;
export type PipelineStep = (typeof PIPELINE_STEPS)[number];

export const LLM_TIERS = ['cheap', 'balanced', 'best'] as const;
export type LlmTier = (typeof LLM_TIERS)[number];

export const PDF_FORMATS = ['pdfa-2b', 'pdf', 'none'] as const;
export type PdfFormat = (typeof PDF_FORMATS)[number];

/** Document types for correction (docs/correction.md). */
export const PRESETS = ['generic', 'letter', 'diary', 'register', 'form', 'historical'] as const;
export type Preset = (typeof PRESETS)[number];
