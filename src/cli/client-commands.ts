// The client commands of `hwr`, for a running service over HTTP (src/client):
// submit, status, result, cancel, events, usage, models (train, list, status, retire).
// --url / HWR_URL (default the local server), --key / HWR_API_KEY. Exit codes: 0 done (or
// accepted, without --wait; a training ready), 1 the job or training failed, 2 a usage error,
// 3 the job or training was cancelled (or the model retired), 4 a service error (a 5xx answer, or no answer),
// 5 the service refused the request (a 4xx answer: the request is at fault, sent again unchanged
// it is refused again), 130 interrupted (Ctrl-C while waiting leaves the job running).
import { randomUUID } from 'node:crypto';
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import path from 'node:path';
import { HwrApiError, HwrClient } from '../client/api-client.ts';
import { prepareScan, ScanInputError } from '../client/scan-input.ts';
import { LLM_TIERS, PDF_FORMATS, PRESETS, type JobStatus, type ModelStatus, type SubmitOptions } from '../client/types.ts';
import { parseArgs, UsageError, type ParsedArgs } from './args.ts';
import {
  formatBytes,
  formatDuration,
  formatPercent,
  jsonLinesView,
  modelJsonLinesView,
  modelTerminalView,
  terminalView,
  type ProgressView,
} from './progress.ts';

export const EXIT = { done: 0, failed: 1, usage: 2, cancelled: 3, error: 4, refused: 5, interrupted: 130 } as const;

const CONNECTION = `connection:
  --url URL     the service (default: HWR_URL, else http://localhost:$PORT, PORT defaulting to 8080)
  --key KEY     an API key (default: HWR_API_KEY)`;

export const USAGES: Record<string, string> = {
  submit: `usage: hwr submit PATH... [--tier cheap|balanced|best] [--preset NAME] [--pdf-format pdfa-2b|pdf|none]
                  [--steps all|layout,recognition,...] [--webhook-url URL] [--idempotency-key K]
                  [--model ID] [--wait] [--out result.zip]

  PATH: a ZIP, or folders of images and image files (zipped on the fly, in natural order).
  --model  read the pages with one of your ready models (\`hwr models list\`; default: the shipped one)
  --wait  follow the job until it ends: a progress bar on a terminal, else one JSON line per change
  --out   download the result archive when the job is done (implies --wait)
Exit: 0 done (or submitted, without --wait), 1 failed, 2 usage, 3 cancelled, 4 service error (5xx or unreachable),
      5 refused (a 4xx answer: fix the request), 130 Ctrl-C (the job keeps running).
${CONNECTION}`,
  status: `usage: hwr status JOB_ID [--wait] [--out result.zip]\n\n  prints the job status (JSON); --wait follows it as \`hwr submit --wait\` does\n${CONNECTION}`,
  result: `usage: hwr result JOB_ID [--out FILE]   download the result archive (default FILE: JOB_ID.zip)\n${CONNECTION}`,
  cancel: `usage: hwr cancel JOB_ID   cancel a queued or processing job; prints its status\n${CONNECTION}`,
  events: `usage: hwr events JOB_ID   the job's history over HTTP, one JSON line per event\n${CONNECTION}`,
  usage: `usage: hwr usage [--from DATE] [--to DATE]   billed jobs, pages and trained lines of your account (JSON)\n${CONNECTION}`,
  models: `usage: hwr models train PATH... [--label L] [--base ID] [--wait]
       hwr models list [--json]
       hwr models status MODEL_ID [--wait]
       hwr models retire MODEL_ID

  train   upload ground truth and queue a training; prints the submission (JSON) with its model_id.
          PATH: a ZIP (sent as it is), or folders of page images with their PageXML or ALTO files and such
          files (zipped on the fly, each XML file where it lies; the service pairs them: docs/models.md).
          --label  a name for the model; --base  train on from one of your ready models (default: the shipped one)
          --wait   follow the training: a progress line (epoch, validation CER) on a terminal, else one JSON
                   line per change; it ends with the CER on the held-out lines before and after
  list    your models, newest first: a table on a terminal, else (or with --json) one JSON line per model
  status  the model (JSON); --wait follows it as train --wait does
  retire  cancel a queued or training model, or retire a ready one (no new job may use it); prints it (JSON)
Exit: 0 done (with --wait: the model is ready), 1 the training failed, 2 usage, 3 cancelled or retired,
      4 service error (5xx or unreachable), 5 refused (a 4xx answer: fix the request), 130 Ctrl-C (the training goes on).
${CONNECTION}`,
};

