// A local HTTP server that speaks the two wire formats correction uses, so that
// tests drive the real SDKs (@google/genai, openai) through their base-URL options:
//   Gemini:  POST /{version}/models/{model}:generateContent   (x-goog-api-key)
//   OpenAI:  POST /v1/chat/completions                         (Authorization: Bearer)
// Every request is recorded (parsed into the parts tests assert on); replies come
// from a queue of one-off replies, then from a default handler.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Socket } from 'node:net';

export type Api = 'gemini' | 'openai';

export interface LlmRequest {
  api: Api;
  model: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The parsed JSON body, as the SDK sent it. */
  body: any;
  /** System instruction text. */
  system: string;
  /** The user message's text. */
  userText: string;
  image: { mimeType: string; data: Buffer } | null;
  /** The JSON schema the answer was constrained to. */
  schema: unknown;
  /** performance.now() when the request arrived. */
  receivedAt: number;
}

export type Reply =
  | { type: 'answer'; text: string; finishReason?: 'stop' | 'length'; usage?: { input: number; output: number; thoughts?: number } }
  | { type: 'error'; status: number; headers?: Record<string, string>; message?: string }
  | { type: 'hang' };

export type Handler = (request: LlmRequest) => Reply | Promise<Reply>;

/** A well-formed answer with the given line texts. */
export function answerLines(
  lines: Array<{ id: string; text: string }>,
  usage?: { input: number; output: number; thoughts?: number },
): Reply {
  return { type: 'answer', text: JSON.stringify({ lines }), ...(usage ? { usage } : {}) };
}

export function answerText(text: string, finishReason: 'stop' | 'length' = 'stop'): Reply {
  return { type: 'answer', text, finishReason };
}

export function errorReply(status: number, headers?: Record<string, string>): Reply {
  return { type: 'error', status, ...(headers ? { headers } : {}) };
}

export class FakeLlmServer {
  readonly requests: LlmRequest[] = [];
  private readonly server: http.Server;
  private readonly sockets = new Set<Socket>();
  private readonly queue: Reply[] = [];
  private handler: Handler = () => ({ type: 'error', status: 500, message: 'no reply scripted' });

