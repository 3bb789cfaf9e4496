// Receiving a ground-truth upload (POST /v1/models, and the portal's Models page): refused unread
// where no trainer can run, then as a scan upload is (size, disk), streamed to a temp file, and
// queued as a training (use-cases/models.ts), answered 202 with the model.
import { rm } from 'node:fs/promises';
import type { Context, Middleware, Next } from 'koa';
import { tempUploadDir } from '../intake/temp-uploads.ts';
import type { Runtime } from '../runtime/runtime.ts';
import { TRAINING_INSTRUCTION } from '../runtime/trainer-probe.ts';
import { ModelError } from '../use-cases/errors.ts';
import { checkLabel, queueModelTraining } from '../use-cases/models.ts';
import type { AuthContext } from './authenticate.ts';
import { modelStatusUrl } from './model-view.ts';
import { parseUpload, refuseOversizedUpload, refuseWhenDiskLow, type UploadField, uploadedFile } from './scan-upload.ts';
import { field, parseModelField } from './submission-options.ts';

const TRAINING_UPLOAD: UploadField = {
  name: 'training_zip',
  what: 'ground truth',
  missing: () =>
    new ModelError(
      'training_zip_missing',
      'The multipart field training_zip (a ZIP of page images with their PageXML or ALTO files) is required.',
    ),
};

/**
 * The middleware that receives ground truth and queues its training, after the caller's
 * authentication (an API key's, or the portal's session); ctx.body is the submission.
 */
export function receiveTrainingUpload(runtime: Runtime): Middleware[] {
  const { config } = runtime;
  return [
    refuseWithoutTrainer(runtime),
    refuseOversizedUpload(config, TRAINING_UPLOAD),
    refuseWhenDiskLow(config),
    parseUpload(config, tempUploadDir(config.dataDir), TRAINING_UPLOAD),
    async (ctx) => {
      const file = uploadedFile(ctx, TRAINING_UPLOAD);
      try {
        const auth = ctx.state.auth as AuthContext;
        const fields = (ctx.request.body ?? {}) as Record<string, string | string[]>;
        const label = checkLabel(field(fields, 'label'));
        const baseModel = parseModelField(field(fields, 'base_model'), 'base_model');
        const model = await queueModelTraining(runtime, {
          accountId: auth.accountId,
          keyId: auth.actor ? null : auth.keyId,
          actor: auth.actor,
          upload: { path: file.filepath, name: file.originalFilename ?? TRAINING_UPLOAD.name },
          label,
          baseModel,
          requestId: ctx.state.requestId,
        });
        ctx.state.log.info(
          { model_id: model.model_id, account_id: auth.accountId, pages: model.pages_total, lines: model.lines_total },
          'model training queued',
        );
        const statusUrl = modelStatusUrl(config.baseUrl, model.model_id);
        ctx.status = 202;
        ctx.set('Location', statusUrl);
        ctx.body = {
          model_id: model.model_id,
          state: 'queued',
          label: model.label,
          created_at: model.created_at.toISOString(),
          status_url: statusUrl,
          lines_total: model.lines_total,
          pages_total: model.pages_total,
        };
      } finally {
        await rm(file.filepath, { force: true });
      }
    },
  ];
}

/** Where no trainer can run, a training is refused before its upload is read (docs/models.md, "Where training runs"). */
export function refuseWithoutTrainer(runtime: Runtime) {
  return async (ctx: Context, next: Next): Promise<void> => {
    if (!(await runtime.trainer()).available) {
      ctx.set('Connection', 'close');
      throw new ModelError('training_unavailable', TRAINING_INSTRUCTION);
    }
    await next();
  };
}