const FLAGS = ['wait', 'help', 'json'];

interface Context {
  client: HwrClient;
  url: string;
  /** Human output on a terminal, else JSON lines on stdout. */
  tty: boolean;
}

export function commandFor(name: keyof typeof USAGES): (args: string[]) => Promise<number> {
  return async (args) => {
    // `npm run hwr -- submit pages/` runs in the package root; PATHs and --out are the user's.
    if (process.env.npm_lifecycle_event === 'hwr' && process.env.INIT_CWD) process.chdir(process.env.INIT_CWD);
    let parsed: ParsedArgs;
    try {
      parsed = parseArgs(args, FLAGS);
      if (parsed.options.help) {
        process.stdout.write(`${USAGES[name]}\n`);
        return EXIT.done;
      }
      const context = connect(parsed);
      return await COMMANDS[name](parsed, context);
    } catch (error) {
      return reportError(name, error);
    }
  };
}

function reportError(name: string, error: unknown): number {
  if (error instanceof UsageError || error instanceof ScanInputError) {
    process.stderr.write(`hwr ${name}: ${error.message}\n${error instanceof UsageError ? `${USAGES[name]}\n` : ''}`);
    return EXIT.usage;
  }
  if (error instanceof HwrApiError) {
    // A 4xx is a refusal of this request (a wrong key, a bad option or upload, an unknown job):
    // retrying it unchanged is pointless, which a script tells from a service error by the code.
    const refused = error.status >= 400 && error.status < 500;
    process.stderr.write(`hwr ${name}: ${refused ? 'refused: ' : ''}${error.message}\n`);
    return refused ? EXIT.refused : EXIT.error;
  }
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : null;
  process.stderr.write(`hwr ${name}: ${error instanceof Error ? error.message : String(error)}${cause ? ` (${cause})` : ''}\n`);
  return EXIT.error;
}

function connect(parsed: ParsedArgs): Context {
  const url = option(parsed, 'url') ?? process.env.HWR_URL ?? `http://localhost:${process.env.PORT || 8080}`;
  // A URL without its scheme (`localhost:8080`) was retried five times as a network error.
  if (!/^https?:\/\/[^/]/i.test(url)) throw new UsageError(`the service URL ${url} is not an http:// or https:// URL (--url, HWR_URL)`);
  const apiKey = option(parsed, 'key') ?? process.env.HWR_API_KEY;
  if (!apiKey) {
    throw new UsageError(
      'no API key: set HWR_API_KEY or --key (the first `npm start` printed one; `hwr keys create --account default --label cli` makes another)',
    );
  }
  const tty = Boolean(process.stdout.isTTY && process.stderr.isTTY);
  const client = new HwrClient({
    url,
    apiKey,
    onRetry: ({ attempt, waitMs, reason }) => aside(`hwr: ${reason}; retrying in ${formatDuration(waitMs)} (retry ${attempt})`),
  });
  return { client, url, tty };
}

function option(parsed: ParsedArgs, name: string): string | undefined {
  const value = parsed.options[name];
  if (value === true) throw new UsageError(`--${name} needs a value`);
  return value;
}

function oneOf<T extends string>(parsed: ParsedArgs, name: string, allowed: readonly T[]): T | undefined {
  const value = option(parsed, name);
  if (value !== undefined && !allowed.includes(value as T)) throw new UsageError(`--${name} must be one of ${allowed.join(', ')}`);
  return value as T | undefined;
}

function jobIdOf(parsed: ParsedArgs): string {
  const [jobId, ...rest] = parsed.positionals;
  if (!jobId || rest.length > 0) throw new UsageError('give one JOB_ID');
  return jobId;
}

function checkOptions(parsed: ParsedArgs, allowed: string[]): void {
  for (const name of Object.keys(parsed.options)) {
    if (!['url', 'key', 'help', ...allowed].includes(name)) throw new UsageError(`unknown option --${name}`);
  }
}

