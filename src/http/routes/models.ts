// Models trained on an account's ground truth (docs/models.md): POST /v1/models uploads ground
// truth and queues a training, GET lists the account's models and reads one, DELETE cancels a
// training or retires a ready model, GET …/events is a model's history. A model is visible only
// to keys of the account that trained it; for any other key it does not exist (404).
import { rm } from 'node:fs/promises';
import type Router from '@koa/router';
import type { Context, Next } from 'koa';
import { modelStreamId } from '../../../domain/events.ts';
import { Rejection } from '../../../domain/rejections.ts';
import { tempUploadDir } from '../../intake/temp-uploads.ts';
import type { Runtime } from '../../runtime/runtime.ts';
import { TRAINING_INSTRUCTION } from '../../runtime/trainer-probe.ts';
import { eventJson } from '../../store/event-json.ts';
import { readStream } from '../../store/read-stream.ts';
import { ModelError } from '../../use-cases/errors.ts';
import { accountModel, accountModels, cancelOrRetireModel, checkLabel, queueModelTraining } from '../../use-cases/models.ts';
import type { AuthContext, Authenticate } from '../authenticate.ts';
import { modelStatusBody, modelStatusUrl } from '../model-view.ts';
import { parseUpload, refuseOversizedUpload, refuseWhenDiskLow, type UploadField, uploadedFile } from '../scan-upload.ts';
import { field, parseModelField } from '../submission-options.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const TRAINING_UPLOAD: UploadField = {
  name: 'training_zip',
  what: 'ground truth',
  missing: () =>
    new ModelError(
      'training_zip_missing',
      'The multipart field training_zip (a ZIP of page images with their PageXML or ALTO files) is required.',
    ),
};

export function registerModelRoutes(router: Router, runtime: Runtime, authenticate: Authenticate): void {
  const { config } = runtime;
  const { baseUrl } = config;

  router.post(
    '/v1/models',
    authenticate,
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
        ctx.status = 202;
        ctx.set('Location', modelStatusUrl(baseUrl, model.model_id));
        ctx.body = {
          model_id: model.model_id,
          state: 'queued',
          label: model.label,
          created_at: model.created_at.toISOString(),
          status_url: modelStatusUrl(baseUrl, model.model_id),
          lines_total: model.lines_total,
          pages_total: model.pages_total,
        };
      } finally {
        await rm(file.filepath, { force: true });
      }
    },
  );

  router.get('/v1/models', authenticate, async (ctx) => {
    const auth = ctx.state.auth as AuthContext;
    const models = await accountModels(runtime.db.pool, auth.accountId);
    ctx.body = { models: models.map((row) => modelStatusBody(row, baseUrl)) };
  });

  router.get('/v1/models/:modelId', authenticate, async (ctx) => {
    const auth = ctx.state.auth as AuthContext;
    ctx.body = modelStatusBody(await accountModel(runtime.db.pool, auth.accountId, modelIdParam(ctx)), baseUrl);
  });

  router.delete('/v1/models/:modelId', authenticate, async (ctx) => {
    const auth = ctx.state.auth as AuthContext;
    const row = await cancelOrRetireModel(runtime, auth.accountId, modelIdParam(ctx), {
      actor: auth.keyId,
      requestId: ctx.state.requestId,
    });
    ctx.body = modelStatusBody(row, baseUrl);
  });

  router.get('/v1/models/:modelId/events', authenticate, async (ctx) => {
    const auth = ctx.state.auth as AuthContext;
    const model = await accountModel(runtime.db.pool, auth.accountId, modelIdParam(ctx));
    const events = await readStream(runtime.db.pool, modelStreamId(model.model_id));
    ctx.body = { model_id: model.model_id, events: events.map(eventJson) };
  });
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

/** The model id of the path, lower-cased; a path that is no UUID names no model (404). */
function modelIdParam(ctx: Context): string {
  const modelId = String(ctx.params.modelId);
  if (!UUID.test(modelId)) throw new Rejection('model_not_found', `No model ${modelId}.`);
  return modelId.toLowerCase();
}
