// One run of the PyTorch trainer (train/finetune.py) as a child process: started at a lower CPU
// priority than page work (`nice`), its progress read as JSON lines from its stdout and handed on
// one at a time, its stderr kept (the end of it) for a failure's reason. An abort (the model
// cancelled, the worker stopping) sends SIGTERM: the trainer writes its checkpoint and exits 143,
// and the run ends `interrupted`; a trainer that does not exit within KILL_AFTER_MS is killed.
import { spawn } from 'node:child_process';
import path from 'node:path';

const TRAINER = path.resolve(import.meta.dirname, '../../../train/finetune.py');
/** How long an interrupted trainer gets to write its checkpoint before SIGKILL. */
const KILL_AFTER_MS = 30_000;
/** How much of the trainer's stderr a failure keeps. */
const STDERR_KEPT = 4000;
/** finetune.py's exit on SIGTERM, checkpointed (128 + 15). */
const EXIT_INTERRUPTED = 143;

/** A progress line of finetune.py (its module docstring lists them). */
export type TrainerEvent = { event: string } & Record<string, unknown>;

export interface TrainerRunOptions {
  python: string;
  /** The model directory trained from (manifest.json, rec.onnx, charset.txt). */
  base: string;
  /** lines.jsonl (training-lines-file.ts). */
  lines: string;
  /** The run directory: checkpoints (last.pt, best.pt); kept across attempts by the caller. */
  run: string;
  /** Where the model directory is written. */
  out: string;
  /** The budget left for this training, all attempts together (finetune.py counts what its checkpoint says was spent). */
  maxMinutes: number;
  threads: number;
  /** The nice value the trainer runs at (0: as this process). */
  niceness: number;
  /** finetune.py's cache of base weights rebuilt from ONNX. */
  baseCache: string;
  /** How often the trainer writes a checkpoint. */
  checkpointMinutes?: number;
  /** Also write the model's convolutions in 8 bits (finetune.py --quantize). */
  quantize?: boolean;
  /** More arguments (tests: a shorter plan). */
  extraArgs?: readonly string[];
  signal: AbortSignal;
  /** Called for each progress line, in order; the next waits for it. */
  onEvent(event: TrainerEvent): Promise<void>;
}

export type TrainerOutcome =
  | { kind: 'finished'; started: TrainerEvent; finished: TrainerEvent }
  /** Stopped by the abort, checkpointed (the abort's reason says why). */
  | { kind: 'interrupted' };

/** The trainer refused its input or failed: `code` is finetune.py's (too_few_lines, onnx_mismatch, …) or `exit`. */
export class TrainerFailed extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = 'TrainerFailed';
    this.code = code;
  }
}

export function runTrainer(options: TrainerRunOptions): Promise<TrainerOutcome> {
  const args = [
    TRAINER,
    '--base',
    options.base,
    '--lines',
    options.lines,
    '--run',
    options.run,
    '--out',
    options.out,
    '--resume',
    '--max-minutes',
    String(options.maxMinutes),
    '--threads',
    String(options.threads),
    '--base-cache',
    options.baseCache,
    ...(options.checkpointMinutes === undefined ? [] : ['--checkpoint-minutes', String(options.checkpointMinutes)]),
    ...(options.quantize ? ['--quantize'] : []),
    ...(options.extraArgs ?? []),
  ];
  const [command, commandArgs] =
    options.niceness > 0 ? ['nice', ['-n', String(options.niceness), options.python, ...args]] : [options.python, args];
  return new Promise((resolve, reject) => {
    options.signal.throwIfAborted();
    // One malloc arena, as the service's image sets for its own processes (ADR 0052; the trainer's
    // fine-tune tests ran as fast with one as with two).
    const env = { ...process.env, MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX ?? '1', PYTHONUNBUFFERED: '1' };
    const child = spawn(command, commandArgs, { stdio: ['ignore', 'pipe', 'pipe'], env });
    let stderr = '';
    let pending = '';
    let started: TrainerEvent | null = null;
    let finished: TrainerEvent | null = null;
    let failed: TrainerEvent | null = null;
    let handing: Promise<void> = Promise.resolve();
    let handlerError: unknown = null;
    let killTimer: NodeJS.Timeout | undefined;

    const interrupt = () => {
      child.kill('SIGTERM');
      killTimer = setTimeout(() => child.kill('SIGKILL'), KILL_AFTER_MS);
      killTimer.unref();
    };
    options.signal.addEventListener('abort', interrupt, { once: true });

    child.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-STDERR_KEPT);
    });
    child.stdout.on('data', (chunk: Buffer) => {
      pending += chunk.toString();
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines.filter((text) => text.trim() !== '')) {
        let event: TrainerEvent;
        try {
          event = JSON.parse(line) as TrainerEvent;
        } catch {
          stderr = `${stderr}\n(stdout) ${line}`.slice(-STDERR_KEPT);
          continue;
        }
        if (event.event === 'started') started = event;
        else if (event.event === 'finished') finished = event;
        else if (event.event === 'failed') failed = event;
        handing = handing.then(async () => {
          if (handlerError !== null) return;
          try {
            await options.onEvent(event);
          } catch (error) {
            // The run cannot go on without its events recorded (the model cancelled, the database away): stop it.
            handlerError = error;
            if (!options.signal.aborted) interrupt();
          }
        });
      }
    });
    child.on('error', (error) => {
      options.signal.removeEventListener('abort', interrupt);
      reject(new TrainerFailed('not_started', `the trainer could not be started (${command}): ${error.message}`));
    });
    child.on('close', async (code, signal) => {
      clearTimeout(killTimer);
      options.signal.removeEventListener('abort', interrupt);
      await handing;
      if (handlerError !== null) return reject(handlerError);
      if (finished && started && code === 0) return resolve({ kind: 'finished', started, finished });
      if (options.signal.aborted && (code === EXIT_INTERRUPTED || signal !== null)) return resolve({ kind: 'interrupted' });
      if (failed) return reject(new TrainerFailed(String(failed.code), String(failed.message)));
      const how = signal ? `was killed (${signal})` : `exited ${code}`;
      reject(new TrainerFailed('exit', `the trainer ${how}: ${stderr.trim().split('\n').slice(-5).join(' | ')}`));
    });
  });
}