/** `--out` is checked before anything is sent: a folder that is not there failed only after the job was done (and billed). */
async function checkWritable(file: string): Promise<void> {
  if ((await stat(file).catch(() => null))?.isDirectory()) throw new UsageError(`--out ${file} is a folder; name the file to write`);
  const folder = path.dirname(path.resolve(file));
  try {
    await access(folder, constants.W_OK);
  } catch {
    throw new UsageError(`--out ${file}: the folder ${folder} does not exist or cannot be written to`);
  }
}

const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);

const COMMANDS: Record<keyof typeof USAGES, (parsed: ParsedArgs, context: Context) => Promise<number>> = {
  async submit(parsed, context) {
    checkOptions(parsed, ['tier', 'preset', 'pdf-format', 'steps', 'webhook-url', 'idempotency-key', 'model', 'wait', 'out']);
    const options: SubmitOptions = {
      llm_tier: oneOf(parsed, 'tier', LLM_TIERS),
      preset: oneOf(parsed, 'preset', PRESETS),
      pdf_format: oneOf(parsed, 'pdf-format', PDF_FORMATS),
      pipeline_steps: option(parsed, 'steps'),
      webhook_url: option(parsed, 'webhook-url'),
      model: option(parsed, 'model'),
    };
    const out = option(parsed, 'out');
    if (out !== undefined) await checkWritable(out);
    const wait = parsed.options.wait === true || out !== undefined;
    const idempotencyKey = option(parsed, 'idempotency-key') ?? randomUUID();
    const scan = await prepareScan(parsed.positionals);
    const view = wait ? viewFor(context) : null;
    const say = (text: string, json: Record<string, unknown>) =>
      view ? view.note(text, json) : context.tty ? process.stderr.write(`${text}\n`) : undefined;
    try {
      if (scan.images > 0)
        say(
          `zipped ${scan.images} image${scan.images === 1 ? '' : 's'}${scan.layouts > 0 ? ` and ${scan.layouts} layout file${scan.layouts === 1 ? '' : 's'}` : ''} (${formatBytes(scan.bytes)})`,
          { event: 'zipped', images: scan.images, layouts: scan.layouts, bytes: scan.bytes },
        );
      const interrupt = new AbortController();
      const onSigint = () => interrupt.abort();
      process.once('SIGINT', onSigint);
      let submission: Awaited<ReturnType<HwrClient['submit']>>;
      try {
        submission = await context.client.submit(scan.zipPath, {
          ...options,
          idempotencyKey,
          filename: scan.filename,
          signal: interrupt.signal,
        });
      } catch (error) {
        if (!interrupt.signal.aborted) throw error;
        view?.close();
        process.stderr.write(
          `hwr submit: interrupted during the upload. If it reached the service, the same command with --idempotency-key ${idempotencyKey} returns that job instead of a new one.\n`,
        );
        return EXIT.interrupted;
      } finally {
        process.removeListener('SIGINT', onSigint);
      }
      if (!wait) {
        if (context.tty)
          process.stderr.write(
            `job ${submission.job_id}: ${submission.page_count} pages queued; follow it with \`hwr status ${submission.job_id} --wait\`\n`,
          );
        print(submission);
        return EXIT.done;
      }
      view!.note(
        `job ${submission.job_id}: ${submission.page_count} page${submission.page_count === 1 ? '' : 's'} submitted to ${context.url}`,
        { event: 'submitted', ...submission },
      );
      return await follow(context, view!, submission.job_id, out);
    } finally {
      view?.close();
      await scan.cleanUp();
    }
  },

  async status(parsed, context) {
    checkOptions(parsed, ['wait', 'out']);
    const jobId = jobIdOf(parsed);
    const out = option(parsed, 'out');
    if (out !== undefined) await checkWritable(out);
    if (parsed.options.wait !== true && out === undefined) {
      print(await context.client.status(jobId));
      return EXIT.done;
    }
    const view = viewFor(context);
    try {
      return await follow(context, view, jobId, out);
    } finally {
      view.close();
    }
  },

  async result(parsed, context) {
    checkOptions(parsed, ['out']);
    const jobId = jobIdOf(parsed);
    const file = option(parsed, 'out') ?? `${jobId}.zip`;
    await checkWritable(file);
    const saved = await context.client.downloadResult(jobId, file);
    if (context.tty) process.stderr.write(`saved ${saved.path} (${formatBytes(saved.bytes)})\n`);
    else print({ event: 'downloaded', job_id: jobId, path: saved.path, bytes: saved.bytes });
    return EXIT.done;
  },

  async cancel(parsed, context) {
    checkOptions(parsed, []);
    print(await context.client.cancel(jobIdOf(parsed)));
    return EXIT.done;
  },

  async events(parsed, context) {
    checkOptions(parsed, []);
    for (const event of (await context.client.events(jobIdOf(parsed))).events) print(event);
    return EXIT.done;
  },

  async usage(parsed, context) {
    checkOptions(parsed, ['from', 'to']);
    if (parsed.positionals.length > 0) throw new UsageError(`unexpected ${parsed.positionals[0]}`);
    print(await context.client.usage({ from: option(parsed, 'from'), to: option(parsed, 'to') }));
    return EXIT.done;
  },

  async models(parsed, context) {
    const [action, ...rest] = parsed.positionals;
    const actions: Record<string, (rest: string[]) => Promise<number>> = {
      train: (paths) => trainModel(parsed, context, paths),
      list: async (extra) => {
        checkOptions(parsed, ['json']);
        if (extra.length > 0) throw new UsageError(`unexpected ${extra[0]}`);
        const { models } = await context.client.models();
        if (context.tty && parsed.options.json !== true) process.stdout.write(modelTable(models));
        else for (const model of models) print(model);
        return EXIT.done;
      },
      status: async (ids) => {
        checkOptions(parsed, ['wait']);
        const modelId = oneModelId(ids);
        if (parsed.options.wait !== true) {
          print(await context.client.model(modelId));
          return EXIT.done;
        }
        const view = modelViewFor(context);
        try {
          return await followModel(context, view, modelId);
        } finally {
          view.close();
        }
      },
      retire: async (ids) => {
        checkOptions(parsed, []);
        const model = await context.client.retireModel(oneModelId(ids));
        if (context.tty) process.stderr.write(`model ${model.model_id}: ${model.state}\n`);
        print(model);
        return EXIT.done;
      },
    };
    const run = action === undefined ? undefined : actions[action];
    if (!run) throw new UsageError(action === undefined ? 'give train, list, status or retire' : `unknown models command ${action}`);
    return run(rest);
  },
};

