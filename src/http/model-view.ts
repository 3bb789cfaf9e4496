// The status body of a model, from the models projection (docs/models.md): every field always
// present, null where not known yet; `progress` once the trainer has recorded an epoch, `figures`
// once the model is trained.
import type { ModelRow } from '../../projections/models.ts';

export const modelStatusUrl = (baseUrl: string, modelId: string): string => `${baseUrl}/v1/models/${modelId}`;

/**
 * The status's own warning for a model that reads its held-out lines no better than its base: worse
 * or equal, or better by less than chance gives on so few lines (ADR 0031).
 */
function notBetterWarning(row: Pick<ModelRow, 'cer_before' | 'cer_after' | 'lines_validation'>): string {
  const percent = (value: number | null) => `${((value ?? 0) * 100).toFixed(1)} %`;
  const figures = `CER ${percent(row.cer_before)} before, ${percent(row.cer_after)} after`;
  if ((row.cer_after ?? 0) >= (row.cer_before ?? 0))
    return `not better than its base model on the held-out lines (${figures}): kept, but jobs read better without it`;
  return (
    `not better than its base model on the held-out lines by more than chance gives on ${row.lines_validation ?? 'so few'} lines ` +
    `(${figures}): kept; compare it with the default model on pages of your own before relying on it`
  );
}

export function modelStatusBody(row: ModelRow, baseUrl: string) {
  const trained = row.cer_before !== null && row.cer_after !== null;
  return {
    model_id: row.model_id,
    label: row.label,
    state: row.state,
    base_model: row.base_model,
    created_at: row.created_at.toISOString(),
    started_at: row.started_at?.toISOString() ?? null,
    finished_at: row.finished_at?.toISOString() ?? null,
    pages_total: row.pages_total,
    lines_total: row.lines_total,
    lines_skipped: {
      no_text: row.lines_skipped.noText,
      no_geometry: row.lines_skipped.noGeometry,
      outside_image: row.lines_skipped.outsideImage,
      too_small: row.lines_skipped.tooSmall,
      unlearnable_characters: row.lines_skipped.unlearnableCharacters,
    },
    progress:
      row.epoch === null
        ? null
        : {
            epoch: row.epoch,
            train_loss: row.train_loss,
            validation_cer: row.validation_cer,
            history: row.progress_history,
          },
    figures: trained
      ? {
          cer_before: row.cer_before,
          cer_after: row.cer_after,
          wer_before: row.wer_before,
          wer_after: row.wer_after,
          lines_train: row.lines_train,
          lines_validation: row.lines_validation,
          training_minutes: row.training_minutes,
          not_better: row.not_better === true,
        }
      : null,
    warnings: row.not_better === true ? [...row.warnings, notBetterWarning(row)] : row.warnings,
    error_message: row.error_message,
    status_url: modelStatusUrl(baseUrl, row.model_id),
  };
}