  private constructor() {
    this.server = http.createServer((request, response) => {
      this.serve(request, response).catch((error: unknown) => {
        response.statusCode = 500;
        response.end(String(error));
      });
    });
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  static async start(): Promise<FakeLlmServer> {
    const fake = new FakeLlmServer();
    await new Promise<void>((resolve) => fake.server.listen(0, '127.0.0.1', resolve));
    return fake;
  }

  get url(): string {
    const { port } = this.server.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  /** For GEMINI_BASE_URL (the SDK appends /{version}/models/...). */
  get geminiBaseUrl(): string {
    return this.url;
  }

  /** For OPENAI_BASE_URL (the SDK appends /chat/completions). */
  get openaiBaseUrl(): string {
    return `${this.url}/v1`;
  }

  /** Replies served once each, in order, before the default handler. */
  enqueue(...replies: Reply[]): void {
    this.queue.push(...replies);
  }

  handle(handler: Handler): void {
    this.handler = handler;
  }

  reset(): void {
    this.requests.length = 0;
    this.queue.length = 0;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async serve(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const receivedAt = performance.now();
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const path = request.url ?? '/';
    const gemini = /^\/(v1|v1beta|v1alpha)\/models\/([^/:]+):generateContent$/.exec(path);
    const api: Api | null =
      request.method === 'POST' && gemini ? 'gemini' : request.method === 'POST' && path === '/v1/chat/completions' ? 'openai' : null;
    if (api === null)
      return send(response, 404, {}, { error: { code: 404, message: `no route ${request.method} ${path}`, status: 'NOT_FOUND' } });
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    if (api === 'gemini' && !request.headers['x-goog-api-key']) {
      return send(
        response,
        403,
        {},
        { error: { code: 403, message: "Method doesn't allow unregistered callers", status: 'PERMISSION_DENIED' } },
      );
    }
    const recorded = api === 'gemini' ? parseGemini(body, gemini![2]) : parseOpenAi(body);
    const entry: LlmRequest = { api, path, headers: request.headers, body, receivedAt, ...recorded };
    this.requests.push(entry);
    const reply = this.queue.shift() ?? (await this.handler(entry));
    if (reply.type === 'hang') return; // the socket stays open until the client gives up or close()
    if (reply.type === 'error') return sendError(response, api, reply);
    return api === 'gemini' ? sendGeminiAnswer(response, entry, reply) : sendOpenAiAnswer(response, entry, reply);
  }
}

function parseGemini(body: any, model: string): Pick<LlmRequest, 'model' | 'system' | 'userText' | 'image' | 'schema'> {
  const parts: any[] = body.contents?.[0]?.parts ?? [];
  const inline = parts.find((part) => part.inlineData)?.inlineData;
  return {
    model,
    system: (body.systemInstruction?.parts ?? []).map((part: any) => part.text ?? '').join(''),
    userText: parts
      .filter((part) => typeof part.text === 'string')
      .map((part) => part.text)
      .join(''),
    image: inline ? { mimeType: inline.mimeType, data: Buffer.from(inline.data, 'base64') } : null,
    schema: body.generationConfig?.responseJsonSchema ?? body.generationConfig?.responseSchema ?? null,
  };
}

function parseOpenAi(body: any): Pick<LlmRequest, 'model' | 'system' | 'userText' | 'image' | 'schema'> {
  const messages: any[] = body.messages ?? [];
  const system = messages
    .filter((message) => message.role === 'system')
    .map((message) => message.content)
    .join('');
  const user = messages.find((message) => message.role === 'user')?.content;
  const parts: any[] = typeof user === 'string' ? [{ type: 'text', text: user }] : (user ?? []);
  const url: string | undefined = parts.find((part) => part.type === 'image_url')?.image_url?.url;
  const dataUrl = url ? /^data:([^;]+);base64,(.*)$/s.exec(url) : null;
  return {
    model: body.model,
    system,
    userText: parts
      .filter((part) => part.type === 'text')
      .map((part) => part.text)
      .join(''),
    image: dataUrl ? { mimeType: dataUrl[1], data: Buffer.from(dataUrl[2], 'base64') } : null,
    schema: body.response_format?.json_schema?.schema ?? null,
  };
}

function usageOf(request: LlmRequest, reply: Extract<Reply, { type: 'answer' }>): { input: number; output: number; thoughts: number } {
  // Without scripted figures: about four characters a token, like real tokenizers on English.
  return {
    input: reply.usage?.input ?? Math.ceil((request.system.length + request.userText.length) / 4),
    output: reply.usage?.output ?? Math.ceil(reply.text.length / 4),
    thoughts: reply.usage?.thoughts ?? 0,
  };
}

function sendGeminiAnswer(response: http.ServerResponse, request: LlmRequest, reply: Extract<Reply, { type: 'answer' }>): void {
  const usage = usageOf(request, reply);
  send(
    response,
    200,
    {},
    {
      candidates: [
        {
          content: { role: 'model', parts: [{ text: reply.text }] },
          finishReason: reply.finishReason === 'length' ? 'MAX_TOKENS' : 'STOP',
          index: 0,
        },
      ],
      usageMetadata: {
        promptTokenCount: usage.input,
        candidatesTokenCount: usage.output,
        ...(usage.thoughts > 0 ? { thoughtsTokenCount: usage.thoughts } : {}),
        totalTokenCount: usage.input + usage.output + usage.thoughts,
      },
      modelVersion: request.model,
      responseId: `fake-${Math.random().toString(36).slice(2)}`,
    },
  );
}

function sendOpenAiAnswer(response: http.ServerResponse, request: LlmRequest, reply: Extract<Reply, { type: 'answer' }>): void {
  const usage = usageOf(request, reply);
  send(
    response,
    200,
    {},
    {
      id: `chatcmpl-fake${Math.random().toString(36).slice(2)}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: request.model,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: reply.text, refusal: null },
          logprobs: null,
          finish_reason: reply.finishReason ?? 'stop',
        },
      ],
      usage: {
        prompt_tokens: usage.input,
        completion_tokens: usage.output + usage.thoughts,
        total_tokens: usage.input + usage.output + usage.thoughts,
      },
    },
  );
}

const GOOGLE_STATUS: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

function sendError(response: http.ServerResponse, api: Api, reply: Extract<Reply, { type: 'error' }>): void {
  const message = reply.message ?? `fake ${reply.status}`;
  const body =
    api === 'gemini'
      ? { error: { code: reply.status, message, status: GOOGLE_STATUS[reply.status] ?? 'UNKNOWN' } }
      : { error: { message, type: reply.status === 429 ? 'rate_limit_exceeded' : 'server_error', param: null, code: null } };
  send(response, reply.status, reply.headers ?? {}, body);
}

function send(response: http.ServerResponse, status: number, headers: Record<string, string>, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json; charset=UTF-8', 'content-length': Buffer.byteLength(text), ...headers });
  response.end(text);
}