function oneModelId(ids: string[]): string {
  const [modelId, ...rest] = ids;
  if (!modelId || rest.length > 0) throw new UsageError('give one MODEL_ID');
  return modelId;
}

async function trainModel(parsed: ParsedArgs, context: Context, paths: string[]): Promise<number> {
  checkOptions(parsed, ['label', 'base', 'wait']);
  const label = option(parsed, 'label');
  const base = option(parsed, 'base');
  const wait = parsed.options.wait === true;
  const groundTruth = await prepareScan(paths, { groundTruth: true });
  const view = wait ? modelViewFor(context) : null;
  const say = (text: string, json: Record<string, unknown>) =>
    view ? view.note(text, json) : context.tty ? process.stderr.write(`${text}\n`) : undefined;
  try {
    if (groundTruth.images > 0)
      say(
        `zipped ${groundTruth.images} image${groundTruth.images === 1 ? '' : 's'} and ${groundTruth.layouts} XML file${groundTruth.layouts === 1 ? '' : 's'} (${formatBytes(groundTruth.bytes)})`,
        { event: 'zipped', images: groundTruth.images, layouts: groundTruth.layouts, bytes: groundTruth.bytes },
      );
    const interrupt = new AbortController();
    const onSigint = () => interrupt.abort();
    process.once('SIGINT', onSigint);
    let submission: Awaited<ReturnType<HwrClient['trainModel']>>;
    try {
      submission = await context.client.trainModel(groundTruth.zipPath, {
        label,
        base_model: base,
        filename: groundTruth.filename,
        signal: interrupt.signal,
      });
    } catch (error) {
      if (!interrupt.signal.aborted) throw error;
      view?.close();
      process.stderr.write(
        'hwr models train: interrupted during the upload. If it reached the service, a training was queued: `hwr models list` shows it, `hwr models retire ID` cancels it.\n',
      );
      return EXIT.interrupted;
    } finally {
      process.removeListener('SIGINT', onSigint);
    }
    const queued = `model ${submission.model_id}: ${submission.lines_total} lines of ${submission.pages_total} page${submission.pages_total === 1 ? '' : 's'} queued for training`;
    if (!view) {
      if (context.tty) process.stderr.write(`${queued}; follow it with \`hwr models status ${submission.model_id} --wait\`\n`);
      print(submission);
      return EXIT.done;
    }
    view.note(`${queued} at ${context.url}`, { event: 'submitted', ...submission });
    return await followModel(context, view, submission.model_id);
  } finally {
    view?.close();
    await groundTruth.cleanUp();
  }
}

