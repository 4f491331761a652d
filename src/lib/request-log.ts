import { LogController, type FastifyBaseLogger, type FastifyReply, type FastifyRequest } from 'fastify';

type Bindings = Parameters<FastifyBaseLogger['child']>[0];
type ChildLoggerOptions = NonNullable<Parameters<FastifyBaseLogger['child']>[1]>;

/**
 * Per-request logging (docs/decisions.md §15). Fastify's default writes two
 * info lines per request ("incoming request", "request completed"); each cost
 * about as much CPU as a whole bare Fastify request, and the redaction paths
 * below run on every line (tests/bench/RESULTS.md). Request metrics
 * (docs/decisions.md §15.1) already count every request by route, method,
 * status and duration, so the access log is opt-in: LOG_REQUESTS=on writes
 * one "request completed" line per request. Errors are logged with their
 * request id either way (the error handler, stream errors).
 */
export class RequestLogController extends LogController {
  constructor(private readonly accessLog: boolean) {
    super({ disableRequestLogging: false });
  }

  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error) reply.log.error({ res: reply, err: error, responseTime: reply.elapsedTime }, 'request errored');
    else if (this.accessLog) reply.log.info({ req: request, res: reply, responseTime: reply.elapsedTime }, 'request completed');
  }
}

const METHODS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/**
 * The request's logger, made on first use. Fastify gives every request a
 * pino child bound to its request id; most requests never log, and building
 * the child (its bindings serialised up front) was a visible share of a small
 * response. This stand-in forwards to that same child, built the first time a
 * request logs.
 */
class LazyChild {
  #logger: FastifyBaseLogger | undefined;
  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}
  get real(): FastifyBaseLogger {
    return (this.#logger ??= this.parent.child(this.bindings, this.options));
  }
  get level(): string {
    return this.#logger?.level ?? this.options.level ?? this.parent.level;
  }
  set level(level: string) {
    this.real.level = level;
  }
  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.real.child(bindings, options);
  }
}
for (const m of METHODS) {
  Object.defineProperty(LazyChild.prototype, m, {
    value(this: LazyChild, ...args: unknown[]) {
      const log: (...a: unknown[]) => void = this.real[m];
      return log.apply(this.real, args);
    },
  });
}

/** Fastify's `childLoggerFactory`: a {@link LazyChild} instead of an eager pino child. */
export function lazyChildLogger(logger: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  return new LazyChild(logger, bindings, options) as unknown as FastifyBaseLogger;
}
