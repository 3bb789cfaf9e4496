// How models are named on the portal's pages (Models, New job).
import type { ModelRow } from '../../projections/models.ts';

/** What the shipped recognizer is called on these pages. */
export const STANDARD = 'Standard model';

/** A model's name on a page: its label, else the start of its id. */
export const modelName = (row: Pick<ModelRow, 'label' | 'model_id'>): string => row.label ?? `Model ${row.model_id.slice(0, 8)}`;

/** A ready model as a choice in a list: its name, and whether it reads worse than its base. */
export const modelChoice = (row: Pick<ModelRow, 'label' | 'model_id' | 'not_better'>): string =>
  `${modelName(row)}${row.not_better ? ' (not better than its base)' : ''}`;