/** A table of models for a person: id, label, state, CER on the held-out lines before → after, created (UTC). */
function modelTable(models: ModelStatus[]): string {
  if (models.length === 0) return 'no models yet: `hwr models train PATH…` trains one\n';
  const rows = [
    ['ID', 'LABEL', 'STATE', 'CER BEFORE → AFTER', 'CREATED (UTC)'],
    ...models.map((model) => [
      model.model_id,
      clip(model.label ?? '', 30),
      model.figures?.not_better ? `${model.state} (not better)` : model.state,
      model.figures ? `${formatPercent(model.figures.cer_before)} → ${formatPercent(model.figures.cer_after)}` : '-',
      model.created_at.slice(0, 16).replace('T', ' '),
    ]),
  ];
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => [...row[column]].length)));
  const pad = (cell: string, column: number) => cell + ' '.repeat(widths[column] - [...cell].length);
  return `${rows.map((row) => row.map(pad).join('  ').trimEnd()).join('\n')}\n`;
}

function clip(text: string, width: number): string {
  const characters = [...text];
  return characters.length <= width ? text : `${characters.slice(0, width - 1).join('')}…`;
}

/** The progress view on screen, if any: lines for the person go above its bar rather than into it. */
let shownView: Pick<ProgressView, 'aside'> | null = null;

function aside(text: string): void {
  if (shownView) shownView.aside(text);
  else process.stderr.write(`${text}\n`);
}

function viewFor(context: Context): ProgressView {
  const view = context.tty ? terminalView(process.stderr) : jsonLinesView(process.stdout);
  shownView = view;
  return view;
}

function modelViewFor(context: Context): ProgressView<ModelStatus> {
  const view = context.tty ? modelTerminalView(process.stderr) : modelJsonLinesView(process.stdout);
  shownView = view;
  return view;
}

/**
 * Follows a training to its end: ready (its figures on the held-out lines), failed, cancelled or
 * retired. Ctrl-C stops following (the training goes on) and says how to pick it up again.
 */
async function followModel(context: Context, view: ProgressView<ModelStatus>, modelId: string): Promise<number> {
  const interrupt = new AbortController();
  const onSigint = () => interrupt.abort();
  process.once('SIGINT', onSigint);
  const started = Date.now();
  let final: ModelStatus;
  try {
    final = await context.client.waitForModel(modelId, {
      signal: interrupt.signal,
      intervalMs: 2000,
      onChange: (status) => view.update(status),
      onOutage: (reason) =>
        aside(`hwr: the service does not answer (${reason}); model ${modelId} trains on there: waiting up to 5 minutes`),
    });
  } catch (error) {
    view.close();
    if (!interrupt.signal.aborted) {
      const reason = error instanceof Error ? error.message : String(error);
      process.stderr.write(
        `hwr: stopped following model ${modelId} (${reason}); it may still be training: follow it again with \`hwr models status ${modelId} --wait\`.\n`,
      );
      if (!context.tty) print({ event: 'interrupted', model_id: modelId, reason });
      throw error;
    }
    process.stderr.write(
      `hwr: stopped following; model ${modelId} keeps training. Follow it again with \`hwr models status ${modelId} --wait\`, cancel it with \`hwr models retire ${modelId}\`.\n`,
    );
    if (!context.tty) print({ event: 'interrupted', model_id: modelId });
    return EXIT.interrupted;
  } finally {
    process.removeListener('SIGINT', onSigint);
  }
  view.finish(final);
  const took = formatDuration(Date.now() - started);
  if (final.state === 'failed') {
    view.note(`model ${modelId}: the training failed after ${took}: ${final.error_message ?? 'no reason given'}`, {
      event: 'failed',
      model_id: modelId,
      error_message: final.error_message,
    });
    return EXIT.failed;
  }
  if (final.state === 'cancelled' || final.state === 'retired') {
    view.note(`model ${modelId} was ${final.state}`, { event: final.state, model_id: modelId });
    return EXIT.cancelled;
  }
  const figures = final.figures;
  if (figures?.not_better)
    view.note(`warning: ${final.warnings.at(-1) ?? 'not better than its base model'}`, {
      event: 'warning',
      model_id: modelId,
      warning_message: final.warnings.at(-1) ?? null,
    });
  view.note(
    figures
      ? `ready: CER ${formatPercent(figures.cer_before)} → ${formatPercent(figures.cer_after)}, WER ${formatPercent(figures.wer_before)} → ${formatPercent(figures.wer_after)} ` +
          `on ${figures.lines_validation} held-out lines (${figures.lines_train} lines trained in ${figures.training_minutes.toFixed(1)} min); ` +
          `read with it: \`hwr submit PATH --model ${modelId}\``
      : `ready; read with it: \`hwr submit PATH --model ${modelId}\``,
    { event: 'ready', model_id: modelId, figures },
  );
  return EXIT.done;
}

