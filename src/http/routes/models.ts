// Models trained on an account's ground truth (docs/models.md): POST /v1/models uploads ground
// truth and queues a training, GET lists the account's models and reads one, DELETE cancels a
// training or retires a ready model, GET …/events is a model's history; GET and PUT
// /v1/account/default-model read and choose the model a submission that names none reads with
// (docs/decisions/0035-the-default-model-is-a-sub-resource-of-the-account.md). A model is visible
// only to keys of the account that trained it; for any other key it does not exist (404).
import type Router from '@koa/router';
import type { Context } from 'koa';
import { modelStreamId } from '../../../domain/events.ts';
import { DEFAULT_MODEL } from '../../../domain/model.ts';
import { Rejection } from '../../../domain/rejections.ts';
import type { Runtime } from '../../runtime/runtime.ts';
import { eventJson } from '../../store/event-json.ts';
import { readStream } from '../../store/read-stream.ts';
import { ModelError } from '../../use-cases/errors.ts';
import {
  type AccountDefaultModel,
  accountDefaultModel,
  accountModel,
  accountModels,
  cancelOrRetireModel,
  chooseDefaultModel,
} from '../../use-cases/models.ts';
import type { AuthContext, Authenticate } from '../authenticate.ts';
import { readJsonBody } from '../json-body.ts';
import { modelStatusBody } from '../model-view.ts';
import { parseModelField } from '../submission-options.ts';
import { receiveTrainingUpload } from '../training-upload.ts';
import { isUuid } from '../../shared/uuid.ts';

export function registerModelRoutes(router: Router, runtime: Runtime, authenticate: Authenticate): void {
  const { baseUrl } = runtime.config;

  router.post('/v1/models', authenticate, ...receiveTrainingUpload(runtime));

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

  router.get('/v1/account/default-model', authenticate, async (ctx) => {
    const auth = ctx.state.auth as AuthContext;
    ctx.body = defaultModelBody(await accountDefaultModel(runtime.db.pool, auth.accountId));
  });

  router.put('/v1/account/default-model', authenticate, async (ctx) => {
    const auth = ctx.state.auth as AuthContext;
    const model = await readDefaultModelBody(ctx);
    const chosen = await chooseDefaultModel(runtime, auth.accountId, model, { actor: auth.keyId, requestId: ctx.state.requestId });
    ctx.body = defaultModelBody(chosen);
  });

  router.get('/v1/models/:modelId/events', authenticate, async (ctx) => {
    const auth = ctx.state.auth as AuthContext;
    const model = await accountModel(runtime.db.pool, auth.accountId, modelIdParam(ctx));
    const events = await readStream(runtime.db.pool, modelStreamId(model.model_id));
    ctx.body = { model_id: model.model_id, events: events.map(eventJson) };
  });
}

/** The answer of GET and PUT /v1/account/default-model. */
function defaultModelBody(chosen: AccountDefaultModel) {
  return {
    model: chosen.chosen,
    model_state: chosen.model?.state ?? null,
    effective_model: chosen.effective,
    chosen_at: chosen.chosenAt?.toISOString() ?? null,
  };
}

/** A PUT body `{"model": "default" | "<model id>"}`, nothing else; the model id lower-cased. */
async function readDefaultModelBody(ctx: Context): Promise<string> {
  const refuse = (why: string) =>
    new ModelError('invalid_default_model_request', `The body must be {"model": "${DEFAULT_MODEL}" or a model id}: ${why}.`);
  const body = await readJsonBody(ctx, refuse);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw refuse('it is not an object');
  const extra = Object.keys(body).filter((name) => name !== 'model');
  if (extra.length > 0) throw refuse(`unknown field ${JSON.stringify(extra[0])}`);
  const model = (body as { model?: unknown }).model;
  if (typeof model !== 'string' || model.trim() === '') throw refuse('model is missing or not a string');
  return parseModelField(model.trim(), 'model');
}

/** The model id of the path, lower-cased; a path that is no UUID names no model (404). */
function modelIdParam(ctx: Context): string {
  const modelId = String(ctx.params.modelId);
  if (!isUuid(modelId)) throw new Rejection('model_not_found', `No model ${modelId}.`);
  return modelId.toLowerCase();
}
