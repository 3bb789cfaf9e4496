// How `hwr submit --wait` and `hwr status --wait` show a job: on a terminal, one progress
// line redrawn in place (pages done of page count, current step, elapsed and ETA); otherwise
// one JSON line per change (state, pages_done or current_step). `hwr models train --wait` and
// `hwr models status --wait` show a training the same way: its state, the last epoch and its
// validation CER.
import type { JobStatus, ModelStatus } from '../client/types.ts';

export interface ProgressView<Status = JobStatus> {
  /** A new status from a poll. */
  update(status: Status): void;
  /** A line of its own (the bar is redrawn below it on a terminal). */
  note(text: string, json: Record<string, unknown>): void;
  /** A line for the person only (retries, the service away), always on stderr, never in the JSON lines; the bar is redrawn below it. */
  aside(text: string): void;
  /** The last status: the bar is finished and left on screen. */
  finish(status: Status): void;
  close(): void;
}

export function formatDuration(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000));
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${String(s).padStart(2, '0')}` : `${m}:${String(s).padStart(2, '0')}`;
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/**
 * The ETA from the pace of the pages done so far (measured from the first status that showed
 * processing); null until a page is done.
 */
export function etaMs(status: JobStatus, processingSinceMs: number | null, nowMs: number): number | null {
  if (processingSinceMs === null || status.pages_done === 0 || status.pages_done >= status.page_count) return null;
  const perPage = (nowMs - processingSinceMs) / status.pages_done;
  return perPage * (status.page_count - status.pages_done);
}

/** One progress line, at most `columns` wide. */
export function progressLine(status: JobStatus, elapsedMs: number, eta: number | null, columns: number): string {
  const what = status.state === 'processing' ? (status.current_step ?? 'processing') : status.state;
  const time =
    status.state === 'processing' || status.state === 'queued'
      ? `${formatDuration(elapsedMs)}  ETA ${eta === null ? '--:--' : formatDuration(eta)}`
      : formatDuration(elapsedMs);
  const tail = ` ${status.pages_done}/${status.page_count} pages  ${what}  ${time}`;
  // A steady width (the tail's length changes with the step's name), narrower on a narrow terminal.
  const barWidth = Math.max(10, Math.min(30, columns - 52));
  const filled = Math.round((barWidth * status.pages_done) / Math.max(1, status.page_count));
  return `[${'█'.repeat(filled)}${'░'.repeat(barWidth - filled)}]${tail}`.slice(0, Math.max(20, columns - 1));
}

export function terminalView(stream: NodeJS.WriteStream): ProgressView {
  const started = Date.now();
  let processingSince: number | null = null;
  return redrawnView<JobStatus>(
    stream,
    (status, now) => progressLine(status, now - started, etaMs(status, processingSince, now), stream.columns || 80),
    (status) => {
      if (status.state === 'processing' && processingSince === null) processingSince = Date.now();
    },
  );
}

/** A fraction as a percentage with one decimal: `0.1234` is `12.3 %`. */
export function formatPercent(value: number): string {
  return `${(value * 100).toFixed(1)} %`;
}

/** A training's progress line, at most `columns` wide: state, the last epoch and its validation CER, elapsed time. */
export function modelProgressLine(status: ModelStatus, elapsedMs: number, columns: number): string {
  const epoch = status.progress
    ? `  epoch ${status.progress.epoch}  validation CER ${formatPercent(status.progress.validation_cer)}`
    : status.state === 'training'
      ? '  first epoch'
      : '';
  return `${status.state}${epoch}  ${status.lines_total} lines  ${formatDuration(elapsedMs)}`.slice(0, Math.max(20, columns - 1));
}

export function modelTerminalView(stream: NodeJS.WriteStream): ProgressView<ModelStatus> {
  const started = Date.now();
  return redrawnView<ModelStatus>(stream, (status, now) => modelProgressLine(status, now - started, stream.columns || 80));
}

/** One line redrawn in place every second and at each new status. */
function redrawnView<Status>(
  stream: NodeJS.WriteStream,
  render: (status: Status, now: number) => string,
  onUpdate: (status: Status) => void = () => {},
): ProgressView<Status> {
  let last: Status | null = null;
  let drawn = false;
  let finished = false;
  const draw = () => {
    if (last === null || finished) return;
    stream.write(`\r\x1b[2K${render(last, Date.now())}`);
    drawn = true;
  };
  const timer = setInterval(draw, 1000);
  timer.unref();
  const clearLine = () => {
    if (drawn) stream.write('\r\x1b[2K');
    drawn = false;
  };
  return {
    update(status) {
      onUpdate(status);
      last = status;
      draw();
    },
    note(text) {
      clearLine();
      stream.write(`${text}\n`);
      draw();
    },
    aside(text) {
      clearLine();
      process.stderr.write(`${text}\n`);
      draw();
    },
    finish(status) {
      clearInterval(timer);
      last = status;
      draw();
      stream.write('\n');
      drawn = false;
      finished = true;
    },
    close() {
      clearInterval(timer);
      if (drawn) stream.write('\n');
      drawn = false;
    },
  };
}

export function jsonLinesView(stream: NodeJS.WriteStream): ProgressView {
  const started = Date.now();
  const line = (value: Record<string, unknown>) => stream.write(`${JSON.stringify(value)}\n`);
  const progress = (status: JobStatus) => ({
    event: 'progress',
    job_id: status.job_id,
    state: status.state,
    pages_done: status.pages_done,
    page_count: status.page_count,
    current_step: status.current_step,
    elapsed_seconds: Math.round((Date.now() - started) / 100) / 10,
    ...(status.error_message ? { error_message: status.error_message } : {}),
    ...(status.warning_message ? { warning_message: status.warning_message } : {}),
  });
  return {
    update: (status) => line(progress(status)),
    note: (_text, json) => line(json),
    aside: (text) => process.stderr.write(`${text}\n`),
    finish: () => {},
    close: () => {},
  };
}

export function modelJsonLinesView(stream: NodeJS.WriteStream): ProgressView<ModelStatus> {
  const started = Date.now();
  const line = (value: Record<string, unknown>) => stream.write(`${JSON.stringify(value)}\n`);
  return {
    update: (status) =>
      line({
        event: 'progress',
        model_id: status.model_id,
        state: status.state,
        epoch: status.progress?.epoch ?? null,
        train_loss: status.progress?.train_loss ?? null,
        validation_cer: status.progress?.validation_cer ?? null,
        elapsed_seconds: Math.round((Date.now() - started) / 100) / 10,
      }),
    note: (_text, json) => line(json),
    aside: (text) => process.stderr.write(`${text}\n`),
    finish: () => {},
    close: () => {},
  };
}