/**
 * Follows a job to its end, then downloads its result when asked. Ctrl-C stops following
 * (the job keeps running) and says how to pick it up again.
 */
async function follow(context: Context, view: ProgressView, jobId: string, out: string | undefined): Promise<number> {
  const interrupt = new AbortController();
  const onSigint = () => interrupt.abort();
  process.once('SIGINT', onSigint);
  const started = Date.now();
  let final: JobStatus;
  try {
    final = await context.client.wait(jobId, {
      signal: interrupt.signal,
      onChange: (status) => view.update(status),
      onOutage: (reason) => aside(`hwr: the service does not answer (${reason}); job ${jobId} goes on there: waiting up to 5 minutes`),
    });
  } catch (error) {
    if (!interrupt.signal.aborted) {
      view.close();
      process.stderr.write(
        `hwr: stopped following job ${jobId} (${error instanceof Error ? error.message : String(error)}); it may still be running: follow it again with \`hwr status ${jobId} --wait\`.\n`,
      );
      if (!context.tty) print({ event: 'interrupted', job_id: jobId, reason: error instanceof Error ? error.message : String(error) });
      throw error;
    }
    view.close();
    process.stderr.write(
      `hwr: stopped following; job ${jobId} keeps running. Follow it again with \`hwr status ${jobId} --wait\`, cancel it with \`hwr cancel ${jobId}\`.\n`,
    );
    if (!context.tty) print({ event: 'interrupted', job_id: jobId });
    return EXIT.interrupted;
  } finally {
    process.removeListener('SIGINT', onSigint);
  }
  view.finish(final);
  const took = formatDuration(Date.now() - started);
  if (final.state === 'failed') {
    view.note(`job ${jobId} failed after ${took}: ${final.error_message ?? 'no reason given'}`, {
      event: 'failed',
      job_id: jobId,
      error_message: final.error_message,
    });
    return EXIT.failed;
  }
  if (final.state === 'cancelled') {
    view.note(`job ${jobId} was cancelled`, { event: 'cancelled', job_id: jobId });
    return EXIT.cancelled;
  }
  if (final.warning_message)
    view.note(`warning: ${final.warning_message}`, { event: 'warning', job_id: jobId, warning_message: final.warning_message });
  if (out === undefined) {
    view.note(`done: ${final.page_count} pages in ${took}; download with \`hwr result ${jobId} --out result.zip\``, {
      event: 'done',
      job_id: jobId,
      result_url: final.result_url,
    });
    return EXIT.done;
  }
  const saved = await context.client.downloadResult(jobId, out);
  view.note(
    `done: ${final.page_count} pages in ${took}; saved ${path.isAbsolute(out) ? out : path.relative(process.cwd(), path.resolve(saved.path)) || saved.path} (${formatBytes(saved.bytes)})`,
    {
      event: 'downloaded',
      job_id: jobId,
      path: saved.path,
      bytes: saved.bytes,
    },
  );
  return EXIT.done;
}
